// Reductions and contractions: the ops that sum. f32 sums accumulate in double, in
// ascending row-major order of the summed dimensions, and round once at the end.
#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/index.h"
#include "reference/kernels.h"

namespace cutcheck {
namespace {

// Splits an operand's dimensions into kept and reduced ones, with their strides.
struct Split {
  int kept = 0, reduced = 0;
  int64_t reduced_count = 1;  // elements summed into each result element
  Index kept_size{}, kept_stride{}, reduced_size{}, reduced_stride{};
};

Split split_dims(const Shape& shape, const std::vector<int64_t>& reduced) {
  Split s;
  Index strides = strides_of(shape);
  for (size_t d = 0; d < shape.size(); ++d) {
    bool r = std::find(reduced.begin(), reduced.end(), int64_t(d)) != reduced.end();
    if (r) {
      s.reduced_size[size_t(s.reduced)] = shape[d];
      s.reduced_count *= shape[d];
      s.reduced_stride[size_t(s.reduced++)] = strides[d];
    } else {
      s.kept_size[size_t(s.kept)] = shape[d];
      s.kept_stride[size_t(s.kept++)] = strides[d];
    }
  }
  // Reduced dimensions are walked in the operand's order, which is ascending row-major.
  return s;
}

int64_t offset(const Odometer& at, const Index& strides) {
  int64_t o = 0;
  for (int i = 0; i < at.rank; ++i) o += at.at[size_t(i)] * strides[size_t(i)];
  return o;
}

// out[kept] = fold(combine, identity, operand[kept, reduced...]).
template <class T, class Acc, class Combine>
void fold(const Tensor& a, const Split& s, Tensor& out, Acc identity, Combine combine) {
  auto x = a.as<T>();
  auto y = out.as_mut<T>();
  Odometer kept(s.kept_size.data(), s.kept);
  size_t o = 0;
  if (y.empty()) return;
  do {
    int64_t base = offset(kept, s.kept_stride);
    Acc acc = identity;
    if (s.reduced_count > 0) {
      Odometer red(s.reduced_size.data(), s.reduced);
      do acc = combine(acc, x[size_t(base + offset(red, s.reduced_stride))]);
      while (red.next());
    }
    y[o++] = T(acc);
  } while (kept.next());
}

double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : a > b ? a : b; }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : a < b ? a : b; }

}  // namespace

void eval_reduce(const Operation& op, Operands in, Tensor& out) {
  const Tensor& a = *in[0];
  const std::string& kind = op.word("kind");
  Split s = split_dims(a.shape(), op.ints("dimensions"));
  if (a.dtype() == DType::f32) {
    if (kind == "add") return fold<float, double>(a, s, out, 0.0, [](double acc, float v) { return acc + v; });
    if (kind == "max") return fold<float, double>(a, s, out, -INFINITY, [](double acc, float v) { return nan_max(acc, v); });
    return fold<float, double>(a, s, out, INFINITY, [](double acc, float v) { return nan_min(acc, v); });
  }
  using I = int32_t;
  if (kind == "add")  // wraps around, as i32 addition does
    return fold<I, uint32_t>(a, s, out, 0u, [](uint32_t acc, I v) { return acc + uint32_t(v); });
  if (kind == "max")
    return fold<I, I>(a, s, out, std::numeric_limits<I>::min(), [](I acc, I v) { return v > acc ? v : acc; });
  return fold<I, I>(a, s, out, std::numeric_limits<I>::max(), [](I acc, I v) { return v < acc ? v : acc; });
}

void eval_dot_general(const Operation& op, Operands in, Tensor& out) {
  // result[batch..., lhs_free..., rhs_free...] = sum over the contracting indices c of
  // lhs[batch, lhs_free, c] * rhs[batch, rhs_free, c], summed in double.
  const Tensor &lhs = *in[0], &rhs = *in[1];
  const auto &lb = op.ints("lhs_batching_dimensions"), &rb = op.ints("rhs_batching_dimensions");
  const auto &lc = op.ints("lhs_contracting_dimensions"), &rc = op.ints("rhs_contracting_dimensions");
  const Index ls = strides_of(lhs.shape()), rs = strides_of(rhs.shape());

  // Strides of each result dimension in lhs and in rhs (0 where it does not index one).
  Index res_l{}, res_r{};
  size_t d = 0;
  for (size_t i = 0; i < lb.size(); ++i, ++d) {
    res_l[d] = ls[size_t(lb[i])];
    res_r[d] = rs[size_t(rb[i])];
  }
  auto is_used = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t dim) {
    return std::find(a.begin(), a.end(), dim) != a.end() || std::find(b.begin(), b.end(), dim) != b.end();
  };
  for (int64_t i = 0; i < lhs.type().rank(); ++i)
    if (!is_used(lb, lc, i)) res_l[d++] = ls[size_t(i)];
  for (int64_t i = 0; i < rhs.type().rank(); ++i)
    if (!is_used(rb, rc, i)) res_r[d++] = rs[size_t(i)];

  Index con_size{}, con_l{}, con_r{};
  for (size_t i = 0; i < lc.size(); ++i) {
    con_size[i] = lhs.shape()[size_t(lc[i])];
    con_l[i] = ls[size_t(lc[i])];
    con_r[i] = rs[size_t(rc[i])];
  }
  const int contracted = int(lc.size());
  int64_t terms = 1;
  for (int i = 0; i < contracted; ++i) terms *= con_size[size_t(i)];

  auto x = lhs.as<float>();
  auto w = rhs.as<float>();
  auto y = out.as_mut<float>();
  if (y.empty()) return;
  Odometer res(out.shape());
  size_t o = 0;
  do {
    const int64_t lhs_at = offset(res, res_l), rhs_at = offset(res, res_r);
    double acc = 0.0;
    if (contracted == 1) {
      const int64_t sl = con_l[0], sr = con_r[0];
      for (int64_t k = 0; k < terms; ++k)
        acc += double(x[size_t(lhs_at + k * sl)]) * double(w[size_t(rhs_at + k * sr)]);
    } else if (terms > 0) {
      Odometer c(con_size.data(), contracted);
      do acc += double(x[size_t(lhs_at + offset(c, con_l))]) * double(w[size_t(rhs_at + offset(c, con_r))]);
      while (c.next());
    }
    y[o++] = float(acc);
  } while (res.next());
}

}  // namespace cutcheck
