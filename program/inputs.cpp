#include "program/inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <set>

#include "core/checked.h"
#include "core/error.h"
#include "core/half.h"
#include "core/random.h"

namespace cutcheck {

void check_inputs(const Program& program, const TensorMap& inputs) {
  std::set<std::string> declared;
  for (const InputDecl& in : program.inputs) {
    const std::string& name = program.name(in.value);
    declared.insert(name);
    auto it = inputs.find(name);
    if (it == inputs.end()) throw InputError(fmt::format("input '{}' ({}) was not given", name, program.type(in.value).str()));
    const Tensor& t = it->second;
    if (t.type() != program.type(in.value))
      throw InputError(fmt::format("input '{}' is {}, the program declares {}", name, t.type().str(),
                                   program.type(in.value).str()));
    if (!in.range) continue;
    auto values = t.as<int32_t>();
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i] < in.range->first || values[i] > in.range->second)
        throw InputError(fmt::format("input '{}' holds {} at element {}, outside its range [{}, {}]", name, values[i], i,
                                     in.range->first, in.range->second));
  }
  for (const auto& [name, t] : inputs)
    if (!declared.count(name)) throw InputError(fmt::format("input '{}' is not an input of the program", name));
}

TensorMap random_inputs(const Program& program, uint64_t seed) {
  SplitMix64 rng{seed};
  TensorMap out;
  for (const InputDecl& in : program.inputs) {
    const std::string& name = program.name(in.value);
    Tensor t(program.type(in.value));
    if (t.dtype() == DType::f32) {
      for (float& v : t.as_mut<float>()) v = rng.symmetric();
    } else if (is_half(t.dtype())) {
      auto* bits = reinterpret_cast<uint16_t*>(t.raw_mut().data());
      for (int64_t i = 0; i < t.elements(); ++i)
        bits[i] = f32_to_half(t.dtype(), rng.symmetric());
    } else {
      // The declared range, within what an i32 can hold.
      const int64_t lo = std::max<int64_t>(in.range ? in.range->first : -1000, INT32_MIN);
      const int64_t hi = std::min<int64_t>(in.range ? in.range->second : 1000, INT32_MAX);
      if (lo > hi)
        throw InputError(fmt::format("input '{}' has no valid i32 value: its range [{}, {}] is empty", name,
                                     in.range->first, in.range->second));
      const uint64_t span = checked_span(lo, hi, fmt::format("the range of input '{}'", name));
      for (int32_t& v : t.as_mut<int32_t>()) v = int32_t(lo + int64_t(rng.next() % span));
    }
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace cutcheck
