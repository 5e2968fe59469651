// One layer's kv cache as the oracle sees it: [C, K, E] rows, read as double and
// written as f32 into the tensors it was given (which share their bytes with the
// caller's), so rows it never writes pass through unchanged.
#pragma once

#include <Eigen/Dense>

#include "core/tensor.h"
#include "oracle/oracle.h"

namespace cutcheck {

class Oracle::Cache {
 public:
  // Writable [C, K, E] tensors, or [R, C, K, E] with `row` choosing one row's cache.
  Cache(Tensor k, Tensor v, int64_t row = 0);
  // An empty cache of one position (Forward).
  explicit Cache(int64_t width);

  Eigen::VectorXd k(int64_t pos) const { return read(k_, pos); }
  Eigen::VectorXd v(int64_t pos) const { return read(v_, pos); }
  void store(int64_t pos, const Eigen::VectorXd& k, const Eigen::VectorXd& v);

 private:
  Eigen::VectorXd read(const Tensor& t, int64_t pos) const;

  Tensor k_, v_;  // share their bytes with the caller's tensors
  int64_t base_, width_;  // first element of the chosen row's cache; K * E
};

}  // namespace cutcheck
