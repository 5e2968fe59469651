// The model as the brief states it, in llama2.c's order: RMSNorm, q/k/v (plus their
// biases, then each q and k head RMS-normed, where the spec's knobs say so), rotary, the
// cache write, grouped-query attention over positions 0..pos, the output projection, the
// residual, RMSNorm, SwiGLU, the residual; then the final norm and the classifier.
// Everything is double; weights and caches are read from their f32 tensors.
#include <cmath>

#include "model/weights.h"
#include "oracle/cache.h"
#include "oracle/oracle.h"

namespace cutcheck {
namespace {

using Vec = Eigen::VectorXd;
using Weights = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

Weights matrix(const TensorMap& w, const std::string& name) {
  const Tensor& t = w.at(name);
  return Weights(t.as<float>().data(), t.shape()[0], t.shape()[1]);
}

Vec vector(const TensorMap& w, const std::string& name) {
  const Tensor& t = w.at(name);
  return Eigen::Map<const Eigen::VectorXf>(t.as<float>().data(), t.elements()).cast<double>();
}

// y = W x, W stored [out, in].
Vec matvec(const Weights& w, const Vec& x) {
  Vec y(w.rows());
  for (Eigen::Index i = 0; i < w.rows(); ++i) y[i] = w.row(i).cast<double>().dot(x);
  return y;
}

// x * weight / sqrt(mean(x^2) + eps)
Vec rms_norm(const Vec& x, const Vec& weight, double eps) {
  return weight.cwiseProduct(x / std::sqrt(x.squaredNorm() / double(x.size()) + eps));
}

// Rotates each head of `v` by pos * freq_i on its pairs: (2i, 2i+1) for interleaved,
// (i, i + E/2) for half. freq_i = theta^(-2i / E), rescaled by rope_scaling
// (rope_frequency, model/spec.h, writes out the published rules).
void rotate(Vec& v, int64_t heads, int64_t pos, const ModelSpec& spec) {
  const int64_t E = spec.head_dim;
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < E / 2; ++i) {
      double angle = double(pos) * rope_frequency(spec, i);
      int64_t a = h * E + (spec.rope_style == RopeStyle::interleaved ? 2 * i : i);
      int64_t b = h * E + (spec.rope_style == RopeStyle::interleaved ? 2 * i + 1 : i + E / 2);
      double x0 = v[a], x1 = v[b];
      v[a] = x0 * std::cos(angle) - x1 * std::sin(angle);
      v[b] = x0 * std::sin(angle) + x1 * std::cos(angle);
    }
  }
}

Vec silu(const Vec& x) { return x.array() / (1.0 + (-x.array()).exp()); }

}  // namespace

Vec Oracle::embed(int32_t token) const {
  return matrix(weights_, weight::embedding()).row(token).cast<double>().transpose();
}

Oracle::Projections Oracle::project(int64_t l, const Vec& x, int64_t pos) const {
  Vec xn = rms_norm(x, vector(weights_, weight::attention_norm(l)), spec_.norm_eps);
  Projections p{matvec(matrix(weights_, weight::wq(l)), xn), matvec(matrix(weights_, weight::wk(l)), xn),
                matvec(matrix(weights_, weight::wv(l)), xn)};
  if (spec_.attention_bias) {
    p.q += vector(weights_, weight::bq(l));
    p.k += vector(weights_, weight::bk(l));
    p.v += vector(weights_, weight::bv(l));
  }
  if (spec_.qk_norm) {  // each head of q and k on its own, before rotary
    const int64_t E = spec_.head_dim;
    const Vec qw = vector(weights_, weight::q_norm(l)), kw = vector(weights_, weight::k_norm(l));
    for (int64_t h = 0; h < spec_.heads; ++h) p.q.segment(h * E, E) = rms_norm(p.q.segment(h * E, E), qw, spec_.norm_eps);
    for (int64_t h = 0; h < spec_.kv_heads; ++h) p.k.segment(h * E, E) = rms_norm(p.k.segment(h * E, E), kw, spec_.norm_eps);
  }
  rotate(p.q, spec_.heads, pos, spec_);
  rotate(p.k, spec_.kv_heads, pos, spec_);
  return p;
}

// softmax(q_h . k_c / sqrt(E)) over c = 0..pos (over pos - W < c <= pos with a sliding
// window W), then the weighted sum of v_c, per query head h, which reads kv head
// h / (heads / kv_heads).
Vec Oracle::attend(const Vec& q, int64_t pos, const Cache& cache) const {
  const int64_t E = spec_.head_dim, group = spec_.heads / spec_.kv_heads;
  const int64_t first = spec_.sliding_window > 0 ? std::max<int64_t>(0, pos - spec_.sliding_window + 1) : 0;
  Vec out = Vec::Zero(spec_.heads * E);
  for (int64_t h = 0; h < spec_.heads; ++h) {
    const int64_t kv = h / group;
    Vec scores(pos + 1 - first);
    for (int64_t c = first; c <= pos; ++c)
      scores[c - first] = q.segment(h * E, E).dot(cache.k(c).segment(kv * E, E)) / std::sqrt(double(E));
    Vec weights = (scores.array() - scores.maxCoeff()).exp();
    weights /= weights.sum();
    for (int64_t c = first; c <= pos; ++c) out.segment(h * E, E) += weights[c - first] * cache.v(c).segment(kv * E, E);
  }
  return out;
}

// The output projection and residual, then SwiGLU w2(silu(w1 x) * w3 x) and its residual.
Vec Oracle::finish(int64_t l, const Vec& x, const Vec& attention) const {
  Vec mid = x + matvec(matrix(weights_, weight::wo(l)), attention);
  Vec xn = rms_norm(mid, vector(weights_, weight::ffn_norm(l)), spec_.norm_eps);
  Vec hidden = silu(matvec(matrix(weights_, weight::w1(l)), xn)).cwiseProduct(matvec(matrix(weights_, weight::w3(l)), xn));
  return mid + matvec(matrix(weights_, weight::w2(l)), hidden);
}

// A decode row at pos writes its k, v at cache row pos and attends to rows 0..pos.
Vec Oracle::decode_layer(int64_t l, const Vec& x, int64_t pos, Cache& cache) const {
  Projections p = project(l, x, pos);
  cache.store(pos, p.k, p.v);
  return finish(l, x, attend(p.q, pos, cache));
}

// Prefill rows sit at pos, pos + 1, ...: all write their k, v first, then row i attends
// to rows 0..pos+i.
std::vector<Vec> Oracle::prefill_layer(int64_t l, const std::vector<Vec>& x, int64_t pos, Cache& cache) const {
  std::vector<Projections> p;
  for (size_t i = 0; i < x.size(); ++i) {
    p.push_back(project(l, x[i], pos + int64_t(i)));
    cache.store(pos + int64_t(i), p[i].k, p[i].v);
  }
  std::vector<Vec> out;
  for (size_t i = 0; i < x.size(); ++i) out.push_back(finish(l, x[i], attend(p[i].q, pos + int64_t(i), cache)));
  return out;
}

Vec Oracle::logits(const Vec& x) const {
  Vec xn = rms_norm(x, vector(weights_, weight::final_norm()), spec_.norm_eps);
  return matvec(matrix(weights_, weight::head(spec_)), xn);
}

}  // namespace cutcheck
