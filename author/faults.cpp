#include "author/faults.h"

#include <fmt/format.h>

#include "core/named.h"

namespace cutcheck {

const std::vector<FaultInfo>& author_faults() {
  static const std::vector<FaultInfo> table = {
      {Fault::rope_position_off_by_one, "rope-position-off-by-one", "rotary embedding uses pos + 1"},
      {Fault::rope_style_swapped, "rope-style-swapped", "rotary pairs of the other style (interleaved <-> half)"},
      {Fault::causal_mask_off_by_one, "causal-mask-off-by-one", "attends to one position past its own"},
      {Fault::kv_write_wrong_row, "kv-write-wrong-row", "writes the new k, v at row pos + 1 of the cache"},
      {Fault::gqa_mapping_wrong, "gqa-mapping-wrong", "query head h reads kv head h % kv_heads, not h / group"},
      {Fault::softmax_without_max, "softmax-without-max", "softmax without subtracting the maximum"},
      {Fault::norm_eps_wrong, "norm-eps-wrong", "RMSNorm epsilon 1e-6 instead of the spec's (1e-5 if it is 1e-6)"},
      {Fault::swiglu_gate_up_swapped, "swiglu-gate-up-swapped", "silu applied to the up projection, not the gate"},
      {Fault::prefill_head_first_row, "prefill-head-first-row", "prefill head reads the first row, not the last"},
      {Fault::batch_rows_mixed, "batch-rows-mixed", "batch row r attends over the cache of row r + 1"},
      {Fault::all_reduce_dropped, "all-reduce-dropped", "tp split skips the all_reduce after attention's output"},
      {Fault::softmax_tail_tile, "softmax-tail-tile", "attention ignores cache rows from 16 on (a dropped tail tile)"},
      {Fault::rows_past_eight, "rows-past-eight", "rows from the ninth on embed the tokens of rows 0, 1, ... again"},
  };
  return table;
}

Fault find_fault(const std::string& name) { return find_named(author_faults(), name, "fault").fault; }

std::string fault_name(Fault fault) {
  for (const FaultInfo& f : author_faults())
    if (f.fault == fault) return f.name;
  return "none";
}

}  // namespace cutcheck
