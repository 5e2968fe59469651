// Each fault of the catalog as a rewrite, a few lines each (catalog.cpp names them).
// They find their values by the author's names; docs/faults.md lists them.
#pragma once

#include "program/rewrite.h"

namespace cutcheck::fault_rewrites {

void rope_position_off_by_one(Rewriter& r);
void rope_style_swapped(Rewriter& r);
void causal_mask_off_by_one(Rewriter& r);
void kv_write_wrong_row(Rewriter& r);
void gqa_mapping_wrong(Rewriter& r);
void softmax_without_max(Rewriter& r);
void norm_eps_wrong(Rewriter& r);
void swiglu_gate_up_swapped(Rewriter& r);
void prefill_head_first_row(Rewriter& r);
void batch_rows_mixed(Rewriter& r);
void all_reduce_dropped(Rewriter& r);
void softmax_tail_tile(Rewriter& r);
void rows_past_eight(Rewriter& r);
void bf16_activations(Rewriter& r);
void rope_scaling_ignored(Rewriter& r);
void attention_bias_dropped(Rewriter& r);
void qk_norm_skipped(Rewriter& r);
void sliding_window_off_by_one(Rewriter& r);
void late_scores_1e3(Rewriter& r);
void late_scores_1e2(Rewriter& r);
void final_norm_gain_dropped(Rewriter& r);
void late_logit_shifted(Rewriter& r);
void nibbles_swapped(Rewriter& r);
void block_scale_neighbour(Rewriter& r);
void last_block_dropped(Rewriter& r);
void min_subtracted_twice(Rewriter& r);

}  // namespace cutcheck::fault_rewrites
