#include "runtime/launch_signature.h"

#include <cstring>

namespace tilejit {

namespace {

/// 64-bit FNV-1a over the words, then a final mix: cheap, and good enough for a hash table
/// whose equality compares the whole signature.
size_t hash_words(const std::vector<int64_t>& words, const std::string& forced) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  for (int64_t w : words) mix(static_cast<uint64_t>(w));
  for (char c : forced) mix(static_cast<unsigned char>(c));
  h ^= h >> 33;
  return static_cast<size_t>(h);
}

} // namespace

void make_launch_signature(LaunchSignature& out, int kernel_id, void* stream, const Config& forced,
                           const std::vector<Arg>& args, const std::vector<bool>& scalar_in_plan,
                           const Config& fallback) {
  std::vector<int64_t>& w = out.words;
  w.clear();
  w.push_back(kernel_id);
  w.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(stream)));
  w.push_back(static_cast<int64_t>(args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    if (a.is_tensor) {
      const Tensor& t = a.tensor;
      const bool aligned16 = reinterpret_cast<uintptr_t>(t.data) % 16 == 0;
      // kind 1 = tensor; flags: 16-byte aligned base, has data, on the CPU.
      w.push_back(1);
      w.push_back(static_cast<int64_t>(t.dtype) | (aligned16 ? 1 << 8 : 0) | (t.data ? 1 << 9 : 0) |
                  (t.device == DeviceKind::CPU ? 1 << 10 : 0) |
                  (static_cast<int64_t>(t.device_index) << 16));
      w.push_back(static_cast<int64_t>(t.shape.size()) |
                  (static_cast<int64_t>(t.strides.size()) << 16));
      w.insert(w.end(), t.shape.begin(), t.shape.end());
      w.insert(w.end(), t.strides.begin(), t.strides.end());
    } else {
      w.push_back(2);
      w.push_back(static_cast<int64_t>(a.scalar_dtype));
      int64_t value = 0;
      if (i < scalar_in_plan.size() && scalar_in_plan[i]) {
        if (dtype_is_float(a.scalar_dtype))
          std::memcpy(&value, &a.f, sizeof value);
        else
          value = a.i;
      }
      w.push_back(value);
    }
  }
  out.forced.clear();
  for (const auto& [name, value] : forced) {
    out.forced += name;
    out.forced += '=';
    out.forced += value;
    out.forced += ';';
  }
  // The fallback can change the configuration (of an untuned shape): part of the signature.
  if (!fallback.empty()) out.forced += '|';
  for (const auto& [name, value] : fallback) {
    out.forced += name;
    out.forced += '=';
    out.forced += value;
    out.forced += ';';
  }
  out.hash = hash_words(w, out.forced);
}

} // namespace tilejit
