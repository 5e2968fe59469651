// The part of an output that only its last product can move. An output computed as
// x . W^T, with W a weight of n rows and d < n columns (the logits: W the head, n the
// vocabulary, d the model's width), lies row by row in the span of W's d columns, wherever
// the layers before left x: a correct backend's logits are W^T applied to its own x, plus
// the rounding of that one product. Projected off the span, a backend's deviation from the
// reference keeps only that rounding, so it can be held as tightly as one op is, however far
// the layers' errors have moved x. A logit corrupted alone (one token's shifted, a tile of
// the vocabulary written wrong, a bias added) lands mostly off the span and is caught there
// even where the layers' errors, which move every logit along the span, hide it among the
// logits' own allowances.
//
// Soundness does not rest on the span: the projection is a fixed linear map, applied to the
// perturbed runs' deviations as to the backend's, and the bound of the projected deviation
// is drawn from the runs exactly as every output's is (bound/error_bound.h). The span only
// decides how sharp the check is. docs/numerics.md measures both.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "program/program.h"

namespace cutcheck {

class OffSpan {
 public:
  // The projection off the span of a product's f32 weight of rank 2, contracted over its
  // dimension `contracting` (of size d; the other, n > d, is the output's last).
  OffSpan(const Tensor& weight, int contracting);
  int64_t width() const { return n_; }
  // The part of each row of `deviation` (its last dimension, n wide) off the span, in f32;
  // a row with an element that is not finite is NaN throughout (no part of it is known).
  Tensor project(const Tensor& deviation) const;
  // The same, of got - want.
  Tensor project_difference(const Tensor& got, const Tensor& want) const;

 private:
  int64_t n_ = 0, d_ = 0;
  std::vector<double> basis_;  // n x d, row-major: orthonormal columns spanning the weight's
  Tensor project_rows(const Shape& shape, const std::function<double(size_t)>& element) const;
};

// An output checked off its weight's span: the projection, and the bound of every element
// of the projected deviation (the output's shape).
struct SpanCheck {
  std::shared_ptr<const OffSpan> span;
  Tensor bound;
};

// The weight whose span an output lies in, when the output is such a product (through
// reshapes that keep its last dimension) with a weight read as it is or converted to f32,
// of more rows than columns, and small enough to factor (n d^2 at most about 2^32 multiply-
// adds: a vocabulary of 128k over a width of 2,048 is past it, and its logits are held
// element by element alone).
struct SpanWeight {
  ValueId value;    // the product's rhs: the weight, or its conversion to f32
  int contracting;  // the dimension of it the product contracts
};
std::optional<SpanWeight> span_weight(const Program& program, const std::string& output);

}  // namespace cutcheck
