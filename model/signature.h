// What a cut takes and gives, by name and type: the table of the brief in code.
// The author declares exactly these, the oracle computes exactly these, and
// conformance compares exactly these.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/cut.h"
#include "model/spec.h"

namespace cutcheck {

// The closed interval an integer input must lie in, and the rule it comes from.
struct ValueRange {
  int64_t lo = 0, hi = 0;
  std::string rule;  // "token < vocab = 512", "pos + rows <= ctx = 16"
};

struct Port {
  std::string name;  // "token", "tokens", "pos", "x", "logits", "next", "k.3", "v.3"
  TensorType type;
  std::optional<ValueRange> range;
};

struct CutSignature {
  std::vector<Port> inputs;
  std::vector<Port> outputs;

  const Port* input(const std::string& name) const;
  const Port* output(const std::string& name) const;
};

// The cut must be possible for the spec (Cut::check_possible).
CutSignature signature(const Cut& cut, const ModelSpec& spec);

// A kv cache tensor as the cuts lay it out: [C, K, E], one cache the rows share, or
// [R, C, K, E], one per row (batch). The one place that reads the layout off the rank.
struct CacheShape {
  int64_t caches = 1;  // R for [R, C, K, E], 1 for [C, K, E]
  int64_t ctx = 0;     // positions per cache
  int64_t width = 0;   // floats per position: K * E
  // Throws Error for a shape of another rank.
  static CacheShape of(const Shape& shape);
  // Where position `pos` of cache `cache` starts, in floats.
  int64_t at(int64_t cache, int64_t pos) const { return (cache * ctx + pos) * width; }
};

// Cache names of one layer.
std::string k_cache_name(int64_t layer);
std::string v_cache_name(int64_t layer);

}  // namespace cutcheck
