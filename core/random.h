// The generator behind every seed in cutcheck (weights, inputs, cases): splitmix64,
// tiny, fast, and the same on every platform. And FNV-1a, for hashing names and texts.
#pragma once

#include <cstdint>
#include <string_view>

namespace cutcheck {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1), exactly representable in f32 (the top 24 bits).
  float symmetric() { return float(int32_t(next() >> 40) - (1 << 23)) * 0x1p-23f; }
  // Approximately standard normal: four uniforms summed, centred and scaled (Irwin-Hall),
  // so bounded at 2 sqrt(3); cheap, and the same on every platform.
  double normal() {
    const uint64_t a = next(), b = next();
    const double sum = double(a & 0xffffffff) + double(a >> 32) + double(b & 0xffffffff) + double(b >> 32);
    return (sum * 0x1p-32 - 2) * 1.7320508075688772;
  }
};

// A seed for item `index` of the stream `seed`.
inline uint64_t mix64(uint64_t seed, uint64_t index) { return SplitMix64{seed + 0x9e3779b97f4a7c15ULL * index}.next(); }

inline uint64_t fnv1a(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace cutcheck
