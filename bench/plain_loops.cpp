#include "bench/plain_loops.h"

#include <cmath>

#include "model/weights.h"

namespace cutcheck::bench {
namespace {

void rmsnorm(float* o, const float* x, const float* weight, int64_t size, float eps) {
  float ss = 0.0f;
  for (int64_t j = 0; j < size; j++) ss += x[j] * x[j];
  ss /= float(size);
  ss += eps;
  ss = 1.0f / std::sqrt(ss);
  for (int64_t j = 0; j < size; j++) o[j] = weight[j] * (ss * x[j]);
}

void softmax(float* x, int64_t size) {
  float max_val = x[0];
  for (int64_t i = 1; i < size; i++)
    if (x[i] > max_val) max_val = x[i];
  float sum = 0.0f;
  for (int64_t i = 0; i < size; i++) {
    x[i] = std::exp(x[i] - max_val);
    sum += x[i];
  }
  for (int64_t i = 0; i < size; i++) x[i] /= sum;
}

// xout[d] = W[d, n] x[n]
void matmul(float* xout, const float* x, const float* w, int64_t n, int64_t d) {
  for (int64_t i = 0; i < d; i++) {
    float val = 0.0f;
    for (int64_t j = 0; j < n; j++) val += w[i * n + j] * x[j];
    xout[i] = val;
  }
}

}  // namespace

PlainDecoder::PlainDecoder(const ModelSpec& spec, const TensorMap& weights, int64_t ctx)
    : spec_(spec), weights_(weights), ctx_(ctx) {
  x_.resize(size_t(spec.dim));
  xb_.resize(size_t(std::max(spec.dim, spec.q_width())));
  xb2_.resize(size_t(spec.dim));
  hb_.resize(size_t(spec.ffn));
  hb2_.resize(size_t(spec.ffn));
  q_.resize(size_t(spec.q_width()));
  att_.resize(size_t(spec.heads * ctx));
  logits_.resize(size_t(spec.vocab));
  key_cache_.resize(size_t(spec.layers * ctx * spec.kv_width()));
  value_cache_.resize(key_cache_.size());
}

const std::vector<float>& PlainDecoder::forward(int32_t token, int64_t pos) {
  const ModelSpec& p = spec_;
  const int64_t dim = p.dim, kv_dim = p.kv_width(), q_dim = p.q_width(), hs = p.head_dim;
  const int64_t kv_mul = p.heads / p.kv_heads;
  const float eps = float(p.norm_eps);
  float* x = x_.data();
  std::copy_n(w(weight::embedding()) + token * dim, dim, x);

  for (int64_t l = 0; l < p.layers; l++) {
    rmsnorm(xb_.data(), x, w(weight::attention_norm(l)), dim, eps);
    float* k = key_cache_.data() + (l * ctx_ + pos) * kv_dim;
    float* v = value_cache_.data() + (l * ctx_ + pos) * kv_dim;
    matmul(q_.data(), xb_.data(), w(weight::wq(l)), dim, q_dim);
    matmul(k, xb_.data(), w(weight::wk(l)), dim, kv_dim);
    matmul(v, xb_.data(), w(weight::wv(l)), dim, kv_dim);
    // Rotary: pair j of each head turns by pos / theta^(2j / head_size).
    for (int64_t h = 0; h < p.heads; h++) {
      for (int64_t j = 0; j < hs / 2; j++) {
        float freq = 1.0f / std::pow(float(p.rope_theta), float(2 * j) / float(hs));
        float val = float(pos) * freq, fcr = std::cos(val), fci = std::sin(val);
        const bool interleaved = p.rope_style == RopeStyle::interleaved;
        int64_t a = h * hs + (interleaved ? 2 * j : j), b = h * hs + (interleaved ? 2 * j + 1 : j + hs / 2);
        for (float* vec : {q_.data(), h < p.kv_heads ? k : nullptr}) {
          if (!vec) continue;
          float v0 = vec[a], v1 = vec[b];
          vec[a] = v0 * fcr - v1 * fci;
          vec[b] = v0 * fci + v1 * fcr;
        }
      }
    }
    for (int64_t h = 0; h < p.heads; h++) {
      const float* qh = q_.data() + h * hs;
      float* att = att_.data() + h * ctx_;
      for (int64_t t = 0; t <= pos; t++) {
        const float* kt = key_cache_.data() + (l * ctx_ + t) * kv_dim + (h / kv_mul) * hs;
        float score = 0.0f;
        for (int64_t i = 0; i < hs; i++) score += qh[i] * kt[i];
        att[t] = score / std::sqrt(float(hs));
      }
      softmax(att, pos + 1);
      float* xb = xb_.data() + h * hs;
      std::fill_n(xb, hs, 0.0f);
      for (int64_t t = 0; t <= pos; t++) {
        const float* vt = value_cache_.data() + (l * ctx_ + t) * kv_dim + (h / kv_mul) * hs;
        for (int64_t i = 0; i < hs; i++) xb[i] += att[t] * vt[i];
      }
    }
    matmul(xb2_.data(), xb_.data(), w(weight::wo(l)), q_dim, dim);
    for (int64_t i = 0; i < dim; i++) x[i] += xb2_[size_t(i)];
    rmsnorm(xb_.data(), x, w(weight::ffn_norm(l)), dim, eps);
    matmul(hb_.data(), xb_.data(), w(weight::w1(l)), dim, p.ffn);
    matmul(hb2_.data(), xb_.data(), w(weight::w3(l)), dim, p.ffn);
    for (int64_t i = 0; i < p.ffn; i++) {
      float val = hb_[size_t(i)];
      val *= (1.0f / (1.0f + std::exp(-val)));
      hb_[size_t(i)] = val * hb2_[size_t(i)];
    }
    matmul(xb_.data(), hb_.data(), w(weight::w2(l)), p.ffn, dim);
    for (int64_t i = 0; i < dim; i++) x[i] += xb_[size_t(i)];
  }
  rmsnorm(x, x, w(weight::final_norm()), dim, eps);
  matmul(logits_.data(), x, w(weight::head(p)), dim, p.vocab);
  return logits_;
}

}  // namespace cutcheck::bench
