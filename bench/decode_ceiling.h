// A yardstick for the reference's decode: the same arithmetic with nothing in its way.
// What the reference loses against it is at least partly the weights' layout (and the
// interpreter's ops and joins); what the ceiling itself loses against reading the weights
// once is the arithmetic that the reads do not hide, on this kernel at least.
//
// Every matrix of the weights is copied beforehand into panels of 32 columns, each term's
// 32 columns side by side, so that the kernel transposes nothing and each thread reads one
// sequential stream. A pass multiplies every matrix by one vector, each column's sum in
// double from +0.0, its terms in ascending order (docs/numerics.md), 32 sums in flight.
// Nothing else: no other op, no wait between matrices. The reference cannot read weights
// laid out like this without a second copy of them (twice the memory it holds), which is
// why this is a benchmark and not a kernel.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace cutcheck::bench {

class DecodeCeiling {
 public:
  // Copies every two-dimensional f32 or bf16 weight [N, K]: its N rows are the columns
  // summed, each over its K terms.
  explicit DecodeCeiling(const TensorMap& weights);

  // Why this machine cannot run the ceiling (it needs AVX-512F, BW and DQ); empty if it can.
  static std::string unsupported();

  // Seconds for one pass over every matrix on `threads` threads.
  double pass_seconds(int threads);

  // Whether the last pass's sums equal the definition's bits, computed in plain loops over
  // the weights as stored, at every column of the first and the last panel of every matrix;
  // false when there is no matrix to check.
  bool agrees_with_definition() const;

 private:
  struct Matrix {
    const Tensor* weight;
    Tensor packed;                // [panels, K, 32] of the weight's type, zero columns past N
    std::vector<double> x, sums;  // x: K terms; sums: panels x 32
    int64_t panels() const { return packed.shape()[0]; }
    int64_t K() const { return packed.shape()[1]; }
  };
  std::vector<Matrix> matrices_;
  std::vector<std::pair<size_t, int64_t>> work_;  // (matrix, panel): what threads take in turn
  double work_cost_ = 0;                          // the elements of one, on average (parallel_for)
};

}  // namespace cutcheck::bench
