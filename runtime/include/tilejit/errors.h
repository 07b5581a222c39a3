// The exceptions tilejit's public API throws. Every message names the problem: the DSL line
// and column, the tensor and the shape it should have, the missing GPU, the corrupt database.
#pragma once

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

} // namespace tilejit
