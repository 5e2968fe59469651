// One generated case: a spec, a cut of it, and its inputs. Tokens and positions are
// explicit (they shrink and read well); weights and the float inputs come from seeds.
// Printed, a case says everything needed to re-run it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/tensor.h"
#include "model/cut.h"
#include "model/spec.h"

namespace cutcheck {

struct Case {
  ModelSpec spec;
  Cut cut;
  std::vector<int32_t> tokens;     // one per row, for cuts that take tokens
  std::vector<int32_t> positions;  // decode and prefill: one (row 0's); batch: one per row
  uint64_t weight_seed = 0;
  uint64_t data_seed = 0;  // x, the attended cache rows, and the garbage beyond them
  int64_t tp = 1;          // chips, for the split properties
  float k_scale = 1;       // the attended k rows are scaled by this: large keys give large scores

  std::string str() const;
  Json to_json() const;
  static Case from_json(const Json& json, const std::string& source);
};

void showValue(const Case& c, std::ostream& os);  // RapidCheck prints counterexamples with this

// The cut's inputs: tokens and positions from the case, x uniform in [-1, 1], cache rows
// up to each row's position uniform in [-1, 1] (k rows times k_scale), and the rows past
// them (and before every sliding window) garbage (large values, infinities and NaN) from `garbage_seed`.
TensorMap case_inputs(const Case& c, uint64_t garbage_seed);
inline TensorMap case_inputs(const Case& c) { return case_inputs(c, c.data_seed ^ 0x5eed); }

// Outputs with the cache rows past what each row reads set to 0. Those rows are
// don't-care on the way out as on the way in (a later step writes them before reading
// them), so comparisons leave them out.
TensorMap blank_unattended(TensorMap outputs, const Case& c);

// The last cache row each row of the cut reads (per row for batch, one for the others);
// rows past it are don't-care. Empty for cuts without a cache.
std::vector<int64_t> last_attended(const Case& c);
// The first: 0, or with a sliding window W the first row's position - (W - 1); rows
// before it lie outside every window and are don't-care too.
std::vector<int64_t> first_attended(const Case& c);

}  // namespace cutcheck
