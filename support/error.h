// Error types shared by every stage: user errors (bad input, missing GPU) and broken invariants.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace tilejit {

/// A problem with the user's input or environment; the message names the problem and is
/// printed as is (DSL diagnostics, tensor shape mismatches, unknown workload, missing GPU...).
class Error : public std::runtime_error {
public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// No usable GPU (no driver, no device): callers may degrade to what works without one.
class NoGpuError : public Error {
public:
  explicit NoGpuError(const std::string& message) : Error(message) {}
};

/// A broken invariant inside tilejit itself: a bug, never the user's fault.
class InternalError : public std::logic_error {
public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

/// Concatenates anything streamable into a string: str("tile ", name, " has rank ", r).
template <typename... Args> std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

[[noreturn]] void throw_internal(const char* file, int line, const char* cond,
                                 const std::string& message);

} // namespace tilejit

/// Internal invariant check: names the broken invariant and where it lives.
#define TJ_ICHECK(cond, ...)                                                                       \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::tilejit::throw_internal(__FILE__, __LINE__, #cond, ::tilejit::str(__VA_ARGS__));           \
  } while (0)
