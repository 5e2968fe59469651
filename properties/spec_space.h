// The random specs a campaign draws, and the constraints a backend team puts on them
// (`--fix rope_style=interleaved`, `--fix head_dim=dim/heads`), so that a backend that
// supports one family gets random coverage inside it. Fixed fields stay fixed while a
// failure shrinks; every other field shrinks toward the small side, heads and kv_heads
// included.
#pragma once

#include <rapidcheck.h>

#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "model/spec.h"

namespace cutcheck {

struct SpecSpace {
  int64_t min_dim = 1;     // campaigns start at 4: smaller models are degenerate
  double large_share = 0;  // chance of a wide spec: head_dim to 128, up to 8 query heads per kv head
  int64_t tp = 1;          // kv_heads, heads and ffn are multiples of it
  Json fixed = Json::object();     // field -> value, as in spec.json
  bool head_dim_from_dim = false;  // head_dim = dim / heads

  // "FIELD=VALUE" (VALUE as in spec.json, strings unquoted) or "head_dim=dim/heads".
  // Throws Error naming the field when it is unknown, mistyped, or contradicts the fields
  // fixed before it.
  void fix(const std::string& assignment);
  // Whether a spec with the fixed fields splits over `tp` chips.
  bool splits(int64_t tp) const;
  // The (kv_heads, heads / kv_heads) pairs a spec may have, fewest heads first.
  std::vector<std::pair<int64_t, int64_t>> head_choices(int64_t tp, bool large) const;
};

rc::Gen<ModelSpec> gen_spec(const SpecSpace& space);

}  // namespace cutcheck
