// The model's pieces as program ops: embedding, rotary tables, one decoder layer and
// the head. Every cut is composed from these, so each piece is written exactly once.
// Activations are always rows: x is f32[R, D] (R = 1 for decode and forward cuts).
#pragma once

#include "author/builder.h"
#include "model/cut.h"
#include "model/spec.h"

namespace cutcheck {

// How a layer's rows reach their keys and values.
enum class CacheLayout {
  own,      // forward: a row attends only to itself, no cache
  shared,   // decode and prefill: the rows share one [C, K, E] cache per layer
  per_row,  // batch: row r has its own [C, K, E] cache, stacked as [R, C, K, E]
};

struct RopeTables {
  ValueId cos, sin;  // f32[R, E/2]
};

// What every layer of a cut shares: where its rows sit.
struct Rows {
  CacheLayout layout;
  ValueId positions;  // i32[R], each row's position
  ValueId first;      // i32[], row 0's position (where a shared cache receives the new rows)
  RopeTables rope;
};

struct Cache {
  ValueId k = -1, v = -1;
};

struct LayerOut {
  ValueId x;
  Cache cache;  // the updated cache (unset for CacheLayout::own)
};

struct HeadOut {
  ValueId logits;  // f32[R, V]
  ValueId next;    // i32[R]
};

// The part of the model one chip holds: all of it, or its slice of a tp split.
struct Shard {
  int64_t heads, kv_heads, ffn;  // local widths
  int64_t tp = 1;                // chips in the split
  bool split = false;            // a chip of a split: an all_reduce after each row-split projection
};

class ModelWriter {
 public:
  ModelWriter(Builder& b, const ModelSpec& spec);
  ModelWriter(Builder& b, const ModelSpec& spec, Shard shard);

  ValueId embed(ValueId tokens);                           // i32[R] -> f32[R, D]
  Rows rows(CacheLayout layout, ValueId positions, ValueId first);
  LayerOut layer(int64_t l, const Rows& rows, ValueId x, Cache cache);
  HeadOut head(ValueId x);                                 // f32[R, D] -> logits, next

 private:
  // The weight as the checkpoint stores it (the spec's dtype), and that weight in f32:
  // bf16 and f16 weights are widened where they are used, once per program.
  ValueId stored_weight(const std::string& name, Shape shape);
  ValueId weight(const std::string& name, Shape shape);
  ValueId scale_frequencies(ValueId freq);  // rope_scaling applied to f32[E/2]
  // Over the last dimension of x, with a weight as wide as it.
  ValueId rms_norm(ValueId x, const std::string& weight, const std::string& name);
  ValueId rotate(ValueId x, const RopeTables& rope, const std::string& name);  // f32[R, N, E]
  ValueId attention(int64_t l, const Rows& rows, ValueId xn, Cache& cache);
  ValueId mlp(int64_t l, ValueId xn);
  ValueId sum_over_chips(ValueId partial, const std::string& name);

  Builder& b_;
  const ModelSpec& spec_;
  Shard shard_;
};

}  // namespace cutcheck
