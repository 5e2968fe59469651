// How a tp split divides the model (Megatron style): chip c of tp holds query heads
// [c H/tp, (c+1) H/tp), the kv heads they read [c K/tp, (c+1) K/tp), and ffn columns
// [c F/tp, (c+1) F/tp). q, k, v, w1 and w3 are split by rows (their outputs), and the
// q, k, v biases with them; wo and w2 by columns (their inputs); norms (the per-head q
// and k norms too), the embedding and the head are replicated.
// Each chip's kv caches hold its kv heads: [C, K/tp, E] (or [R, C, K/tp, E]).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/tensor.h"
#include "model/cut.h"
#include "model/spec.h"

namespace cutcheck {

// Why the model cannot be split `tp` ways, if it cannot: tp must divide heads, kv_heads
// and ffn.
std::optional<std::string> widths_unsplittable(const ModelSpec& spec, int64_t tp);

// Decode, Batch, DecodeLayer and BatchLayer: the cut kinds a tp split exists for.
bool kind_splits(CutKind kind);
// The kinds that split, in all_cut_kinds() order.
std::vector<CutKind> splitting_kinds();

// Why `cut` cannot be split `tp` ways, if it cannot: only Decode, Batch, DecodeLayer and
// BatchLayer split, and only where tp divides heads, kv_heads and ffn.
std::optional<std::string> split_unsupported(const Cut& cut, const ModelSpec& spec, int64_t tp);

// What one chip computes: the spec with heads, kv_heads and ffn divided by tp.
ModelSpec chip_spec(const ModelSpec& spec, int64_t tp);

// True for the weights a split divides; the others are replicated.
bool is_split_weight(const std::string& name);

// Chip `chip`'s weights: its slices of the split ones, views of the replicated ones.
TensorMap shard_weights(const TensorMap& weights, const ModelSpec& spec, int64_t tp, int64_t chip);

// Chip `chip`'s slice of a cache: its kv heads, the second-to-last dimension.
Tensor shard_cache(const Tensor& cache, int64_t tp, int64_t chip);
// The chips' slices side by side again.
Tensor gather_cache(const std::vector<Tensor>& slices);

// The shard files of a weights folder: DIR/tp{tp}/chip{c}.safetensors hold the split
// weights of each chip; the replicated ones stay in DIR/model.safetensors.
std::string shard_file(int64_t tp, int64_t chip);
void write_shards(const fs::path& dir, const TensorMap& weights, const ModelSpec& spec, int64_t tp);

}  // namespace cutcheck
