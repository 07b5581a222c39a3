// Error types shared by every stage: user errors (bad input, missing GPU) and broken invariants.
#pragma once

#include <tilejit/errors.h>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <iterator>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace tilejit {

namespace detail {

/// Appends one argument of str() as `std::ostream << value` would print it: strings and
/// integers as themselves, characters as characters, bool as 1/0, floating point as "%g"
/// (6 significant digits), anything else through its operator<< (or its fmt::formatter).
template <typename T> void append_streamed(std::string& out, const T& value) {
  auto to = std::back_inserter(out);
  if constexpr (std::is_same_v<T, bool>) {
    out += value ? '1' : '0';
  } else if constexpr (std::is_same_v<T, char> || std::is_same_v<T, signed char> ||
                       std::is_same_v<T, unsigned char>) {
    out += static_cast<char>(value);
  } else if constexpr (std::is_integral_v<T>) {
    fmt::format_to(to, "{}", value);
  } else if constexpr (std::is_floating_point_v<T>) {
    fmt::format_to(to, "{:g}", value);
  } else if constexpr (std::is_convertible_v<const T&, const char*>) {
    if (const char* text = value) out += text; // a null pointer prints nothing
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    out += std::string_view(value);
  } else if constexpr (requires(std::ostream & os, const T& v) { os << v; }) {
    fmt::format_to(to, "{}", fmt::streamed(value));
  } else {
    fmt::format_to(to, "{}", value);
  }
}

} // namespace detail

/// Concatenates anything streamable into a string: str("tile ", name, " has rank ", r).
/// Prints each argument as `std::ostream << arg` does (for formatting with a format string,
/// use fmt::format).
template <typename... Args> std::string str(const Args&... args) {
  std::string out;
  (detail::append_streamed(out, args), ...);
  return out;
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
