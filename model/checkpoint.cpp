#include "model/checkpoint.h"

#include <fmt/format.h>

#include <cstring>
#include <set>

#include "core/checked.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/half.h"
#include "model/weights.h"

namespace cutcheck {
namespace {

Tensor widen(const CheckpointTensor& t, const std::string& where) {
  const StoredTensor& s = t.stored;
  TensorType type{DType::f32, s.shape};
  if (s.dtype == "F32") {
    Tensor view = Tensor::view(type, s.bytes.data(), t.keepalive);
    return reinterpret_cast<uintptr_t>(s.bytes.data()) % 4 == 0 ? view : view.clone();  // keep loads aligned
  }
  float (*widen16)(uint16_t) = s.dtype == "BF16" ? bf16_to_f32 : s.dtype == "F16" ? f16_to_f32 : nullptr;
  if (!widen16)
    throw FormatError(fmt::format("{}: dtype {} is not supported (the importers read F32, F16 and BF16)", where, s.dtype));
  Tensor out(type);  // checks the memory limit
  auto values = out.as_mut<float>();
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, s.bytes.data() + 2 * i, 2);  // little-endian, as both formats store it
    values[i] = widen16(bits);
  }
  return out;
}

// cutcheck's weight name -> the checkpoint's.
std::map<std::string, std::string> name_map(const ModelSpec& spec, const CheckpointNames& names) {
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

}  // namespace

TensorMap take_weights(const ModelSpec& spec, const CheckpointTensors& tensors, const CheckpointNames& checkpoint_names,
                       const std::string& source) {
  // Each layer has nine tensors: this bounds the layout by the checkpoint's size, whatever
  // the metadata claims.
  if (spec.layers > int64_t(tensors.size()))
    throw FormatError(fmt::format("{}: the model has {} layers, but the checkpoint holds only {} tensors", source,
                                  spec.layers, tensors.size()));
  const std::map<std::string, std::string> names = name_map(spec, checkpoint_names);
  // What the import holds at its peak: the widened copies of 16-bit tensors, and the
  // safetensors file encoded in memory before it is written (core/safetensors.h).
  uint64_t peak = 0;
  for (const WeightInfo& w : weight_layout(spec)) {
    auto it = tensors.find(names.at(w.name));
    const uint64_t f32_bytes = checked_mul(uint64_t(element_count(w.shape)), uint64_t{4}, source);
    peak = checked_add(peak, f32_bytes, source);
    if (it != tensors.end() && it->second.stored.dtype != "F32") peak = checked_add(peak, f32_bytes, source);
  }
  check_memory(peak, fmt::format("{}: importing {} (the f32 weights and the file written from them)", source,
                                 spec.name));
  TensorMap out;
  std::set<std::string> taken;
  for (const WeightInfo& w : weight_layout(spec)) {
    const std::string& name = names.at(w.name);
    auto it = tensors.find(name);
    if (it == tensors.end())
      throw FormatError(fmt::format("{}: tensor '{}' is missing (cutcheck's {}, {} of {})", source, name, w.name,
                                    shape_str(w.shape), spec.summary()));
    const std::string where = fmt::format("{}: tensor '{}'", it->second.file, name);
    if (it->second.stored.shape != w.shape)
      throw FormatError(fmt::format("{}: shape {}, but the model's {} needs {}", where,
                                    shape_str(it->second.stored.shape), w.name, shape_str(w.shape)));
    out.emplace(w.name, widen(it->second, where));
    taken.insert(name);
  }
  for (const auto& [name, t] : tensors)
    if (!taken.contains(name))
      throw FormatError(fmt::format("{}: tensor '{}' is not a weight of {}; cutcheck would ignore what it does",
                                    t.file, name, spec.summary()));
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
