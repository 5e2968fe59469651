#include "model/checkpoint_export.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "model/weights.h"
#include "quant/dequantize.h"

namespace cutcheck {

DType checkpoint_dtype(const std::string& name, const std::string& option) {
  DType out;
  if (parse_dtype(name, out) && (out == DType::f32 || is_half(out))) return out;
  throw Error(fmt::format("{} '{}': choose f32, f16 or bf16", option, name));
}

Tensor rope_rows(const Tensor& w, int64_t heads, RopeStyle from, RopeStyle to) {
  if (from == to) return w;
  const int64_t rows = w.shape().at(0), E = rows / heads;
  const size_t row_bytes = size_t(w.bytes() / uint64_t(rows));
  Tensor out = Tensor::uninitialized(w.type());
  const std::byte* in = w.raw().data();
  std::byte* o = out.raw_mut().data();
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < E / 2; ++i)
      for (int64_t s = 0; s < 2; ++s) {
        const int64_t interleaved = h * E + 2 * i + s, half = h * E + s * (E / 2) + i;
        const int64_t src = from == RopeStyle::interleaved ? interleaved : half;
        const int64_t dst = from == RopeStyle::interleaved ? half : interleaved;
        std::memcpy(o + size_t(dst) * row_bytes, in + size_t(src) * row_bytes, row_bytes);
      }
  return out;
}

int64_t rotary_heads(const ModelSpec& spec, const std::string& name) {
  for (int64_t l = 0; l < spec.layers; ++l) {
    if (name == weight::wq(l) || name == weight::bq(l)) return spec.heads;
    if (name == weight::wk(l) || name == weight::bk(l)) return spec.kv_heads;
    if (name == weight::q_norm(l) || name == weight::k_norm(l)) return 1;
  }
  return 0;
}

namespace {

float element(const Tensor& t, size_t i) {
  const std::byte* p = t.raw().data();
  if (t.dtype() == DType::f32) {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, p + 2 * i, 2);
  return half_to_f32(t.dtype(), bits);
}

}  // namespace

Tensor convert_weight(const Tensor& t, DType to, const std::string& what) {
  if (t.dtype() == to) return t;
  if (is_quantized(t.dtype()) && (to == DType::f32 || is_half(to))) {  // from its exact values
    Tensor values = Tensor::uninitialized({DType::f32, t.shape()});
    dequantize_tensor(t, values.as_mut<float>().data());
    return convert_weight(values, to, what);
  }
  if (!(t.dtype() == DType::f32 || is_half(t.dtype())) || !(to == DType::f32 || is_half(to)))
    throw Error(fmt::format("{}: cannot store {} as {}", what, dtype_name(t.dtype()), dtype_name(to)));
  Tensor out = Tensor::uninitialized({to, t.shape()});
  std::byte* y = out.raw_mut().data();
  const size_t n = size_t(t.elements());
  for (size_t i = 0; i < n; ++i) {
    const float v = element(t, i);
    if (to == DType::f32) {
      std::memcpy(y + 4 * i, &v, 4);
      continue;
    }
    const uint16_t bits = f32_to_half(to, v);
    if (std::isfinite(v) && (bits & 0x7fff) == (to == DType::bf16 ? 0x7f80 : 0x7c00))
      throw Error(fmt::format("{}: element {} is {}, beyond the largest finite {}; the file would hold another "
                              "model (export in f32 or bf16)",
                              what, i, v, dtype_name(to)));
    std::memcpy(y + 2 * i, &bits, 2);
  }
  return out;
}

Tensor exported_weight(const ModelSpec& spec, const TensorMap& weights, const std::string& name,
                       RopeStyle file_order, DType dtype, std::optional<DType> container) {
  const Tensor& w = weights.at(name);
  const int64_t heads = rotary_heads(spec, name);
  const Tensor rows = heads > 0 ? rope_rows(w, heads, spec.rope_style, file_order) : w;
  const std::string what = fmt::format("weight '{}'", name);
  const Tensor values = convert_weight(rows, dtype, what);
  return container ? convert_weight(values, *container, what) : values;
}

void inexpressible(const std::string& format, const ModelSpec& spec, const std::string& why) {
  throw Error(fmt::format("{} cannot express spec '{}': {}", format, spec.name, why));
}

}  // namespace cutcheck
