#include "faults/catalog.h"

#include "core/named.h"
#include "faults/rewrites.h"
#include "model/sharding.h"
#include "model/weights.h"

namespace cutcheck {
namespace {

using C = CutKind;
namespace rw = fault_rewrites;

// Where each part of the model is authored.
const std::vector<CutKind> with_layers = {C::decode, C::prefill, C::batch, C::forward,
                                          C::forward_layer, C::decode_layer, C::batch_layer, C::prefill_layer};
const std::vector<CutKind> with_cache = {C::decode, C::prefill, C::batch, C::decode_layer, C::batch_layer, C::prefill_layer};
const std::vector<CutKind> with_head = {C::decode, C::prefill, C::batch, C::forward, C::forward_head, C::decode_head,
                                        C::batch_head, C::prefill_head};
const std::vector<CutKind> with_norm = {C::decode, C::prefill, C::batch, C::forward, C::forward_layer, C::forward_head,
                                        C::decode_layer, C::decode_head, C::batch_layer, C::batch_head,
                                        C::prefill_layer, C::prefill_head};

bool scales_rope(const ModelSpec& s) { return s.rope_scaling.type != RopeScalingType::none; }
bool has_attention_bias(const ModelSpec& s) { return s.attention_bias; }
bool has_qk_norm(const ModelSpec& s) { return s.qk_norm; }
bool has_sliding_window(const ModelSpec& s) { return s.sliding_window > 0; }

// The quantized formats' faults act on a spec whose every matrix is stored in one of
// theirs, so that every cut's program changes: `holds(type, row length)` for the spec's
// dtype over every row length, and for each matrix of a type of its own over its rows.
bool every_matrix(const ModelSpec& s, bool (*holds)(DType, int64_t)) {
  for (int64_t row : {s.dim, s.q_width(), s.ffn})
    if (!holds(s.dtype, row)) return false;
  for (const auto& [name, type] : s.weight_dtypes) {
    const std::optional<WeightInfo> w = find_weight(s, name);
    if (w && w->shape.size() == 2 && !holds(type, w->shape.back())) return false;
  }
  return true;
}

bool in_nibbles(const ModelSpec& s) {
  return every_matrix(s, [](DType t, int64_t) { return t == DType::q4_0 || t == DType::q4_K; });
}
bool in_blocks(const ModelSpec& s) {
  return every_matrix(s, [](DType t, int64_t) { return is_quantized(t) && t != DType::i8_row; });
}
bool with_mins(const ModelSpec& s) {
  return every_matrix(s, [](DType t, int64_t) { return is_quantized(t) && has_mins(*quant_format(t)); });
}
// Every matrix row holds at least two scales: each has a neighbour.
bool in_blocks_of_two(const ModelSpec& s) {
  return every_matrix(s, [](DType t, int64_t row) {
    return is_quantized(t) && t != DType::i8_row && row >= 2 * values_per_scale(*quant_format(t), row);
  });
}

}  // namespace

const std::vector<Fault>& fault_catalog() {
  static const std::vector<Fault> catalog = {
      {"rope-position-off-by-one", "rotary embedding uses pos + 1", false, with_layers, false, rw::rope_position_off_by_one},
      {"rope-style-swapped", "rotary pairs of the other style (interleaved <-> half)", false, with_layers, false,
       rw::rope_style_swapped},
      {"causal-mask-off-by-one", "attends to one position past its own", false, with_layers, false, rw::causal_mask_off_by_one},
      {"kv-write-wrong-row", "writes the new k, v at row pos + 1 of the cache", false, with_cache, false, rw::kv_write_wrong_row},
      {"gqa-mapping-wrong", "query head h reads kv head h % kv_heads, not h / group", false, with_layers, false,
       rw::gqa_mapping_wrong},
      {"softmax-without-max", "softmax without subtracting the maximum", false, with_layers, false, rw::softmax_without_max},
      {"norm-eps-wrong", "RMSNorm epsilon 1e-6 instead of the spec's (1e-5 if it is 1e-6)", false, with_norm, false,
       rw::norm_eps_wrong},
      {"swiglu-gate-up-swapped", "silu applied to the up projection, not the gate", false, with_layers, false,
       rw::swiglu_gate_up_swapped},
      {"prefill-head-first-row", "prefill head reads the first row, not the last", false, {C::prefill, C::prefill_head},
       false, rw::prefill_head_first_row},
      {"batch-rows-mixed", "batch row r attends over the cache of row r + 1", false, {C::batch, C::batch_layer}, false,
       rw::batch_rows_mixed},
      {"all-reduce-dropped", "tp split skips the all_reduce after attention's output", false, splitting_kinds(), true,
       rw::all_reduce_dropped},
      {"softmax-tail-tile", "attention ignores cache rows from 16 on (a dropped tail tile)", false, with_layers, false,
       rw::softmax_tail_tile},
      {"rows-past-eight", "rows from the ninth on embed the tokens of rows 0, 1, ... again", false,
       {C::prefill, C::batch, C::batch_embed}, false, rw::rows_past_eight},
      {"bf16-activations", "every activation rounded to bf16 (reduce_precision after each; tables stay f32)", true,
       all_cut_kinds(), false, rw::bf16_activations},
      // Small errors that trained weights hide where a bound is loose: a kernel that gets
      // the scores slightly wrong past a tile of 16 positions, a norm that loses its gain,
      // one logit a little off late in a sequence.
      {"late-scores-1e-3", "attention scores times (1 + 1e-3) at positions 16 and on", false, with_layers, false,
       rw::late_scores_1e3},
      {"late-scores-1e-2", "attention scores times (1 + 1e-2) at positions 16 and on", false, with_layers, false,
       rw::late_scores_1e2},
      {"final-norm-gain-dropped", "the final RMSNorm without its weight", false, with_head, false,
       rw::final_norm_gain_dropped},
      {"late-logit-shifted", "the logit of token 1 plus 1e-3 at positions 16 and on", false,
       {C::decode, C::prefill, C::batch, C::forward}, false, rw::late_logit_shifted},
      // The knobs of newer checkpoints: each fault acts only where the spec has its knob.
      {"rope-scaling-ignored", "rotary frequencies without the spec's rope_scaling", false, with_layers, false,
       rw::rope_scaling_ignored, scales_rope},
      {"attention-bias-dropped", "q, k, v projections without their biases", false, with_layers, false,
       rw::attention_bias_dropped, has_attention_bias},
      {"qk-norm-skipped", "q and k heads rotated without their RMSNorm", false, with_layers, false, rw::qk_norm_skipped,
       has_qk_norm},
      {"sliding-window-off-by-one", "a query sees sliding_window + 1 keys, one before its window", false, with_layers,
       false, rw::sliding_window_off_by_one, has_sliding_window},
      // The kernel bugs of quantized weights, on the dequantization written out as its
      // parts (block_field): each acts only where the spec's weights are in its formats.
      {"nibbles-swapped", "each byte's two 4-bit codes read the other way round (q4_0, q4_K)", false, all_cut_kinds(),
       false, rw::nibbles_swapped, in_nibbles},
      {"block-scale-neighbour", "each block's values scaled by the next block's scale along the row", false,
       all_cut_kinds(), false, rw::block_scale_neighbour, in_blocks_of_two},
      {"last-block-dropped", "the last block of each weight row never read (its values 0)", false, all_cut_kinds(), false,
       rw::last_block_dropped, in_blocks},
      {"min-subtracted-twice", "q4_K's sub-block mins subtracted twice", false, all_cut_kinds(), false,
       rw::min_subtracted_twice, with_mins},
  };
  return catalog;
}

const Fault& find_fault(const std::string& name) { return find_named(fault_catalog(), name, "fault"); }

Program Fault::apply(const Program& program) const {
  Rewriter r(program);
  rewrite(r);
  return r.finish();
}

bool Fault::acts_on(const Cut& cut, int64_t tp, const ModelSpec& spec) const {
  if (split_only && tp < 2) return false;
  if (needs && !needs(spec)) return false;
  return std::find(kinds.begin(), kinds.end(), cut.kind) != kinds.end();
}

}  // namespace cutcheck
