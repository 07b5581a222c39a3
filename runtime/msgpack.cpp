#include "runtime/msgpack.h"

#include <cstring>

namespace tilejit::msgpack {

namespace {

constexpr int kMaxDepth = 32; // the metadata nests four deep; more is not a code object
constexpr uint64_t kMaxItems = 1u << 20;

struct Decoder {
  std::string_view in;
  size_t pos = 0;

  bool take(size_t n, std::string_view& out) {
    if (in.size() - pos < n) return false;
    out = in.substr(pos, n);
    pos += n;
    return true;
  }
  /// An unsigned big-endian number of `size` bytes (1, 2, 4 or 8).
  bool uint_be(size_t size, uint64_t& out) {
    std::string_view b;
    if (!take(size, b)) return false;
    out = 0;
    for (char c : b) out = (out << 8) | static_cast<unsigned char>(c);
    return true;
  }

  bool str(uint64_t n, Value& v, Value::Kind kind) {
    v.kind = kind;
    return take(static_cast<size_t>(n), v.text);
  }
  bool array(uint64_t n, Value& v, int depth) {
    if (n > kMaxItems || n > in.size() - pos) return false; // each item takes a byte at least
    v.kind = Value::Kind::array;
    v.items.resize(static_cast<size_t>(n));
    for (Value& item : v.items)
      if (!value(item, depth + 1)) return false;
    return true;
  }
  bool map(uint64_t n, Value& v, int depth) {
    if (n > kMaxItems || n > (in.size() - pos) / 2) return false;
    v.kind = Value::Kind::map;
    v.keys.resize(static_cast<size_t>(n));
    v.values.resize(static_cast<size_t>(n));
    for (size_t i = 0; i < v.keys.size(); ++i)
      if (!value(v.keys[i], depth + 1) || !value(v.values[i], depth + 1)) return false;
    return true;
  }

  bool value(Value& v, int depth) {
    if (depth > kMaxDepth || pos >= in.size()) return false;
    const unsigned char t = static_cast<unsigned char>(in[pos++]);
    uint64_t n = 0;
    if (t <= 0x7f) {
      v.kind = Value::Kind::integer;
      v.integer = t;
      return true;
    }
    if (t >= 0xe0) {
      v.kind = Value::Kind::integer;
      v.integer = static_cast<int8_t>(t);
      return true;
    }
    if (t >= 0x80 && t <= 0x8f) return map(t & 0x0f, v, depth);
    if (t >= 0x90 && t <= 0x9f) return array(t & 0x0f, v, depth);
    if (t >= 0xa0 && t <= 0xbf) return str(t & 0x1f, v, Value::Kind::string);
    // The sized forms: tag - base selects 1, 2, 4 or 8 bytes of length or value.
    auto sized = [&](unsigned char base, int first_log2) {
      return uint_be(size_t{1} << (t - base + first_log2), n);
    };
    switch (t) {
    case 0xc0:
      v.kind = Value::Kind::nil;
      return true;
    case 0xc2:
    case 0xc3:
      v.kind = Value::Kind::boolean;
      v.boolean = t == 0xc3;
      return true;
    case 0xc4: // bin 8, 16, 32
    case 0xc5:
    case 0xc6:
      return sized(0xc4, 0) && str(n, v, Value::Kind::binary);
    case 0xd9: // str 8, 16, 32
    case 0xda:
    case 0xdb:
      return sized(0xd9, 0) && str(n, v, Value::Kind::string);
    case 0xdc: // array 16, 32
    case 0xdd:
      return sized(0xdc, 1) && array(n, v, depth);
    case 0xde: // map 16, 32
    case 0xdf:
      return sized(0xde, 1) && map(n, v, depth);
    case 0xca: // float 32, 64
    case 0xcb: {
      if (!sized(0xca, 2)) return false;
      v.kind = Value::Kind::floating;
      if (t == 0xca) {
        const uint32_t bits = static_cast<uint32_t>(n);
        float f;
        std::memcpy(&f, &bits, 4);
        v.floating = f;
      } else {
        std::memcpy(&v.floating, &n, 8);
      }
      return true;
    }
    case 0xcc: // uint 8, 16, 32, 64
    case 0xcd:
    case 0xce:
    case 0xcf:
      if (!sized(0xcc, 0) || n > static_cast<uint64_t>(INT64_MAX)) return false;
      v.kind = Value::Kind::integer;
      v.integer = static_cast<int64_t>(n);
      return true;
    case 0xd0: // int 8, 16, 32, 64: sign-extended from their width
    case 0xd1:
    case 0xd2:
    case 0xd3: {
      if (!sized(0xd0, 0)) return false;
      const int bits = 8 << (t - 0xd0);
      v.kind = Value::Kind::integer;
      v.integer = bits == 64 ? static_cast<int64_t>(n)
                             : static_cast<int64_t>(n << (64 - bits)) >> (64 - bits);
      return true;
    }
    default: // ext types and the unused 0xc1: not in code object metadata
      return false;
    }
  }
};

} // namespace

const Value* Value::find(std::string_view key) const {
  if (kind != Kind::map) return nullptr;
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i].kind == Kind::string && keys[i].text == key) return &values[i];
  return nullptr;
}

int64_t Value::int_at(std::string_view key, int64_t fallback) const {
  const Value* v = find(key);
  return v && v->kind == Kind::integer ? v->integer : fallback;
}

std::optional<Value> decode(std::string_view bytes) {
  Decoder d{bytes};
  Value v;
  if (!d.value(v, 0)) return std::nullopt;
  return v;
}

} // namespace tilejit::msgpack
