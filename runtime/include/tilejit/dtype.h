// Element types shared by the DSL, the compiler, the runtime and the public API.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tilejit {

enum class DType : uint8_t { Bool, I8, U8, I16, I32, U32, I64, F16, BF16, F32, F64 };

/// DSL spelling: "f16", "bf16", "i32", ...
inline const char* dtype_name(DType t) {
  switch (t) {
  case DType::Bool:
    return "bool";
  case DType::I8:
    return "i8";
  case DType::U8:
    return "u8";
  case DType::I16:
    return "i16";
  case DType::I32:
    return "i32";
  case DType::U32:
    return "u32";
  case DType::I64:
    return "i64";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  }
  return "?";
}

/// Size of one element in bytes (bool is stored as one byte).
inline int dtype_size(DType t) {
  switch (t) {
  case DType::Bool:
  case DType::I8:
  case DType::U8:
    return 1;
  case DType::I16:
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I32:
  case DType::U32:
  case DType::F32:
    return 4;
  case DType::I64:
  case DType::F64:
    return 8;
  }
  return 0;
}

inline bool dtype_is_float(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64;
}
inline bool dtype_is_int(DType t) {
  return !dtype_is_float(t) && t != DType::Bool;
}
inline bool dtype_is_signed(DType t) {
  return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64 ||
         dtype_is_float(t);
}

inline std::optional<DType> parse_dtype(std::string_view s) {
  for (DType t : {DType::Bool, DType::I8, DType::U8, DType::I16, DType::I32, DType::U32, DType::I64,
                  DType::F16, DType::BF16, DType::F32, DType::F64})
    if (s == dtype_name(t)) return t;
  return std::nullopt;
}

} // namespace tilejit
