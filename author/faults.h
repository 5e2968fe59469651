// Deliberate bugs the author can write into a program, each the way real backends get
// a cut wrong. They exist to prove that properties and conformance catch such bugs;
// Fault::none is the model as specified. Each fault acts in exactly one place in
// blocks.cpp, marked with its name.
#pragma once

#include <string>
#include <vector>

namespace cutcheck {

enum class Fault {
  none,
  rope_position_off_by_one,  // rotates by pos + 1
  rope_style_swapped,        // interleaved pairs where the spec says half, and the reverse
  causal_mask_off_by_one,    // attends to one position past its own
  kv_write_wrong_row,        // writes the new k, v at pos + 1
  gqa_mapping_wrong,         // query head h reads kv head h % kv_heads instead of h / group
  softmax_without_max,       // exp(s) without subtracting the row maximum (overflows on large scores)
  norm_eps_wrong,            // 1e-6 where the spec says otherwise (1e-5 where it says 1e-6)
  swiglu_gate_up_swapped,    // silu(w3 x) * w1 x
  prefill_head_first_row,    // the prefill head reads the first row instead of the last
  batch_rows_mixed,          // batch row r attends over the cache of row r + 1
  all_reduce_dropped,        // a tp split skips the all_reduce after the attention output
  softmax_tail_tile,         // attention ignores cache rows from 16 on (a flash kernel's dropped tail tile)
  rows_past_eight,           // rows from the ninth on embed the tokens of the first block of 8 again
};

struct FaultInfo {
  Fault fault;
  std::string name;
  std::string description;
};

const std::vector<FaultInfo>& author_faults();  // all but none
// Throws Error listing the known names.
Fault find_fault(const std::string& name);
std::string fault_name(Fault fault);

}  // namespace cutcheck
