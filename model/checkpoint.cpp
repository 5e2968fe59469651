#include "model/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "core/checked.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/half.h"
#include "model/weights.h"
#include "core/quant_blocks.h"
#include "quant/block_fields.h"
#include "quant/dequantize.h"

namespace cutcheck {
namespace {

// The cutcheck dtype of a stored tensor, its own (a quantized one's blocks); FormatError for
// the ones the importers do not read.
DType stored_dtype(const StoredTensor& s, const std::string& where) {
  if (const auto format = quant_format_of_ggml_name(s.dtype)) return dtype_of(*format);
  if (s.dtype == "F32") return DType::f32;
  if (s.dtype == "BF16") return DType::bf16;
  if (s.dtype == "F16") return DType::f16;
  throw FormatError(fmt::format("{}: dtype {} is not supported (the importers read F32, F16, BF16 and, from GGUF, "
                                "Q8_0, Q4_0, Q5_0, Q4_K and Q6_K)",
                                where, s.dtype));
}

uint16_t bits16(const StoredTensor& s, size_t i) {
  uint16_t bits;
  std::memcpy(&bits, s.bytes.data() + 2 * i, 2);  // little-endian, as both formats store it
  return bits;
}

float f32_at(const StoredTensor& s, size_t i) {
  float v;
  std::memcpy(&v, s.bytes.data() + 4 * i, 4);
  return v;
}

// Every value of an F32 tensor is a value of `to` (NaNs aside), so narrowing loses nothing.
bool narrows_exactly(const StoredTensor& s, DType to) {
  const size_t n = s.bytes.size() / 4;
  for (size_t i = 0; i < n; ++i) {
    const float v = f32_at(s, i);
    if (!std::isnan(v) && half_to_f32(to, f32_to_half(to, v)) != v) return false;
  }
  return true;
}

// A quantized tensor's rows (along its last dimension) dequantized to f32, every value exact
// (quant/dequantize.h); a block with a non-finite scale is refused naming the row.
Tensor dequantized(const StoredTensor& s, QuantFormat format, const std::string& where) {
  Tensor out = Tensor::uninitialized({DType::f32, s.shape});  // checks the memory limit
  const int64_t cols = s.shape.back();
  const int64_t rows = cols > 0 ? out.elements() / cols : 0;
  const int64_t stride = row_bytes(format, cols);
  float* y = reinterpret_cast<float*>(out.raw_mut().data());
  for (int64_t r = 0; r < rows; ++r) {
    try {
      dequantize_row(format, s.bytes.data() + r * stride, cols, y + r * cols);
    } catch (const FormatError& e) {
      throw FormatError(fmt::format("{}: row {}: {}", where, r, e.what()));
    }
  }
  return out;
}

// The tensor in dtype `to`: viewed in place when it is stored so, else converted (widening
// and dequantizing are exact; narrowing happens only where narrows_exactly said so).
Tensor take(const CheckpointTensor& t, DType to, const std::string& where) {
  const StoredTensor& s = t.stored;
  if (const auto format = quant_format_of_ggml_name(s.dtype)) {
    if (to == dtype_of(*format)) {  // its blocks, in place
      Tensor view = Tensor::view({to, s.shape}, s.bytes.data(), t.keepalive);
      check_scales(view, where);  // refused at the import, not in the middle of a campaign
      return view;
    }
    if (to != DType::f32)
      throw Error(fmt::format("{}: {} to {} is not an exact conversion", where, s.dtype, dtype_name(to)));
    return dequantized(s, *format, where);
  }
  const DType from = stored_dtype(s, where);
  TensorType type{to, s.shape};
  if (from == to) {
    Tensor view = Tensor::view(type, s.bytes.data(), t.keepalive);
    return reinterpret_cast<uintptr_t>(s.bytes.data()) % dtype_size(to) == 0 ? view : view.clone();  // aligned loads
  }
  Tensor out = Tensor::uninitialized(type);  // checks the memory limit
  std::byte* y = out.raw_mut().data();
  const size_t n = size_t(out.elements());
  if (to == DType::f32) {
    for (size_t i = 0; i < n; ++i) {
      const float v = half_to_f32(from, bits16(s, i));
      std::memcpy(y + 4 * i, &v, 4);
    }
  } else if (from == DType::f32) {
    for (size_t i = 0; i < n; ++i) {
      const uint16_t bits = f32_to_half(to, f32_at(s, i));
      std::memcpy(y + 2 * i, &bits, 2);
    }
  } else {
    throw Error(fmt::format("{}: {} to {} is not an exact conversion", where, dtype_name(from), dtype_name(to)));
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> checkpoint_name_map(const ModelSpec& spec, const CheckpointNames& names) {
  std::map<std::string, std::string> out = {{weight::embedding(), names.embedding},
                                            {weight::final_norm(), names.final_norm},
                                            {weight::output(), names.output}};
  std::string (*const kinds[])(int64_t) = {weight::attention_norm, weight::wq,       weight::wk,
                                           weight::wv,             weight::wo,       weight::ffn_norm,
                                           weight::w1,             weight::w2,       weight::w3};
  std::string (*const knobs[])(int64_t) = {weight::bq, weight::bk, weight::bv, weight::q_norm, weight::k_norm};
  for (int64_t l = 0; l < spec.layers; ++l) {
    const std::string prefix = fmt::format(fmt::runtime(names.layer_prefix), l);
    for (size_t k = 0; k < names.layer.size(); ++k) out[kinds[k](l)] = prefix + names.layer[k];
    for (size_t k = 0; k < names.knob_layer.size(); ++k)
      if (!names.knob_layer[k].empty()) out[knobs[k](l)] = prefix + names.knob_layer[k];
  }
  return out;
}

TensorMap take_weights(ModelSpec& spec, const CheckpointTensors& tensors, const CheckpointNames& checkpoint_names,
                       const std::string& source, bool widen) {
  // Each layer has nine tensors: this bounds the layout by the checkpoint's size, whatever
  // the metadata claims.
  if (spec.layers > int64_t(tensors.size()))
    throw FormatError(fmt::format("{}: the model has {} layers, but the checkpoint holds only {} tensors", source,
                                  spec.layers, tensors.size()));
  const std::map<std::string, std::string> names = checkpoint_name_map(spec, checkpoint_names);
  // Every weight present, of the right shape and a dtype the importers read, before any is taken.
  std::vector<std::pair<const WeightInfo*, const CheckpointTensor*>> found;
  const std::vector<WeightInfo> layout = weight_layout(spec);
  std::set<DType> dtypes;
  for (const WeightInfo& w : layout) {
    const std::string& name = names.at(w.name);
    auto it = tensors.find(name);
    if (it == tensors.end())
      throw FormatError(fmt::format("{}: tensor '{}' is missing (cutcheck's {}, {} of {})", source, name, w.name,
                                    shape_str(w.shape), spec.summary()));
    const std::string where = fmt::format("{}: tensor '{}'", it->second.file, name);
    if (it->second.stored.shape != w.shape)
      throw FormatError(fmt::format("{}: shape {}, but the model's {} needs {}", where,
                                    shape_str(it->second.stored.shape), w.name, shape_str(w.shape)));
    dtypes.insert(stored_dtype(it->second.stored, where));
    found.push_back({&w, &it->second});
  }
  for (const auto& [name, t] : tensors)
    if (std::none_of(found.begin(), found.end(), [&](const auto& f) { return f.second == &t; }))
      throw FormatError(fmt::format("{}: tensor '{}' is not a weight of {}; cutcheck would ignore what it does",
                                    t.file, name, spec.summary()));
  // The dtypes kept. A quantized checkpoint keeps every tensor in its own type: the spec's
  // dtype is the one most matrices are stored in, and each weight stored otherwise (a
  // Q4_K_M file's Q6_K matrices, its F32 ones whose rows are not whole blocks) gets a type
  // of its own. Otherwise, the one 16-bit float type the checkpoint stores its weights in,
  // when its F32 tensors (GGUF keeps norms in F32) hold values of that type only; else f32.
  dtypes.erase(DType::f32);
  spec.store_every_weight_as(DType::f32);
  const bool quantized = std::any_of(dtypes.begin(), dtypes.end(), is_quantized);
  if (!widen && quantized) {
    std::map<DType, int64_t> matrices;
    for (const auto& [w, t] : found)
      if (w->shape.size() == 2) ++matrices[stored_dtype(t->stored, source)];
    spec.dtype = std::max_element(matrices.begin(), matrices.end(), [](const auto& a, const auto& b) {
                   return a.second < b.second;
                 })->first;
    for (const auto& [w, t] : found)
      if (const DType own = stored_dtype(t->stored, source); own != stored_type(spec, *w).dtype)
        spec.weight_dtypes.emplace(w->name, own);
  } else if (!widen && dtypes.size() == 1) {
    const DType kept = *dtypes.begin();
    const bool exact = std::all_of(found.begin(), found.end(), [&](const auto& f) {
      return f.second->stored.dtype != "F32" || narrows_exactly(f.second->stored, kept);
    });
    if (exact) spec.dtype = kept;
  }
  // What the import holds at its peak: the converted and dequantized copies; the rest stays mapped.
  uint64_t peak = 0;
  for (const auto& [w, t] : found)
    if (const DType to = stored_type(spec, *w).dtype; stored_dtype(t->stored, source) != to)
      peak = checked_add(peak, checked_mul(uint64_t(element_count(w->shape)), uint64_t(dtype_size(to)), source), source);
  check_memory(peak, fmt::format("{}: importing {} (the weights converted to {})", source, spec.name,
                                 dtype_name(spec.dtype)));
  TensorMap out;
  for (const auto& [w, t] : found)
    out.emplace(w->name, take(*t, stored_type(spec, *w).dtype, fmt::format("{}: tensor '{}'", t->file, names.at(w->name))));
  return out;
}

void write_imported(const fs::path& dir, const ModelSpec& spec, const TensorMap& weights) {
  write_weights(dir, weights, spec);
  write_file_atomic(dir / "spec.json", spec.to_json().dump(2) + "\n");
}

void impossible_model(const std::string& source, const std::string& why) {
  throw FormatError(fmt::format("{}: the checkpoint describes an impossible model: {}", source, why));
}

}  // namespace cutcheck
