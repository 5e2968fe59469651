#include "author/blocks.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "model/weights.h"

namespace cutcheck {

using K = OpKind;

ModelWriter::ModelWriter(Builder& b, const ModelSpec& spec)
    : ModelWriter(b, spec, Shard{spec.heads, spec.kv_heads, spec.ffn, 1, false}) {}

ModelWriter::ModelWriter(Builder& b, const ModelSpec& spec, Shard shard) : b_(b), spec_(spec), shard_(shard) {}

ValueId ModelWriter::stored_weight(const std::string& name, Shape shape) {
  return b_.weight(name, {spec_.dtype, std::move(shape)});
}

ValueId ModelWriter::weight(const std::string& name, Shape shape) {
  ValueId stored = stored_weight(name, std::move(shape));
  if (spec_.dtype == DType::f32) return stored;
  const std::string wide = name + ".f32";
  if (auto v = b_.program().find(wide)) return *v;
  return b_.convert(stored, DType::f32, wide);
}

ValueId ModelWriter::embed(ValueId tokens) {
  b_.note("embedding: row tokens[r] of tok_embeddings");
  ValueId table = stored_weight(weight::embedding(), {spec_.vocab, spec_.dim});
  if (spec_.dtype == DType::f32) return b_.op(K::gather, {table, tokens}, {}, "x");
  // Gather the rows as stored, then widen only them.
  return b_.convert(b_.op(K::gather, {table, tokens}, {}, "x.stored"), DType::f32, "x");
}

Rows ModelWriter::rows(CacheLayout layout, ValueId positions, ValueId first) {
  const int64_t R = b_.shape(positions)[0], half = spec_.head_dim / 2;
  b_.note("rotary tables: angle[r, i] = pos[r] / rope_theta^(2i / head_dim)");
  ValueId pos_f = b_.convert(positions, DType::f32, "rope.pos");
  TensorType pair{DType::f32, {half}};
  ValueId i = b_.iota(0, pair, "rope.i");
  ValueId two_i = b_.binary(K::multiply, i, b_.constant(2, pair, "rope.two"), "rope.2i");
  ValueId ratio =
      b_.binary(K::divide, two_i, b_.constant(double(spec_.head_dim), pair, "rope.head_dim"), "rope.ratio");
  ValueId theta = b_.constant(double(float(spec_.rope_theta)), pair, "rope.theta");
  ValueId freq = b_.binary(K::divide, b_.constant(1, pair, "rope.one"), b_.binary(K::power, theta, ratio, "rope.scale"),
                           "rope.freq");
  ValueId angle = b_.binary(K::multiply, b_.broadcast(pos_f, {R, half}, {0}, "rope.pos_rows"),
                            b_.broadcast(freq, {R, half}, {1}, "rope.freq_rows"), "rope.angle");
  RopeTables rope{b_.unary(K::cosine, angle, "rope.cos"), b_.unary(K::sine, angle, "rope.sin")};
  return Rows{layout, positions, first, rope};
}

ValueId ModelWriter::rms_norm(ValueId x, const std::string& weight_name, const std::string& name) {
  const int64_t R = b_.shape(x)[0], D = spec_.dim;
  b_.note(fmt::format("{}: x * rsqrt(mean(x^2) + eps) * weight", name));
  ValueId w = weight(weight_name, {D});
  ValueId sum = b_.reduce(b_.binary(K::multiply, x, x, name + ".sq"), "add", {1}, name + ".sum");
  ValueId mean = b_.binary(K::divide, sum, b_.constant(double(D), {DType::f32, {R}}, name + ".dim"), name + ".mean");
  ValueId eps = b_.constant(double(float(spec_.norm_eps)), {DType::f32, {R}}, name + ".eps");
  ValueId var = b_.binary(K::add, mean, eps, name + ".var");
  ValueId inv = b_.unary(K::rsqrt, var, name + ".inv");
  ValueId scaled = b_.binary(K::multiply, b_.broadcast(inv, {R, D}, {0}, name + ".inv_rows"), x, name + ".scaled");
  return b_.binary(K::multiply, b_.broadcast(w, {R, D}, {1}, name + ".weight_rows"), scaled, name);
}

ValueId ModelWriter::rotate(ValueId x, const RopeTables& rope, const std::string& name) {
  const Shape s = b_.shape(x);  // [R, N, E]
  const int64_t R = s[0], N = s[1], E = s[2], half = E / 2;
  const RopeStyle style = spec_.rope_style;
  ValueId c = b_.broadcast(rope.cos, {R, N, half}, {0, 2}, name + ".cos");
  ValueId sn = b_.broadcast(rope.sin, {R, N, half}, {0, 2}, name + ".sin");
  ValueId x0, x1;
  if (style == RopeStyle::interleaved) {  // pairs (2i, 2i + 1)
    ValueId pairs = b_.reshape(x, {R, N, half, 2}, name + ".pairs");
    x0 = b_.reshape(b_.slice(pairs, {0, 0, 0, 0}, {R, N, half, 1}, name + ".even4"), {R, N, half}, name + ".even");
    x1 = b_.reshape(b_.slice(pairs, {0, 0, 0, 1}, {R, N, half, 2}, name + ".odd4"), {R, N, half}, name + ".odd");
  } else {  // pairs (i, i + E/2)
    x0 = b_.slice(x, {0, 0, 0}, {R, N, half}, name + ".lo");
    x1 = b_.slice(x, {0, 0, half}, {R, N, E}, name + ".hi");
  }
  ValueId y0 = b_.binary(K::subtract, b_.binary(K::multiply, x0, c, name + ".x0c"),
                         b_.binary(K::multiply, x1, sn, name + ".x1s"), name + ".y0");
  ValueId y1 = b_.binary(K::add, b_.binary(K::multiply, x0, sn, name + ".x0s"),
                         b_.binary(K::multiply, x1, c, name + ".x1c"), name + ".y1");
  if (style == RopeStyle::half) return b_.concatenate({y0, y1}, 2, name);
  ValueId joined = b_.concatenate({b_.reshape(y0, {R, N, half, 1}, name + ".y0p"), b_.reshape(y1, {R, N, half, 1}, name + ".y1p")},
                                  3, name + ".joined");
  return b_.reshape(joined, {R, N, E}, name);
}

ValueId ModelWriter::attention(int64_t l, const Rows& rows, ValueId xn, Cache& cache) {
  const std::string p = fmt::format("l{}.", l);
  const int64_t R = b_.shape(xn)[0], D = spec_.dim, E = spec_.head_dim;
  const int64_t H = shard_.heads, KV = shard_.kv_heads, G = H / KV;
  const bool per_row = rows.layout == CacheLayout::per_row;

  b_.note(fmt::format("layer {}: q, k, v projections and rotary embedding", l));
  ValueId wq = weight(weight::wq(l), {H * E, D});
  ValueId wk = weight(weight::wk(l), {KV * E, D});
  ValueId wv = weight(weight::wv(l), {KV * E, D});
  ValueId q = rotate(b_.reshape(b_.dot(xn, wq, {1}, {1}, p + "q_flat"), {R, H, E}, p + "q_heads"), rows.rope, p + "q");
  ValueId k = rotate(b_.reshape(b_.dot(xn, wk, {1}, {1}, p + "k_flat"), {R, KV, E}, p + "k_heads"), rows.rope, p + "k");
  ValueId v = b_.reshape(b_.dot(xn, wv, {1}, {1}, p + "v_flat"), {R, KV, E}, p + "v");
  // Grouped-query attention: query head h = kv * G + g reads kv head kv = h / G.
  ValueId q4 = b_.reshape(q, {R, KV, G, E}, p + "q_groups");

  b_.note(fmt::format("layer {}: write this step's k, v into the cache", l));
  ValueId kc = k, vc = v;  // CacheLayout::own: the row attends to itself alone
  if (rows.layout == CacheLayout::shared) {
    ValueId at = rows.first;
    ValueId zero = b_.constant(0, {DType::i32, {}}, p + "zero");
    kc = b_.op(K::dynamic_update_slice, {cache.k, k, at, zero, zero}, {}, p + "k_cache");
    vc = b_.op(K::dynamic_update_slice, {cache.v, v, at, zero, zero}, {}, p + "v_cache");
  } else if (per_row) {
    const Shape cs = b_.shape(cache.k);  // [R, C, KV, E]
    ValueId at = rows.positions;
    ValueId slot = b_.compare(b_.iota(1, {DType::i32, {R, cs[1]}}, p + "slot_c"),
                              b_.broadcast(at, {R, cs[1]}, {0}, p + "slot_pos"), "EQ", p + "slot");
    ValueId slot4 = b_.broadcast(slot, cs, {0, 1}, p + "slot4");
    kc = b_.select(slot4, b_.broadcast(k, cs, {0, 2, 3}, p + "k_rows"), cache.k, p + "k_cache");
    vc = b_.select(slot4, b_.broadcast(v, cs, {0, 2, 3}, p + "v_rows"), cache.v, p + "v_cache");
  }
  if (rows.layout != CacheLayout::own) cache = {kc, vc};
  const int64_t C = b_.shape(kc)[per_row ? 1 : 0];

  const ValueId ks = kc, vs = vc;

  b_.note(fmt::format("layer {}: row r sees cache rows c <= pos[r]", l));
  const ValueId limit = rows.positions;
  ValueId visible = b_.compare(b_.iota(1, {DType::i32, {R, C}}, p + "cache_pos"),
                               b_.broadcast(limit, {R, C}, {0}, p + "row_pos"), "LE", p + "visible");

  b_.note(fmt::format("layer {}: scores = q . k / sqrt(head_dim), masked to the visible rows", l));
  Shape score_shape{R, KV, G, C};
  ValueId scores = per_row ? b_.dot(q4, ks, {3}, {3}, p + "scores_raw", {0, 1}, {0, 2})
                           : b_.transpose(b_.dot(q4, ks, {3}, {2}, p + "scores_kr", {1}, {1}), {1, 0, 2, 3},
                                          p + "scores_raw");
  ValueId scaled = b_.binary(K::divide, scores,
                             b_.constant(double(float(std::sqrt(double(E)))), {DType::f32, score_shape}, p + "sqrt_e"),
                             p + "scores");
  ValueId masked = b_.select(b_.broadcast(visible, score_shape, {0, 3}, p + "visible4"), scaled,
                             b_.constant(-INFINITY, {DType::f32, score_shape}, p + "neg_inf"), p + "scores_masked");

  b_.note(fmt::format("layer {}: softmax over the cache rows", l));
  ValueId top = b_.reduce(masked, "max", {3}, p + "score_max");
  ValueId shifted = b_.binary(K::subtract, masked, b_.broadcast(top, score_shape, {0, 1, 2}, p + "score_max4"), p + "shifted");
  ValueId e = b_.unary(K::exponential, shifted, p + "exp");
  ValueId total = b_.reduce(e, "add", {3}, p + "exp_sum");
  ValueId probs = b_.binary(K::divide, e, b_.broadcast(total, score_shape, {0, 1, 2}, p + "exp_sum4"), p + "probs");

  // Rows no query row sees are don't-care and may hold anything, NaN included: zero
  // them, so that 0 * garbage cannot reach the output.
  b_.note(fmt::format("layer {}: weighted sum of the visible v rows", l));
  ValueId v_visible;
  if (per_row) {
    v_visible = b_.broadcast(visible, b_.shape(vs), {0, 1}, p + "v_visible");
  } else {
    ValueId last = b_.reduce(limit, "max", {0}, p + "last_pos");
    ValueId seen = b_.compare(b_.iota(0, {DType::i32, {C}}, p + "v_pos"), b_.broadcast(last, {C}, {}, p + "v_last"),
                              "LE", p + "v_seen");
    v_visible = b_.broadcast(seen, b_.shape(vs), {0}, p + "v_visible");
  }
  ValueId vz = b_.select(v_visible, vs, b_.constant(0, b_.type(vs), p + "v_zero"), p + "v_masked");
  ValueId mixed = per_row ? b_.dot(probs, vz, {3}, {1}, p + "mixed", {0, 1}, {0, 2})
                          : b_.transpose(b_.dot(probs, vz, {3}, {0}, p + "mixed_kr", {1}, {1}), {1, 0, 2, 3},
                                         p + "mixed");

  b_.note(fmt::format("layer {}: output projection", l));
  ValueId wo = weight(weight::wo(l), {D, H * E});
  ValueId out = b_.dot(b_.reshape(mixed, {R, H * E}, p + "attn_flat"), wo, {1}, {1}, p + "attn_out");
  return sum_over_chips(out, p + "attn_sum");
}

ValueId ModelWriter::mlp(int64_t l, ValueId xn) {
  const std::string p = fmt::format("l{}.", l);
  const int64_t D = spec_.dim, F = shard_.ffn;
  b_.note(fmt::format("layer {}: SwiGLU w2(silu(w1 x) * w3 x)", l));
  const ValueId gate = b_.dot(xn, weight(weight::w1(l), {F, D}), {1}, {1}, p + "gate");
  const ValueId up = b_.dot(xn, weight(weight::w3(l), {F, D}), {1}, {1}, p + "up");
  ValueId silu = b_.binary(K::multiply, gate, b_.unary(K::logistic, gate, p + "sigmoid"), p + "silu");
  ValueId hidden = b_.binary(K::multiply, silu, up, p + "hidden");
  ValueId down = b_.dot(hidden, weight(weight::w2(l), {D, F}), {1}, {1}, p + "down");
  return sum_over_chips(down, p + "mlp_sum");
}

ValueId ModelWriter::sum_over_chips(ValueId partial, const std::string& name) {
  if (!shard_.split) return partial;
  std::vector<int64_t> group(size_t(shard_.tp));
  std::iota(group.begin(), group.end(), 0);
  return b_.op(K::all_reduce, {partial}, {word("add"), Attr(std::vector<std::vector<int64_t>>{group})}, name);
}

LayerOut ModelWriter::layer(int64_t l, const Rows& rows, ValueId x, Cache cache) {
  const std::string p = fmt::format("l{}.", l);
  ValueId attn = attention(l, rows, rms_norm(x, weight::attention_norm(l), p + "attn_norm"), cache);
  b_.note(fmt::format("layer {}: residual", l));
  ValueId mid = b_.binary(K::add, x, attn, p + "mid");
  ValueId ffn = mlp(l, rms_norm(mid, weight::ffn_norm(l), p + "ffn_norm"));
  b_.note(fmt::format("layer {}: residual", l));
  return {b_.binary(K::add, mid, ffn, p + "x"), cache};
}

HeadOut ModelWriter::head(ValueId x) {
  const int64_t R = b_.shape(x)[0], V = spec_.vocab, D = spec_.dim;
  ValueId xn = rms_norm(x, weight::final_norm(), "final_norm");
  b_.note("head: logits, and next = the lowest index of the largest logit");
  ValueId logits = b_.dot(xn, weight(weight::head(spec_), {V, D}), {1}, {1}, "logits");
  ValueId top = b_.reduce(logits, "max", {1}, "head.max");
  ValueId is_top = b_.compare(logits, b_.broadcast(top, {R, V}, {0}, "head.max_rows"), "EQ", "head.is_max");
  ValueId index = b_.iota(1, {DType::i32, {R, V}}, "head.index");
  ValueId candidates = b_.select(is_top, index, b_.constant(double(V), {DType::i32, {R, V}}, "head.none"),
                                 "head.candidates");
  return {logits, b_.reduce(candidates, "min", {1}, "next")};
}

}  // namespace cutcheck
