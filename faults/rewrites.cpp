#include "faults/rewrites.h"

#include <fmt/format.h>

#include "program/activations.h"

#include <algorithm>

namespace cutcheck::fault_rewrites {
namespace {

using K = OpKind;

// "l3." for "l3.row_pos": the layer's prefix, which its other values share.
std::string layer_of(const std::string& name) { return name.substr(0, name.find('.') + 1); }

// x + k, computed just before the op that defines `before`.
ValueId plus(Rewriter& r, ValueId before, ValueId x, double k, const std::string& name) {
  ValueId c = r.constant_before(before, k, r.type(x), name + ".by");
  return r.insert_before(before, K::add, {x, c}, {}, name);
}

// A rotation's head vectors [R, N, E] with the pairs of one rope style laid out as the
// other's, inserted after `x`: interleave takes (i, i + E/2) to (2i, 2i + 1), and
// deinterleave the reverse.
ValueId reorder_pairs(Rewriter& r, ValueId x, bool interleave, const std::string& name) {
  const Shape s = r.type(x).shape;
  const int64_t R = s[0], N = s[1], E = s[2];
  const Shape split = interleave ? Shape{R, N, 2, E / 2} : Shape{R, N, E / 2, 2};
  ValueId a = r.insert_after(x, K::reshape, {x}, {}, name + ".split", TensorType{DType::f32, split});
  ValueId b = r.insert_after(a, K::transpose, {a}, {ints({0, 1, 3, 2})}, name + ".swap");
  return r.insert_after(b, K::reshape, {b}, {}, name, TensorType{DType::f32, s});
}

// Every layer's mask limit (the positions row_pos broadcasts, and last_pos reduces)
// replaced by `change(limit)`, computed before the mask.
template <class Change>
void change_mask_limit(Rewriter& r, Change change) {
  for (ValueId row_pos : r.require("l*.row_pos", K::broadcast_in_dim)) {
    const std::string l = layer_of(r.name(row_pos));
    ValueId limit = change(row_pos, r.operand(row_pos, 0), l);
    r.set_operand(row_pos, 0, limit);
    for (ValueId last : r.find(l + "last_pos", K::reduce)) r.set_operand(last, 0, limit);
  }
}

// Per row of `rows` positions [R] (i32), 1 where the position is at least `from`: a
// predicate [R], computed before the op that defines `before`.
ValueId from_position(Rewriter& r, ValueId before, ValueId rows, int64_t from, const std::string& name) {
  ValueId limit = r.constant_before(before, double(from), r.type(rows), name + ".from");
  return r.insert_before(before, K::compare, {rows, limit}, {word("GE")}, name);
}

// `x` [R, ...] times (1 + by) in the rows whose position is at least 16, inserted after x
// and read by every later use of it.
void scale_late_rows(Rewriter& r, ValueId x, ValueId rows, double by, const std::string& name) {
  const TensorType& t = r.type(x);
  const TensorType per_row{DType::f32, {t.shape[0]}};
  ValueId late = from_position(r, x, rows, 16, name + ".late");
  ValueId factor = r.insert_before(x, K::select,
                                   {late, r.constant_before(x, double(float(1 + by)), per_row, name + ".factor"),
                                    r.constant_before(x, 1, per_row, name + ".one")},
                                   {}, name + ".row_factor");
  ValueId spread = r.insert_after(x, K::broadcast_in_dim, {factor}, {ints({0})}, name + ".factor_rows", t);
  r.replace_uses(x, r.insert_after(spread, K::multiply, {x, spread}, {}, name));
}

// Every convert of a quantized value (a weight, or the embedding rows gathered from one)
// whose format `wanted` takes; AnchorMissing when there is none.
std::vector<ValueId> dequantizations(Rewriter& r, bool (*wanted)(QuantFormat)) {
  std::vector<ValueId> out;
  for (ValueId v : r.find("*", K::convert)) {
    const auto format = quant_format(r.type(r.operand(v, 0)).dtype);
    if (format && wanted(*format)) out.push_back(v);
  }
  if (out.empty()) throw AnchorMissing("no convert of a quantized weight of the fault's formats");
  return out;
}

// `parts` [..., n] (a block_field's scales or mins) spread over the values they belong to:
// each repeated for its run of `per` values, as f32 of `shape` [..., n * per], inserted
// after `after`.
ValueId spread(Rewriter& r, ValueId after, ValueId parts, int64_t per, const Shape& shape, const std::string& name) {
  Shape runs = r.type(parts).shape;
  runs.push_back(per);
  std::vector<int64_t> dims(runs.size() - 1);
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = int64_t(d);
  ValueId b = r.insert_after(after, K::broadcast_in_dim, {parts}, {ints(dims)}, name + ".runs", TensorType{DType::f32, runs});
  return r.insert_after(b, K::reshape, {b}, {}, name, TensorType{DType::f32, shape});
}

// x [..., C] with the two halves of each group of `group` values along the last dimension
// exchanged, inserted after x.
ValueId swap_halves(Rewriter& r, ValueId x, int64_t group, const std::string& name) {
  const Shape shape = r.type(x).shape;
  Shape split(shape.begin(), shape.end() - 1);
  split.insert(split.end(), {shape.back() / group, 2, group / 2});
  const size_t rank = split.size();
  ValueId a = r.insert_after(x, K::reshape, {x}, {}, name + ".groups", TensorType{DType::f32, split});
  std::vector<int64_t> start(rank, 0), mid = split, step(rank, 1);
  mid[rank - 2] = 1;
  ValueId first = r.insert_after(a, K::slice, {a}, {ints(start), ints(mid), ints(step)}, name + ".first");
  start[rank - 2] = 1;
  ValueId second = r.insert_after(first, K::slice, {a}, {ints(start), ints(split), ints(step)}, name + ".second");
  ValueId swapped = r.insert_after(second, K::concatenate, {second, first}, {integer(int64_t(rank - 2))}, name + ".swapped");
  return r.insert_after(swapped, K::reshape, {swapped}, {}, name, TensorType{DType::f32, shape});
}

// The value `v` converts from its quantized operand recomputed from its parts (codes x
// scales - mins, quant/block_fields.h: the same bits), after `change_codes` and
// `change_scales` edit those parts; every later use of v reads it.
template <class Codes, class Scales>
void recompose(Rewriter& r, ValueId v, Codes change_codes, Scales change_scales, const std::string& name) {
  const ValueId q = r.operand(v, 0);
  const QuantFormat format = *quant_format(r.type(q).dtype);
  const Shape shape = r.type(v).shape;
  const int64_t per = values_per_scale(format, shape.back());
  ValueId codes = change_codes(r.insert_after(v, K::block_field, {q}, {word("codes")}, name + ".codes"));
  ValueId scales = r.insert_after(codes, K::block_field, {q}, {word("scales")}, name + ".scales");
  scales = change_scales(scales);
  const ValueId scale = spread(r, scales, scales, per, shape, name + ".scale");
  ValueId value = r.insert_after(scale, K::multiply, {codes, scale}, {}, name + ".scaled");
  if (has_mins(format)) {
    const ValueId mins = r.insert_after(value, K::block_field, {q}, {word("mins")}, name + ".mins");
    const ValueId min = spread(r, mins, mins, per, shape, name + ".min");
    value = r.insert_after(min, K::subtract, {value, min}, {}, name);
  }
  r.replace_uses(v, value);
}

bool nibble_format(QuantFormat f) { return f == QuantFormat::q4_0 || f == QuantFormat::q4_K; }
bool block_format(QuantFormat f) { return f != QuantFormat::i8_row; }
bool format_with_mins(QuantFormat f) { return has_mins(f); }

}  // namespace

void nibbles_swapped(Rewriter& r) {
  // A byte's two nibbles read the other way round: q4_0's byte j holds values j and j + 16
  // of its block; q4_K's byte l of chunk c values 64c + l and 64c + 32 + l.
  for (ValueId v : dequantizations(r, nibble_format)) {
    const int64_t group = r.type(r.operand(v, 0)).dtype == DType::q4_0 ? 32 : 64;
    const std::string name = r.name(v) + ".fault";
    recompose(r, v, [&](ValueId codes) { return swap_halves(r, codes, group, name + ".nibbles"); },
              [](ValueId scales) { return scales; }, name);
  }
}

void block_scale_neighbour(Rewriter& r) {
  // Each block's values scaled by the next block's scale along the row (the last keeps
  // its own): a kernel indexing the scales one block off.
  for (ValueId v : dequantizations(r, block_format)) {
    const std::string name = r.name(v) + ".fault";
    recompose(r, v, [](ValueId codes) { return codes; },
              [&](ValueId scales) {
                const Shape s = r.type(scales).shape;
                const size_t last = s.size() - 1;
                if (s[last] == 1) return scales;  // one block per row: no neighbour
                std::vector<int64_t> start(s.size(), 0), step(s.size(), 1), limit = s;
                start[last] = 1;
                ValueId next = r.insert_after(scales, K::slice, {scales}, {ints(start), ints(limit), ints(step)}, name + ".next");
                start[last] = s[last] - 1;
                ValueId end = r.insert_after(next, K::slice, {scales}, {ints(start), ints(limit), ints(step)}, name + ".end");
                return r.insert_after(end, K::concatenate, {next, end}, {integer(int64_t(last))}, name + ".shifted");
              },
              name);
  }
}

void last_block_dropped(Rewriter& r) {
  // Each row's last block never read: its values 0.
  for (ValueId v : dequantizations(r, block_format)) {
    const Shape shape = r.type(v).shape;
    const int64_t block = block_layout(*quant_format(r.type(r.operand(v, 0)).dtype), shape.back()).values;
    const std::string name = r.name(v) + ".fault";
    std::vector<int64_t> start(shape.size(), 0), step(shape.size(), 1), limit = shape;
    limit.back() -= block;
    ValueId kept = r.insert_after(v, K::slice, {v}, {ints(start), ints(limit), ints(step)}, name + ".kept");
    Shape tail = shape;
    tail.back() = block;
    ValueId zeros = r.insert_after(kept, K::constant, {}, {number(0)}, name + ".zeros", TensorType{DType::f32, tail});
    ValueId joined = r.insert_after(zeros, K::concatenate, {kept, zeros}, {integer(int64_t(shape.size() - 1))}, name);
    r.replace_uses(v, joined);
  }
}

void min_subtracted_twice(Rewriter& r) {
  for (ValueId v : dequantizations(r, format_with_mins)) {
    const ValueId q = r.operand(v, 0);
    const Shape shape = r.type(v).shape;
    const std::string name = r.name(v) + ".fault";
    const ValueId mins = r.insert_after(v, K::block_field, {q}, {word("mins")}, name + ".mins");
    const int64_t per = values_per_scale(*quant_format(r.type(q).dtype), shape.back());
    const ValueId min = spread(r, mins, mins, per, shape, name + ".min");
    const ValueId again = r.insert_after(min, K::subtract, {v, min}, {}, name);
    r.replace_uses(v, again);
  }
}

void late_scores_1e3(Rewriter& r) {
  for (ValueId scores : r.require("l*.scores", K::divide)) {
    const std::string l = layer_of(r.name(scores));
    scale_late_rows(r, scores, r.operand(r.value(l + "row_pos"), 0), 1e-3, l + "fault.scores");
  }
}

void late_scores_1e2(Rewriter& r) {
  for (ValueId scores : r.require("l*.scores", K::divide)) {
    const std::string l = layer_of(r.name(scores));
    scale_late_rows(r, scores, r.operand(r.value(l + "row_pos"), 0), 1e-2, l + "fault.scores");
  }
}

void final_norm_gain_dropped(Rewriter& r) {
  for (ValueId norm : r.require("final_norm", K::multiply)) r.bypass(norm, 1);  // weight_rows * scaled: scaled
}

void late_logit_shifted(Rewriter& r) {
  // The logit of token 1 plus 1e-3 in the rows at positions 16 and on: the head's rows are
  // the cut's (decode, batch) or its last (prefill, whose positions are consecutive).
  const ValueId logits = r.require("logits", K::dot_general).front();
  const std::vector<ValueId> named = r.find("positions");
  const ValueId positions = named.empty() ? r.value("pos") : named.front();
  const TensorType& t = r.type(logits);  // [R, V]
  const int64_t R = t.shape[0], V = t.shape[1];
  ValueId rows = positions;
  if (r.type(positions).shape != Shape{R})
    rows = r.insert_before(logits, K::reshape,
                           {r.insert_before(logits, K::reduce, {positions}, {word("max"), ints({0})}, "fault.last")},
                           {}, "fault.rows", TensorType{DType::i32, {R}});
  ValueId late = r.insert_before(logits, K::broadcast_in_dim, {from_position(r, logits, rows, 16, "fault.late")}, {ints({0})},
                                 "fault.late_rows", TensorType{DType::i1, {R, V}});
  const TensorType index{DType::i32, {R, V}};
  ValueId token = r.insert_before(logits, K::compare,
                                  {r.insert_before(logits, K::iota, {}, {integer(1)}, "fault.token", index),
                                   r.constant_before(logits, 1, index, "fault.which")},
                                  {word("EQ")}, "fault.is_token");
  ValueId zero = r.constant_before(logits, 0, t, "fault.zero");
  ValueId shift = r.insert_before(logits, K::select, {late, r.insert_before(logits, K::select, {token, r.constant_before(logits, double(1e-3f), t, "fault.by"), zero}, {}, "fault.token_shift"), zero}, {}, "fault.shift");
  r.replace_uses(logits, r.insert_after(logits, K::add, {logits, shift}, {}, "fault.logits"));
}

void rope_position_off_by_one(Rewriter& r) {
  for (ValueId pos : r.require("rope.pos", K::convert)) r.set_operand(pos, 0, plus(r, pos, r.operand(pos, 0), 1, "fault.pos"));
}

void rope_style_swapped(Rewriter& r) {
  // Rotating with style B is rotating with style A between a reorder of the pairs and its
  // inverse; which style the program has shows in its names.
  const bool interleaved = !r.find("l*.q.pairs").empty();
  if (!interleaved && r.find("l*.q.lo").empty())
    throw AnchorMissing(fmt::format("{}: no value matches %l*.q.pairs (interleaved rotation) or %l*.q.lo (half)",
                                    r.program().label));
  for (ValueId heads : r.require("l*_heads")) {  // l*.q_heads and l*.k_heads, the rotations' inputs
    const std::string& n = r.name(heads);
    const std::string base = n.substr(0, n.size() - 6);  // l0.q
    ValueId rotated = r.value(base);
    ValueId in = reorder_pairs(r, heads, interleaved, base + ".fault_in");
    r.replace_uses(heads, in);
    ValueId out = reorder_pairs(r, rotated, !interleaved, base + ".fault_out");
    r.replace_uses(rotated, out);
  }
}

void causal_mask_off_by_one(Rewriter& r) {
  change_mask_limit(r, [&](ValueId at, ValueId limit, const std::string& l) { return plus(r, at, limit, 1, l + "fault.limit"); });
}

void softmax_tail_tile(Rewriter& r) {
  change_mask_limit(r, [&](ValueId at, ValueId limit, const std::string& l) {
    ValueId end = r.constant_before(at, 15, r.type(limit), l + "fault.tile_end");
    return r.insert_before(at, K::minimum, {limit, end}, {}, l + "fault.limit");
  });
}

void kv_write_wrong_row(Rewriter& r) {
  std::vector<ValueId> shared = r.find("l*.k_cache", K::dynamic_update_slice), per_row = r.find("l*.slot_pos");
  if (shared.empty() && per_row.empty())
    throw AnchorMissing(fmt::format("{}: no value matches %l*.k_cache (a dynamic_update_slice) or %l*.slot_pos",
                                    r.program().label));
  for (ValueId k : shared) {  // one cache shared by the rows: the update's start row
    const std::string l = layer_of(r.name(k));
    ValueId at = plus(r, k, r.operand(k, 2), 1, l + "fault.at");
    r.set_operand(k, 2, at);
    r.set_operand(r.value(l + "v_cache"), 2, at);
  }
  for (ValueId slot : per_row)  // a cache per row: the row each one selects
    r.set_operand(slot, 0, plus(r, slot, r.operand(slot, 0), 1, layer_of(r.name(slot)) + "fault.at"));
}

void gqa_mapping_wrong(Rewriter& r) {
  // Query head h = g * KV + kv instead of kv * G + g: q regrouped [R, G, KV, E] and
  // transposed, and the mixed values transposed back before the output projection.
  for (ValueId groups : r.require("l*.q_groups", K::reshape)) {
    const std::string l = layer_of(r.name(groups));
    const Shape s = r.type(groups).shape;  // [R, KV, G, E]
    ValueId gk = r.insert_after(groups, K::reshape, {r.operand(groups, 0)}, {}, l + "fault.q_gk",
                                TensorType{DType::f32, {s[0], s[2], s[1], s[3]}});
    ValueId swapped = r.insert_after(gk, K::transpose, {gk}, {ints({0, 2, 1, 3})}, l + "fault.q_groups");
    r.replace_uses(groups, swapped);
    ValueId mixed = r.value(l + "mixed");
    ValueId back = r.insert_after(mixed, K::transpose, {mixed}, {ints({0, 2, 1, 3})}, l + "fault.mixed_gk");
    r.set_operand(r.value(l + "attn_flat"), 0, back);
  }
}

void softmax_without_max(Rewriter& r) {
  for (ValueId shifted : r.require("l*.shifted", K::subtract)) r.bypass(shifted);
}

void norm_eps_wrong(Rewriter& r) {
  for (ValueId eps : r.require("*norm.eps", K::constant)) {
    const bool is_1e6 = float(r.op(eps).number("value")) == 1e-6f;
    r.set_attr(eps, "value", number(double(is_1e6 ? 1e-5f : 1e-6f)));
  }
}

void swiglu_gate_up_swapped(Rewriter& r) {
  // silu(w3 x) * w1 x: each projection's users read the other one (both are computed
  // before either is used, whether or not a weight is widened between them).
  for (ValueId gate : r.require("l*.gate", K::dot_general)) {
    const ValueId up = r.value(layer_of(r.name(gate)) + "up");
    const std::vector<ValueId> gate_users = r.users(gate), up_users = r.users(up);
    const auto reroute = [&](const std::vector<ValueId>& users, ValueId from, ValueId to) {
      for (ValueId u : users)
        for (size_t i = 0; i < r.op(u).operands.size(); ++i)
          if (r.op(u).operands[i] == from) r.set_operand(u, i, to);
    };
    reroute(gate_users, gate, up);
    reroute(up_users, up, gate);
  }
}

void prefill_head_first_row(Rewriter& r) {
  for (ValueId last : r.require("x.last", K::slice)) {
    std::vector<int64_t> start = r.op(last).ints("start_indices"), limit = r.op(last).ints("limit_indices");
    limit[0] -= start[0];
    start[0] = 0;
    r.set_attrs(last, {{"start_indices", ints(start)}, {"limit_indices", ints(limit)}});
  }
}

void batch_rows_mixed(Rewriter& r) {
  // Row r reads the cache of row r + 1 (the last row, row 0's): the updated caches
  // rotated by one row where attention reads them; the outputs keep them as they are.
  for (ValueId k : r.require("l*.k_cache", K::select)) {
    const std::string l = layer_of(r.name(k));
    for (ValueId cache : {k, r.value(l + "v_cache")}) {
      const Shape s = r.type(cache).shape;  // [R, C, KV, E]
      if (s[0] < 2) continue;
      const std::string n = r.name(cache) + ".fault";
      ValueId rest = r.insert_after(cache, K::slice, {cache}, {ints({1, 0, 0, 0}), ints(s), ints({1, 1, 1, 1})}, n + "_rest");
      ValueId first = r.insert_after(rest, K::slice, {cache}, {ints({0, 0, 0, 0}), ints({1, s[1], s[2], s[3]}), ints({1, 1, 1, 1})},
                                     n + "_first");
      ValueId rotated = r.insert_after(first, K::concatenate, {rest, first}, {integer(0)}, n);
      r.replace_uses(cache, rotated, false);
    }
  }
}

void all_reduce_dropped(Rewriter& r) {
  for (ValueId sum : r.require("l*.attn_sum", K::all_reduce)) r.bypass(sum);
}

void rows_past_eight(Rewriter& r) {
  // Rows from the ninth on embed the tokens of rows 0, 1, ... again. The rows are
  // gathered as `x`, or as `x.stored` where the table is widened after the gather.
  std::vector<ValueId> gathers = r.find("x", K::gather);
  for (ValueId stored : r.find("x.stored", K::gather)) gathers.push_back(stored);
  if (gathers.empty()) gathers = r.require("x", K::gather);  // throws, naming the anchor
  for (ValueId x : gathers) {
    ValueId tokens = r.operand(x, 1);
    const Shape s = r.type(tokens).shape;
    if (s.size() != 1 || s[0] <= 8) continue;
    ValueId block = r.insert_before(x, K::slice, {tokens}, {ints({0}), ints({8}), ints({1})}, "fault.first_block");
    ValueId again = r.insert_before(x, K::slice, {tokens}, {ints({0}), ints({s[0] - 8}), ints({1})}, "fault.again");
    r.set_operand(x, 1, r.insert_before(x, K::concatenate, {block, again}, {integer(0)}, "fault.tokens"));
  }
}

void bf16_activations(Rewriter& r) {
  // Every activation rounded to bf16 as it is computed, as a backend that keeps its
  // activations in bf16 does; tables computed from positions and constants (rotary
  // angles) stay f32, as in every bf16 engine (program/activations.h, docs/numerics.md).
  const std::vector<bool> activation = activations(r.program());
  std::vector<ValueId> results;
  for (const Operation& op : r.program().ops)
    if (activation[size_t(op.result)]) results.push_back(op.result);
  if (results.empty()) throw AnchorMissing(fmt::format("{}: no op computes an activation", r.program().label));
  for (ValueId v : results)
    r.replace_uses(v, r.insert_after(v, K::reduce_precision, {v}, {integer(8), integer(7)}, r.name(v) + ".bf16"));
}

void rope_scaling_ignored(Rewriter& r) {
  for (ValueId scaled : r.require("rope.freq_scaled")) r.replace_uses(scaled, r.value("rope.freq"));
}

void attention_bias_dropped(Rewriter& r) {
  for (ValueId biased : r.require("l*_biased", K::add)) r.bypass(biased);
}

void qk_norm_skipped(Rewriter& r) {
  for (ValueId q_norm : r.require("l*.q_norm", K::multiply)) {
    const std::string l = layer_of(r.name(q_norm));
    for (const char* n : {"q", "k"}) r.replace_uses(r.value(l + n + "_norm"), r.value(l + n + "_heads"));
  }
}

void sliding_window_off_by_one(Rewriter& r) {
  // The window reaches W back instead of W - 1: one key more than the spec's, the row
  // just before the window (a don't-care row, garbage in a case's inputs).
  for (ValueId reach : r.require("l*.window_reach", K::constant))
    r.set_attr(reach, "value", number(r.op(reach).number("value") + 1));
}

}  // namespace cutcheck::fault_rewrites
