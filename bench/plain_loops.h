// The decode step written as llama2.c writes it: plain loops over f32 arrays, f32
// accumulation, one function per step of the model. Only for comparison in the
// benchmarks; it reads the same weights (by cutcheck's names) as the reference.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "model/spec.h"

namespace cutcheck::bench {

class PlainDecoder {
 public:
  PlainDecoder(const ModelSpec& spec, const TensorMap& weights, int64_t ctx);
  // The logits of `token` at `pos`, writing this step's k, v into the cache.
  const std::vector<float>& forward(int32_t token, int64_t pos);

 private:
  const float* w(const std::string& name) const { return weights_.at(name).as<float>().data(); }

  ModelSpec spec_;
  const TensorMap& weights_;
  int64_t ctx_;
  std::vector<float> x_, xb_, xb2_, hb_, hb2_, q_, att_, logits_;
  std::vector<float> key_cache_, value_cache_;  // [layers, ctx, kv_width]
};

}  // namespace cutcheck::bench
