#include "model/sharding.h"

#include <fmt/format.h>

#include <cstring>
#include <set>

#include "core/error.h"
#include "core/safetensors.h"
#include "model/weights.h"

namespace cutcheck {

std::optional<std::string> widths_unsplittable(const ModelSpec& spec, int64_t tp) {
  if (tp < 1) return fmt::format("tp must be at least 1, got {}", tp);
  for (auto [field, width] : {std::pair{"heads", spec.heads}, {"kv_heads", spec.kv_heads}, {"ffn", spec.ffn}})
    if (width % tp != 0) return fmt::format("tp = {} does not divide {} = {}", tp, field, width);
  // wo and w2 split along their rows: each chip's part of a row must be whole blocks, in
  // the spec's dtype and in any type of their own.
  struct SplitRows {
    const char* field;
    int64_t width;
    const char* suffix;
  };
  for (const auto& [field, width, suffix] : {SplitRows{"heads x head_dim", spec.q_width(), ".attention.wo"},
                                             SplitRows{"ffn", spec.ffn, ".feed_forward.w2"}}) {
    std::set<DType> types;
    int64_t own = 0;
    for (const auto& [name, type] : spec.weight_dtypes)
      if (name.ends_with(suffix)) types.insert(type), ++own;
    if (own < spec.layers) types.insert(spec.dtype);  // some layer's takes the spec's
    for (DType type : types) {
      const auto format = quant_format(type);
      if (!format || *format == QuantFormat::i8_row) continue;
      const int64_t block = block_layout(*format, width / tp).values;
      if ((width / tp) % block != 0)
        return fmt::format("tp = {} splits {} = {} into parts of {} values, not whole {}-value {} blocks", tp, field,
                           width, width / tp, block, dtype_name(type));
    }
  }
  return std::nullopt;
}

bool kind_splits(CutKind k) {
  return k == CutKind::decode || k == CutKind::batch || k == CutKind::decode_layer || k == CutKind::batch_layer;
}

std::vector<CutKind> splitting_kinds() {
  std::vector<CutKind> out;
  for (CutKind k : all_cut_kinds())
    if (kind_splits(k)) out.push_back(k);
  return out;
}

std::optional<std::string> split_unsupported(const Cut& cut, const ModelSpec& spec, int64_t tp) {
  if (!kind_splits(cut.kind)) {
    std::vector<std::string> names;
    for (CutKind k : splitting_kinds()) names.push_back(cut_kind_name(k));
    const std::string last = names.back();
    names.pop_back();
    return fmt::format("{} cannot be split yet: only {} and {} split", cut.str(), fmt::join(names, ", "), last);
  }
  if (auto why = widths_unsplittable(spec, tp)) return fmt::format("{} cannot be split {} ways: {}", cut.str(), tp, *why);
  return std::nullopt;
}

ModelSpec chip_spec(const ModelSpec& spec, int64_t tp) {
  ModelSpec s = spec;
  s.heads /= tp;
  s.kv_heads /= tp;
  s.ffn /= tp;
  return s;
}

bool is_split_weight(const std::string& name) {
  for (const char* suffix : {".wq", ".wk", ".wv", ".wo", ".w1", ".w2", ".w3", ".bq", ".bk", ".bv"})
    if (name.ends_with(suffix)) return true;
  return false;
}

namespace {

// Rows [first, first + count) of a 2-D tensor (a quantized row is its blocks), or
// elements of a 1-D one.
Tensor take_rows(const Tensor& t, int64_t first, int64_t count) {
  const size_t row = t.shape()[0] == 0 ? 0 : size_t(t.bytes() / uint64_t(t.shape()[0]));
  Shape shape = t.shape();
  shape[0] = count;
  Tensor out({t.dtype(), shape});
  std::memcpy(out.raw_mut().data(), t.raw().data() + size_t(first) * row, size_t(count) * row);
  return out;
}

// Columns [first, first + count) of a 2-D tensor. Of a quantized one, whole blocks
// (widths_unsplittable says when they are not); an i8_row row keeps its scale.
Tensor take_columns(const Tensor& t, int64_t first, int64_t count) {
  const int64_t rows = t.shape()[0], cols = t.shape()[1];
  Tensor out({t.dtype(), {rows, count}});
  size_t at = 0, width = 0, head = 0;  // bytes: where the columns start in a row, how many, a row's own header
  if (const auto format = quant_format(t.dtype())) {
    if (*format == QuantFormat::i8_row) {
      head = 4;  // the row's f32 scale
      at = head + size_t(first), width = size_t(count);
    } else {
      const BlockLayout block = block_layout(*format, cols);
      at = size_t(first / block.values * block.bytes), width = size_t(count / block.values * block.bytes);
    }
  } else {
    const size_t w = dtype_size(t.dtype());
    at = size_t(first) * w, width = size_t(count) * w;
  }
  const size_t in_row = rows == 0 ? 0 : size_t(t.bytes() / uint64_t(rows)), out_row = head + width;
  for (int64_t r = 0; r < rows; ++r) {
    std::byte* to = out.raw_mut().data() + size_t(r) * out_row;
    const std::byte* from = t.raw().data() + size_t(r) * in_row;
    std::memcpy(to, from, head);
    std::memcpy(to + head, from + at, width);
  }
  return out;
}

}  // namespace

TensorMap shard_weights(const TensorMap& weights, const ModelSpec& spec, int64_t tp, int64_t chip) {
  const int64_t E = spec.head_dim;
  const int64_t q = spec.heads / tp * E, kv = spec.kv_heads / tp * E, f = spec.ffn / tp;
  TensorMap out;
  for (const auto& [name, t] : weights) {
    if (name.ends_with(".wq") || name.ends_with(".bq")) out.emplace(name, take_rows(t, chip * q, q));
    else if (name.ends_with(".wk") || name.ends_with(".wv") || name.ends_with(".bk") || name.ends_with(".bv"))
      out.emplace(name, take_rows(t, chip * kv, kv));
    else if (name.ends_with(".wo")) out.emplace(name, take_columns(t, chip * q, q));
    else if (name.ends_with(".w1") || name.ends_with(".w3")) out.emplace(name, take_rows(t, chip * f, f));
    else if (name.ends_with(".w2")) out.emplace(name, take_columns(t, chip * f, f));
    else out.emplace(name, t);
  }
  return out;
}

Tensor shard_cache(const Tensor& cache, int64_t tp, int64_t chip) {
  Shape shape = cache.shape();
  const size_t heads_dim = shape.size() - 2;
  const int64_t width = shape[heads_dim] / tp, E = shape.back();
  const int64_t outer = cache.elements() / (shape[heads_dim] * E);
  shape[heads_dim] = width;
  Tensor out({cache.dtype(), shape});
  const size_t run = size_t(width * E) * 4;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out.raw_mut().data() + size_t(o) * run,
                cache.raw().data() + size_t(o * tp + chip) * run, run);
  return out;
}

Tensor gather_cache(const std::vector<Tensor>& slices) {
  Shape shape = slices.at(0).shape();
  const size_t heads_dim = shape.size() - 2;
  const int64_t tp = int64_t(slices.size());
  const size_t run = size_t(shape[heads_dim] * shape.back()) * 4;
  const int64_t outer = slices[0].elements() / (shape[heads_dim] * shape.back());
  shape[heads_dim] *= tp;
  Tensor out({DType::f32, shape});
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < tp; ++c)
      std::memcpy(out.raw_mut().data() + size_t(o * tp + c) * run, slices[size_t(c)].raw().data() + size_t(o) * run, run);
  return out;
}

std::string shard_file(int64_t tp, int64_t chip) { return fmt::format("tp{}/chip{}.safetensors", tp, chip); }

void write_shards(const fs::path& dir, const TensorMap& weights, const ModelSpec& spec, int64_t tp) {
  if (auto why = widths_unsplittable(spec, tp)) throw NotYet(fmt::format("cannot shard {} {} ways: {}", spec.name, tp, *why));
  for (int64_t c = 0; c < tp; ++c) {
    TensorMap shard;
    for (auto& [name, t] : shard_weights(weights, spec, tp, c))
      if (is_split_weight(name)) shard.emplace(name, std::move(t));
    write_safetensors(dir / shard_file(tp, c), shard, {{"format", "cutcheck-shard"}, {"tp", std::to_string(tp)},
                                                       {"chip", std::to_string(c)}});
  }
}

}  // namespace cutcheck
