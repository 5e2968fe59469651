#include "reference/terms.h"

#include <algorithm>

#include "reference/index.h"

namespace cutcheck {
namespace {

// The dimensions below `rank` in neither `a` nor `b`, in order.
std::vector<int64_t> others(int64_t rank, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(a.begin(), a.end(), d) == a.end() && std::find(b.begin(), b.end(), d) == b.end()) out.push_back(d);
  return out;
}

// Offsets of every multi-index over `dims` of a tensor with `strides`, row-major.
std::vector<int64_t> offsets(const Shape& shape, const Index& strides, const std::vector<int64_t>& dims) {
  Shape sizes;
  for (int64_t d : dims) sizes.push_back(shape[size_t(d)]);
  std::vector<int64_t> out;
  if (element_count(sizes) == 0) return out;
  Odometer at(sizes);
  do {
    int64_t o = 0;
    for (size_t i = 0; i < dims.size(); ++i) o += at.at[i] * strides[size_t(dims[i])];
    out.push_back(o);
  } while (at.next());
  return out;
}

}  // namespace

Terms dot_terms(const Operation& op, const Shape& lhs, const Shape& rhs) {
  const auto &lb = op.ints("lhs_batching_dimensions"), &rb = op.ints("rhs_batching_dimensions");
  const auto &lc = op.ints("lhs_contracting_dimensions"), &rc = op.ints("rhs_contracting_dimensions");
  const Index ls = strides_of(lhs), rs = strides_of(rhs);
  const std::vector<int64_t> batch_l = offsets(lhs, ls, lb), batch_r = offsets(rhs, rs, rb);
  const std::vector<int64_t> free_l = offsets(lhs, ls, others(int64_t(lhs.size()), lb, lc));
  const std::vector<int64_t> free_r = offsets(rhs, rs, others(int64_t(rhs.size()), rb, rc));
  Terms t;
  for (size_t b = 0; b < batch_l.size(); ++b)
    for (int64_t fl : free_l)
      for (int64_t fr : free_r) {
        t.base_l.push_back(batch_l[b] + fl);
        t.base_r.push_back(batch_r[b] + fr);
      }
  t.step_l = offsets(lhs, ls, lc);
  t.step_r = offsets(rhs, rs, rc);
  return t;
}

Terms reduce_terms(const Operation& op, const Shape& operand) {
  const Index s = strides_of(operand);
  const auto& reduced = op.ints("dimensions");
  Terms t;
  t.base_l = offsets(operand, s, others(int64_t(operand.size()), reduced, {}));
  t.step_l = offsets(operand, s, reduced);
  return t;
}

}  // namespace cutcheck
