// One generated case: a spec, a cut of it, and its inputs. Tokens and positions are
// explicit (they shrink and read well); weights and the float inputs come from seeds.
// Printed, a case says everything needed to re-run it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

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

  std::string str() const;
};

void showValue(const Case& c, std::ostream& os);  // RapidCheck prints counterexamples with this

// The cut's inputs: tokens and positions from the case, x uniform in [-1, 1], cache rows
// up to each row's position uniform in [-1, 1], and the rows past them garbage (large
// values, infinities and NaN) from `garbage_seed`.
TensorMap case_inputs(const Case& c, uint64_t garbage_seed);
inline TensorMap case_inputs(const Case& c) { return case_inputs(c, c.data_seed ^ 0x5eed); }

// The last cache row each row of the cut reads (per row for batch, one for the others);
// rows past it are don't-care. Empty for cuts without a cache.
std::vector<int64_t> last_attended(const Case& c);

}  // namespace cutcheck
