// Reductions and contractions: the ops that sum. f32 sums accumulate in double, in
// ascending row-major order of the summed dimensions, and round once at the end.
#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/ieee.h"
#include "reference/index.h"
#include "reference/parallel.h"
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

}  // namespace

void eval_reduce(const Operation& op, Operands in, Tensor& out) {
  const Tensor& a = *in[0];
  const std::string& kind = op.word("kind");
  Split s = split_dims(a.shape(), op.ints("dimensions"));
  if (a.dtype() == DType::f32) {
    if (kind == "add") return fold<float, double>(a, s, out, 0.0, [](double acc, float v) { return acc + v; });
    if (kind == "max") return fold<float, double>(a, s, out, -INFINITY, [](double acc, float v) { return ieee_maximum(acc, v); });
    return fold<float, double>(a, s, out, INFINITY, [](double acc, float v) { return ieee_minimum(acc, v); });
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
  // lhs[batch, lhs_free, c] * rhs[batch, rhs_free, c]: every product exact in double,
  // summed in double in ascending row-major order of c, rounded once.
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

  const float* x = lhs.as<float>().data();
  const float* w = rhs.as<float>().data();
  float* y = out.as_mut<float>().data();
  if (out.elements() == 0) return;

  // One result element: the ordered sum above.
  auto element = [&](int64_t l, int64_t r) {
    double acc = 0.0;
    if (contracted == 1) {
      for (int64_t k = 0; k < terms; ++k) acc += double(x[l + k * con_l[0]]) * double(w[r + k * con_r[0]]);
    } else if (terms > 0) {
      Odometer c(con_size.data(), contracted);
      do acc += double(x[l + offset(c, con_l)]) * double(w[r + offset(c, con_r)]);
      while (c.next());
    }
    return float(acc);
  };

  // The result's last dimension is walked in fours: four ordered sums side by side, each
  // exactly the sum `element` computes, but with their additions free to overlap. Where
  // both operands run contiguously along the contraction (projections, q . k), their rows
  // are first widened to double in a buffer, which the compiler can vectorise.
  const int rank = int(out.type().rank());
  const int64_t n = rank == 0 ? 1 : out.shape().back();
  const int64_t step_l = rank == 0 ? 0 : res_l[size_t(rank - 1)], step_r = rank == 0 ? 0 : res_r[size_t(rank - 1)];
  const bool contiguous = contracted == 1 && con_l[0] == 1 && con_r[0] == 1;
  const int64_t blocks = (n + 3) / 4, rows = out.elements() / n;

  // Blocks [begin, end) of one result row: the row's element j sits at y[row * n + j].
  auto row_blocks = [&](int64_t row, int64_t base_l, int64_t base_r, int64_t begin, int64_t end) {
    thread_local std::vector<double> wide;  // grows once per thread, then is reused
    const bool widened = contiguous && step_l == 0;  // one lhs row for all four: widen it once
    if (widened && wide.size() < size_t(5 * terms)) wide.resize(size_t(5 * terms));
    double* xd = wide.data();
    double* wd = xd + terms;
    if (widened)
      for (int64_t k = 0; k < terms; ++k) xd[k] = double(x[base_l + k]);
    for (int64_t b = begin; b < end; ++b) {
      const int64_t j = 4 * b;
      float* yj = y + row * n + j;
      if (j + 4 > n) {  // the last, partial block
        for (int64_t i = j; i < n; ++i) y[row * n + i] = element(base_l + i * step_l, base_r + i * step_r);
        continue;
      }
      if (widened) {
        for (int i = 0; i < 4; ++i)
          for (int64_t k = 0; k < terms; ++k) wd[i * terms + k] = double(w[base_r + (j + i) * step_r + k]);
        const double *w0 = wd, *w1 = wd + terms, *w2 = wd + 2 * terms, *w3 = wd + 3 * terms;
        double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (int64_t k = 0; k < terms; ++k) {
          a0 += xd[k] * w0[k];
          a1 += xd[k] * w1[k];
          a2 += xd[k] * w2[k];
          a3 += xd[k] * w3[k];
        }
        yj[0] = float(a0), yj[1] = float(a1), yj[2] = float(a2), yj[3] = float(a3);
      } else if (contracted == 1) {
        const int64_t sl = con_l[0], sr = con_r[0];
        const float* xs = x + base_l + j * step_l;
        const float* ws = w + base_r + j * step_r;
        double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (int64_t k = 0; k < terms; ++k) {
          const float* xk = xs + k * sl;
          const float* wk = ws + k * sr;
          a0 += double(xk[0]) * double(wk[0]);
          a1 += double(xk[step_l]) * double(wk[step_r]);
          a2 += double(xk[2 * step_l]) * double(wk[2 * step_r]);
          a3 += double(xk[3 * step_l]) * double(wk[3 * step_r]);
        }
        yj[0] = float(a0), yj[1] = float(a1), yj[2] = float(a2), yj[3] = float(a3);
      } else {
        for (int i = 0; i < 4; ++i) yj[i] = element(base_l + (j + i) * step_l, base_r + (j + i) * step_r);
      }
    }
  };

  // The rows' offsets: row-major over the result's leading dimensions.
  auto bases = [&](int64_t row, int64_t& base_l, int64_t& base_r) {
    base_l = base_r = 0;
    for (int d = rank - 2; d >= 0; --d) {
      const int64_t size = out.shape()[size_t(d)], at = row % size;
      row /= size;
      base_l += at * res_l[size_t(d)];
      base_r += at * res_r[size_t(d)];
    }
  };

  // Threads (when asked for) take rows, or for a single row its blocks.
  const double cost = double(terms) * 4;
  if (rows == 1) {
    int64_t base_l, base_r;
    bases(0, base_l, base_r);
    parallel_for(blocks, cost, [&](int64_t begin, int64_t end) { row_blocks(0, base_l, base_r, begin, end); });
  } else {
    parallel_for(rows, cost * double(blocks), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        int64_t base_l, base_r;
        bases(row, base_l, base_r);
        row_blocks(row, base_l, base_r, 0, blocks);
      }
    });
  }
}

}  // namespace cutcheck
