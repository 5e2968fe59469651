#include "model/signature.h"

#include <fmt/format.h>

#include "core/error.h"
#include "model/footprint.h"

namespace cutcheck {

std::string k_cache_name(int64_t layer) { return fmt::format("k.{}", layer); }
std::string v_cache_name(int64_t layer) { return fmt::format("v.{}", layer); }

const Port* CutSignature::input(const std::string& name) const {
  for (const Port& p : inputs)
    if (p.name == name) return &p;
  return nullptr;
}

const Port* CutSignature::output(const std::string& name) const {
  for (const Port& p : outputs)
    if (p.name == name) return &p;
  return nullptr;
}

CutSignature signature(const Cut& cut, const ModelSpec& spec) {
  cut.check_possible(spec);
  check_run_fits(spec, cut, fmt::format("spec '{}'", spec.name));
  const int64_t V = spec.vocab, D = spec.dim, K = spec.kv_heads, E = spec.head_dim;
  const int64_t R = cut.rows, C = cut.ctx;
  const Family family = cut.family();
  const Part part = cut.part();
  const bool rows = family == Family::batch || family == Family::prefill;

  auto f32 = [](Shape s) { return TensorType{DType::f32, std::move(s)}; };
  auto i32 = [](Shape s) { return TensorType{DType::i32, std::move(s)}; };
  ValueRange token_range{0, V - 1, fmt::format("token < vocab = {}", V)};
  CutSignature sig;
  auto in = [&](std::string name, TensorType type, std::optional<ValueRange> range = std::nullopt) {
    sig.inputs.push_back({std::move(name), std::move(type), std::move(range)});
  };
  auto out = [&](std::string name, TensorType type) { sig.outputs.push_back({std::move(name), std::move(type), {}}); };

  // Activations in: a token (or R of them) for embed and whole cuts, x otherwise.
  Shape x_shape = rows ? Shape{R, D} : Shape{D};
  if (part == Part::whole || part == Part::embed) {
    if (rows) in("tokens", i32({R}), token_range);
    else in("token", i32({}), token_range);
  } else {
    in("x", f32(x_shape));
  }

  // Positions and caches: whole and layer cuts of the decode, batch and prefill families.
  const bool cached = family != Family::forward && (part == Part::whole || part == Part::layer);
  if (cached) {
    if (family == Family::decode) in("pos", i32({}), ValueRange{0, C - 1, fmt::format("pos < ctx = {}", C)});
    if (family == Family::batch) in("pos", i32({R}), ValueRange{0, C - 1, fmt::format("pos < ctx = {}", C)});
    if (family == Family::prefill)
      in("pos", i32({}), ValueRange{0, C - R, fmt::format("pos + rows <= ctx = {} with rows = {}", C, R)});
    Shape cache = family == Family::batch ? Shape{R, C, K, E} : Shape{C, K, E};
    int64_t first = part == Part::layer ? cut.layer : 0;
    int64_t last = part == Part::layer ? cut.layer + 1 : spec.layers;
    for (int64_t l = first; l < last; ++l) {
      in(k_cache_name(l), f32(cache));
      in(v_cache_name(l), f32(cache));
    }
  }

  // Outputs: logits and next for whole and head cuts (one row unless batch), x otherwise.
  if (part == Part::whole || part == Part::head) {
    if (family == Family::batch) {
      out("logits", f32({R, V}));
      out("next", i32({R}));
    } else {
      out("logits", f32({V}));
      out("next", i32({}));
    }
  } else {
    out("x", f32(x_shape));
  }
  if (cached) {
    // The updated caches come out in the order they went in, after the activation and pos inputs.
    for (size_t i = 2; i < sig.inputs.size(); ++i) out(sig.inputs[i].name, sig.inputs[i].type);
  }
  return sig;
}

CacheShape CacheShape::of(const Shape& shape) {
  if (shape.size() != 3 && shape.size() != 4)
    throw Error(fmt::format("a kv cache is [C, K, E] or [R, C, K, E], not {}", shape_str(shape)));
  const bool per_row = shape.size() == 4;
  return {per_row ? shape[0] : 1, per_row ? shape[1] : shape[0], shape[shape.size() - 2] * shape.back()};
}

}  // namespace cutcheck
