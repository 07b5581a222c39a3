#include "workloads/host_parallel.h"

#include <cmath>

#include "compiler/ref/float_formats.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

namespace tilejit::workloads {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

double random_unit(uint64_t seed, int64_t i) {
  return static_cast<double>(splitmix(seed ^ (uint64_t(i) * 0x2545f4914f6cdd1dull)) >> 11) *
         (1.0 / 9007199254740992.0);
}

void parallel_ranges(int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  const int64_t threads =
      std::max<int64_t>(1, std::min<int64_t>({16, std::thread::hardware_concurrency(), n}));
  if (threads <= 1) {
    body(0, n);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { body(n * t / threads, n * (t + 1) / threads); });
  for (auto& th : pool) th.join();
}

void fill_uniform(ref::HostBuffer& b, uint64_t seed, double lo, double hi) {
  const DType t = b.dtype();
  if (t == DType::F16 || t == DType::BF16) {
    // 16-bit floats directly as bits: set() per element is the slow path for gigabytes.
    auto* bits = static_cast<uint16_t*>(b.data());
    parallel_ranges(b.numel(), [&](int64_t a, int64_t e) {
      for (int64_t i = a; i < e; ++i) {
        const double v = lo + (hi - lo) * random_unit(seed, i);
        bits[i] = t == DType::BF16 ? ref::f64_to_bf16_bits(v) : ref::f64_to_f16_bits(v);
      }
    });
    return;
  }
  parallel_ranges(b.numel(), [&](int64_t a, int64_t e) {
    for (int64_t i = a; i < e; ++i) b.set(i, lo + (hi - lo) * random_unit(seed, i));
  });
}

void fill_random_bytes(ref::HostBuffer& b, uint64_t seed) {
  auto* bytes = static_cast<unsigned char*>(b.data());
  const int64_t n = b.numel() * static_cast<int64_t>(dtype_size(b.dtype()));
  parallel_ranges((n + 7) / 8, [&](int64_t a, int64_t e) {
    for (int64_t i = a; i < e; ++i) {
      const uint64_t v = splitmix(seed ^ (uint64_t(i) * 0x9e3779b97f4a7c15ull));
      const int64_t at = i * 8, len = std::min<int64_t>(8, n - at);
      std::memcpy(bytes + at, &v, static_cast<size_t>(len));
    }
  });
}

double RelativeL2::value() const {
  return ref > 0 ? std::sqrt(diff / ref) : std::sqrt(diff);
}

} // namespace tilejit::workloads
