#include "program/random_inputs.h"

#include <fmt/format.h>

#include "core/error.h"

namespace cutcheck {

TensorMap random_inputs(const Program& program, uint64_t seed) {
  uint64_t state = seed;
  auto next = [&] {  // splitmix64
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  TensorMap out;
  for (const InputDecl& in : program.inputs) {
    const std::string& name = program.name(in.value);
    Tensor t(program.type(in.value));
    if (t.dtype() == DType::f32) {
      for (float& v : t.as_mut<float>()) v = float(int32_t(next() >> 40) - (1 << 23)) * 0x1p-23f;
    } else {
      int64_t lo = in.range ? in.range->first : -1000, hi = in.range ? in.range->second : 1000;
      if (lo > hi)
        throw InputError(fmt::format("input '{}' has no valid value: its range [{}, {}] is empty", name, lo, hi));
      uint64_t span = uint64_t(hi - lo) + 1;
      for (int32_t& v : t.as_mut<int32_t>()) v = int32_t(lo + int64_t(next() % span));
    }
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace cutcheck
