// The oracle: the model computed directly from the brief, in Eigen and in double, with
// no program, no author and no interpreter behind it. It runs every cut, so comparing it
// with the reference checks what the author wrote, not just how the cuts agree.
#pragma once

#include <Eigen/Dense>
#include <memory>

#include "model/cut_runner.h"
#include "model/spec.h"

namespace cutcheck {

class Oracle : public CutRunner {
 public:
  Oracle(ModelSpec spec, TensorMap weights);
  TensorMap run(const Cut& cut, const TensorMap& inputs) override;

 private:
  using Vec = Eigen::VectorXd;
  struct Projections {
    Vec q, k, v;  // [H*E], [K*E], [K*E], rotated where rotary applies
  };
  class Cache;  // one layer's k and v rows, read as double, written as f32

  // The model, piece by piece (model.cpp).
  Vec embed(int32_t token) const;
  Projections project(int64_t layer, const Vec& x, int64_t pos) const;
  Vec attend(const Vec& q, int64_t pos, const Cache& cache) const;
  Vec finish(int64_t layer, const Vec& x, const Vec& attention) const;
  Vec decode_layer(int64_t layer, const Vec& x, int64_t pos, Cache& cache) const;
  std::vector<Vec> prefill_layer(int64_t layer, const std::vector<Vec>& x, int64_t pos, Cache& cache) const;
  Vec logits(const Vec& x) const;

  ModelSpec spec_;
  TensorMap weights_;
};

}  // namespace cutcheck
