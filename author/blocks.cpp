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
  return b_.weight(name, stored_type(spec_, {name, std::move(shape)}));
}

ValueId ModelWriter::weight(const std::string& name, Shape shape) {
  ValueId stored = stored_weight(name, std::move(shape));
  if (b_.type(stored).dtype == DType::f32) return stored;
  const std::string wide = name + ".f32";
  if (auto v = b_.program().find(wide)) return *v;
  return b_.convert(stored, DType::f32, wide);
}

ValueId ModelWriter::embed(ValueId tokens) {
  b_.note("embedding: row tokens[r] of tok_embeddings");
  ValueId table = stored_weight(weight::embedding(), {spec_.vocab, spec_.dim});
  if (b_.type(table).dtype == DType::f32) return b_.op(K::gather, {table, tokens}, {}, "x");
  // Gather the rows as stored, then widen only them.
  return b_.convert(b_.op(K::gather, {table, tokens}, {}, "x.stored"), DType::f32, "x");
}

Rows ModelWriter::rows(CacheLayout layout, ValueId positions, ValueId first) {
  const int64_t R = b_.shape(positions)[0], half = spec_.head_dim / 2;
  b_.note("rotary tables: angle[r, i] = pos[r] * (1 / rope_theta^(2i / head_dim))");
  ValueId pos_f = b_.convert(positions, DType::f32, "rope.pos");
  TensorType pair{DType::f32, {half}};
  ValueId i = b_.iota(0, pair, "rope.i");
  ValueId two_i = b_.binary(K::multiply, i, b_.constant(2, pair, "rope.two"), "rope.2i");
  ValueId ratio =
      b_.binary(K::divide, two_i, b_.constant(double(spec_.head_dim), pair, "rope.head_dim"), "rope.ratio");
  ValueId theta = b_.constant(double(float(spec_.rope_theta)), pair, "rope.theta");
  ValueId freq = scale_frequencies(
      b_.binary(K::divide, b_.constant(1, pair, "rope.one"), b_.binary(K::power, theta, ratio, "rope.scale"), "rope.freq"));
  ValueId angle = b_.binary(K::multiply, b_.broadcast(pos_f, {R, half}, {0}, "rope.pos_rows"),
                            b_.broadcast(freq, {R, half}, {1}, "rope.freq_rows"), "rope.angle");
  RopeTables rope{b_.unary(K::cosine, angle, "rope.cos"), b_.unary(K::sine, angle, "rope.sin")};
  return Rows{layout, positions, first, rope};
}

ValueId ModelWriter::scale_frequencies(ValueId freq) {
  const RopeScaling& rs = spec_.rope_scaling;
  if (rs.type == RopeScalingType::none) return freq;
  const TensorType pair = b_.type(freq);
  auto constant = [&](double value, const char* name) { return b_.constant(double(float(value)), pair, name); };
  if (rs.type == RopeScalingType::linear) {
    b_.note("rope scaling (linear): every frequency divided by factor");
    return b_.binary(K::divide, freq, constant(rs.factor, "rope.factor"), "rope.freq_scaled");
  }
  // llama3: by wavelength 2 pi / freq against the original context C. Short waves (under
  // C / high_freq_factor) keep their frequency, long ones (over C / low_freq_factor) are
  // divided by factor, and between them s = (C / wavelength - low) / (high - low) blends
  // (1 - s) freq / factor + s freq. The blend meets both sides where they switch, so a
  // wavelength rounded across a threshold moves the frequency by rounding only.
  b_.note("rope scaling (llama3): long waves / factor, short waves kept, a linear blend between");
  const double context = double(rs.original_max_position_embeddings);
  ValueId wavelength = b_.binary(K::divide, constant(2 * M_PI, "rope.two_pi"), freq, "rope.wavelength");
  ValueId divided = b_.binary(K::divide, freq, constant(rs.factor, "rope.factor"), "rope.freq_divided");
  ValueId waves = b_.binary(K::divide, constant(context, "rope.context"), wavelength, "rope.context_waves");
  ValueId smooth = b_.binary(K::divide, b_.binary(K::subtract, waves, constant(rs.low_freq_factor, "rope.low"), "rope.over_low"),
                             constant(rs.high_freq_factor - rs.low_freq_factor, "rope.band"), "rope.smooth");
  ValueId blend = b_.binary(
      K::add, b_.binary(K::multiply, b_.binary(K::subtract, constant(1, "rope.one_s"), smooth, "rope.rough"), divided, "rope.blend_low"),
      b_.binary(K::multiply, smooth, freq, "rope.blend_high"), "rope.blend");
  ValueId is_short = b_.compare(wavelength, constant(context / rs.high_freq_factor, "rope.short_limit"), "LT", "rope.is_short");
  ValueId is_long = b_.compare(wavelength, constant(context / rs.low_freq_factor, "rope.long_limit"), "GT", "rope.is_long");
  return b_.select(is_short, freq, b_.select(is_long, divided, blend, "rope.freq_long"), "rope.freq_scaled");
}

ValueId ModelWriter::rms_norm(ValueId x, const std::string& weight_name, const std::string& name) {
  // Over the last dimension: the residual width D of rows [R, D], or head_dim of the heads
  // [R, N, E] of q and k (qk_norm).
  const Shape shape = b_.shape(x);
  const int64_t last = int64_t(shape.size()) - 1, width = shape.back();
  const Shape outer(shape.begin(), shape.end() - 1);
  std::vector<int64_t> outer_dims(outer.size());
  std::iota(outer_dims.begin(), outer_dims.end(), 0);
  b_.note(fmt::format("{}: x * rsqrt(mean(x^2) + eps) * weight", name));
  ValueId w = weight(weight_name, {width});
  ValueId sum = b_.reduce(b_.binary(K::multiply, x, x, name + ".sq"), "add", {last}, name + ".sum");
  ValueId mean = b_.binary(K::divide, sum, b_.constant(double(width), {DType::f32, outer}, name + ".dim"), name + ".mean");
  ValueId eps = b_.constant(double(float(spec_.norm_eps)), {DType::f32, outer}, name + ".eps");
  ValueId var = b_.binary(K::add, mean, eps, name + ".var");
  ValueId inv = b_.unary(K::rsqrt, var, name + ".inv");
  ValueId scaled = b_.binary(K::multiply, b_.broadcast(inv, shape, outer_dims, name + ".inv_rows"), x, name + ".scaled");
  return b_.binary(K::multiply, b_.broadcast(w, shape, {last}, name + ".weight_rows"), scaled, name);
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
  // Each projection: x W^T (+ its bias), as heads [R, N, E] (each head RMS-normed, with
  // qk_norm, for q and k), rotated for q and k.
  auto project = [&](ValueId w, const std::string& bias, const std::string& norm, int64_t heads, const std::string& n) {
    ValueId flat = b_.dot(xn, w, {1}, {1}, p + n + "_flat");
    if (spec_.attention_bias) {
      b_.note(fmt::format("layer {}: {} bias", l, n));
      ValueId bias_rows = b_.broadcast(weight(bias, {heads * E}), {R, heads * E}, {1}, p + n + "_bias_rows");
      flat = b_.binary(K::add, flat, bias_rows, p + n + "_biased");
    }
    const bool rotated = n != "v";
    ValueId h = b_.reshape(flat, {R, heads, E}, p + n + (rotated ? "_heads" : ""));
    if (!rotated) return h;
    if (spec_.qk_norm) h = rms_norm(h, norm, p + n + "_norm");
    return rotate(h, rows.rope, p + n);
  };
  ValueId q = project(wq, weight::bq(l), weight::q_norm(l), H, "q");
  ValueId k = project(wk, weight::bk(l), weight::k_norm(l), KV, "k");
  ValueId v = project(wv, weight::bv(l), "", KV, "v");
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

  const int64_t W = spec_.sliding_window;
  b_.note(W ? fmt::format("layer {}: row r sees cache rows pos[r] - sliding_window < c <= pos[r]", l)
            : fmt::format("layer {}: row r sees cache rows c <= pos[r]", l));
  const ValueId limit = rows.positions;
  ValueId row_pos = b_.broadcast(limit, {R, C}, {0}, p + "row_pos");
  ValueId cache_pos = b_.iota(1, {DType::i32, {R, C}}, p + "cache_pos");
  // With a window: 0 <= pos - c <= W - 1, as min(pos - c, (W - 1) - (pos - c)) >= 0 (one
  // compare, so that no mask needs a logical and). `reach` is W - 1, one constant for the
  // rows' masks and the v rows' below.
  ValueId reach = -1, visible;
  if (W) {
    reach = b_.constant(double(W - 1), {DType::i32, {}}, p + "window_reach");
    ValueId back = b_.binary(K::subtract, row_pos, cache_pos, p + "distance");
    ValueId ahead = b_.binary(K::subtract, b_.broadcast(reach, {R, C}, {}, p + "window_reach_rows"), back, p + "window_left");
    visible = b_.compare(b_.binary(K::minimum, back, ahead, p + "window_slack"), b_.constant(0, {DType::i32, {R, C}}, p + "none"),
                         "GE", p + "visible");
  } else {
    visible = b_.compare(cache_pos, row_pos, "LE", p + "visible");
  }

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
    ValueId v_last = b_.broadcast(last, {C}, {}, p + "v_last");
    ValueId v_pos = b_.iota(0, {DType::i32, {C}}, p + "v_pos");
    ValueId seen;
    if (W) {  // and at or after the first row's window start: min(last - c, c - start) >= 0
      ValueId start = b_.binary(K::subtract, b_.reduce(limit, "min", {0}, p + "first_pos"), reach, p + "v_window_start");
      ValueId before = b_.binary(K::subtract, v_last, v_pos, p + "v_before_last");
      ValueId after = b_.binary(K::subtract, v_pos, b_.broadcast(start, {C}, {}, p + "v_first"), p + "v_after_start");
      seen = b_.compare(b_.binary(K::minimum, before, after, p + "v_slack"), b_.constant(0, {DType::i32, {C}}, p + "v_none"),
                        "GE", p + "v_seen");
    } else {
      seen = b_.compare(v_pos, v_last, "LE", p + "v_seen");
    }
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
