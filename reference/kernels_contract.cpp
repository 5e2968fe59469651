// Reductions and contractions: the ops that sum. f32 sums accumulate in double, in
// ascending row-major order of the summed dimensions, and round once at the end.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "core/ieee.h"
#include "quant/dequantize.h"
#include "reference/contract_tile.h"
#include "reference/index.h"
#include "reference/kernels.h"
#include "reference/parallel.h"

namespace cutcheck {
namespace {

// Splits an operand's dimensions into kept and reduced ones, with their strides.
struct Split {
  int kept = 0, reduced = 0;
  int64_t reduced_count = 1;  // elements summed into each result element
  bool trailing = true;       // the reduced dimensions are the operand's last ones
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
      s.trailing = s.trailing && s.reduced == 0;
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
  if (s.trailing) {
    // The same fold without the index walk: when the reduced dimensions are the last
    // ones, result element o's terms are the reduced_count elements from o * reduced_count
    // on, in memory in ascending row-major order of the reduced indices, and result
    // elements follow in row-major order of the kept ones. Eight result elements are
    // folded side by side (each still taking its own terms in order), so that their
    // chains of additions overlap.
    const size_t n = size_t(s.reduced_count);
    constexpr size_t side = 8;
    for (; o < y.size(); o += side) {
      const size_t count = std::min(side, y.size() - o);
      Acc acc[side];
      std::fill_n(acc, side, identity);
      const T* terms = x.data() + o * n;
      if (count == side) {
        for (size_t i = 0; i < n; ++i)
          for (size_t r = 0; r < side; ++r) acc[r] = combine(acc[r], terms[r * n + i]);
      } else {
        for (size_t r = 0; r < count; ++r)
          for (size_t i = 0; i < n; ++i) acc[r] = combine(acc[r], terms[r * n + i]);
      }
      for (size_t r = 0; r < count; ++r) y[o + r] = T(acc[r]);
    }
    return;
  }
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

// f32 max or min over the last dimensions, as `fold` with ieee_maximum (ieee_minimum)
// computes it, without a branch per term. That fold's result does not depend on the
// order of the terms: NaN (the one NAN ieee_maximum returns) if any term is NaN, else the
// greatest term, +0 above -0, or the identity when there are none. So each row is taken
// in whatever order vectorises: the greatest key of f32_order_key (which orders -0
// below +0), and whether a NaN was seen.
template <bool greatest>
void extreme_trailing(std::span<const float> x, std::span<float> y, size_t n) {
  const int32_t identity = f32_order_key(greatest ? -INFINITY : INFINITY);
  const float nan = float(greatest ? ieee_maximum(NAN, 0.0) : ieee_minimum(NAN, 0.0));
  for (size_t o = 0; o < y.size(); ++o) {
    const float* terms = x.data() + o * n;
    int32_t best = identity;
    int32_t any_nan = 0;
    for (size_t i = 0; i < n; ++i) {
      int32_t bits;
      std::memcpy(&bits, &terms[i], sizeof bits);
      const int32_t key = f32_order_key(bits);
      best = greatest ? std::max(best, key) : std::min(best, key);
      any_nan |= int32_t((bits & 0x7fffffff) > 0x7f800000);
    }
    const int32_t result = f32_order_key(best);
    float value;
    std::memcpy(&value, &result, sizeof value);
    y[o] = any_nan ? nan : value;
  }
}

}  // namespace

void eval_reduce(const Operation& op, Operands in, Tensor& out) {
  const Tensor& a = *in[0];
  const std::string& kind = op.word("kind");
  Split s = split_dims(a.shape(), op.ints("dimensions"));
  if (a.dtype() == DType::f32) {
    if (kind == "add") return fold<float, double>(a, s, out, 0.0, [](double acc, float v) { return acc + v; });
    if (s.trailing && (kind == "max" || kind == "min")) {
      const size_t n = size_t(s.reduced_count);
      if (kind == "max") return extreme_trailing<true>(a.as<float>(), out.as_mut<float>(), n);
      return extreme_trailing<false>(a.as<float>(), out.as_mut<float>(), n);
    }
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

// ---- dot_general ------------------------------------------------------------------------
//
// result[batch..., lhs_free..., rhs_free...] = sum over the contracting indices c of
// lhs[batch, lhs_free, c] * rhs[batch, rhs_free, c]: every product exact in double,
// summed in double in ascending row-major order of c, starting from 0, rounded once.

namespace {

// Each result dimension's stride in lhs and in rhs (0 where it does not index one), and
// the contracting dimensions' sizes and strides: what both implementations walk.
struct DotLayout {
  int rank = 0, batch = 0, lhs_free = 0, rhs_free = 0, contracted = 0;
  Index out_size{}, res_l{}, res_r{}, con_size{}, con_l{}, con_r{};
};

DotLayout dot_layout(const Operation& op, const TensorType& lhs, const TensorType& rhs, const TensorType& out) {
  const auto &lb = op.ints("lhs_batching_dimensions"), &rb = op.ints("rhs_batching_dimensions");
  const auto &lc = op.ints("lhs_contracting_dimensions"), &rc = op.ints("rhs_contracting_dimensions");
  const Index ls = strides_of(lhs.shape), rs = strides_of(rhs.shape);
  auto listed = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t dim) {
    return std::find(a.begin(), a.end(), dim) != a.end() || std::find(b.begin(), b.end(), dim) != b.end();
  };
  DotLayout g;
  g.rank = int(out.rank());
  for (int d = 0; d < g.rank; ++d) g.out_size[size_t(d)] = out.shape[size_t(d)];
  size_t d = 0;
  for (size_t i = 0; i < lb.size(); ++i, ++d, ++g.batch) {
    g.res_l[d] = ls[size_t(lb[i])];
    g.res_r[d] = rs[size_t(rb[i])];
  }
  for (int64_t i = 0; i < lhs.rank(); ++i)
    if (!listed(lb, lc, i)) g.res_l[d++] = ls[size_t(i)], ++g.lhs_free;
  for (int64_t i = 0; i < rhs.rank(); ++i)
    if (!listed(rb, rc, i)) g.res_r[d++] = rs[size_t(i)], ++g.rhs_free;
  g.contracted = int(lc.size());
  for (size_t i = 0; i < lc.size(); ++i) {
    g.con_size[i] = lhs.shape[size_t(lc[i])];
    g.con_l[i] = ls[size_t(lc[i])];
    g.con_r[i] = rs[size_t(rc[i])];
  }
  return g;
}

// The offsets of a block of dimensions, in row-major order of their indices, into `out`
// (whose storage is reused from call to call).
void offsets_of(const int64_t* sizes, const int64_t* strides, int n, std::vector<int64_t>& out) {
  // Dimension by dimension: each offset of the outer dimensions is followed by its steps
  // along the next one, which is row-major order. Filled in place from the back, so every
  // entry is read before its place is written.
  out.assign(1, 0);
  for (int i = 0; i < n; ++i) {
    const size_t outer = out.size(), size = size_t(sizes[i]);
    out.resize(outer * size);
    for (size_t a = outer; a-- > 0 && size > 0;) {
      const int64_t base = out[a];
      for (size_t j = size; j-- > 0;) out[a * size + j] = base + int64_t(j) * strides[i];
    }
  }
}

// The fast kernel's view of a dot_general: a batch of matrix products
//   y[b, m, n] = sum_k lhs[bl[b] + ml[m] + kl[k]] * rhs[br[b] + nr[n] + kr[k]].
struct Gemm {
  std::vector<int64_t> bl, br, ml, nr, kl, kr;
  int64_t kl_step = 0, kr_step = 0;  // the terms' spacing where even (one contracting dimension), else 0
  bool nr_consecutive = false;       // nr[n] = nr[0] + n: the rhs columns lie side by side
  int64_t batches = 0, M = 0, N = 0, K = 0;
};

// The view of `g`, in a Gemm kept per thread so that its lists allocate only to grow.
const Gemm& gemm_of(const DotLayout& g) {
  thread_local Gemm m;
  offsets_of(g.out_size.data(), g.res_l.data(), g.batch, m.bl);
  offsets_of(g.out_size.data(), g.res_r.data(), g.batch, m.br);
  offsets_of(g.out_size.data() + g.batch, g.res_l.data() + g.batch, g.lhs_free, m.ml);
  const int n0 = g.batch + g.lhs_free;
  offsets_of(g.out_size.data() + n0, g.res_r.data() + n0, g.rhs_free, m.nr);
  offsets_of(g.con_size.data(), g.con_l.data(), g.contracted, m.kl);
  offsets_of(g.con_size.data(), g.con_r.data(), g.contracted, m.kr);
  m.batches = int64_t(m.bl.size()), m.M = int64_t(m.ml.size()), m.N = int64_t(m.nr.size());
  m.K = int64_t(m.kl.size());
  m.kl_step = m.kr_step = 0;
  if (g.contracted == 1) m.kl_step = g.con_l[0], m.kr_step = g.con_r[0];
  m.nr_consecutive = true;
  for (int64_t n = 1; n < m.N && m.nr_consecutive; ++n) m.nr_consecutive = m.nr[size_t(n)] == m.nr[0] + n;
  return m;
}

// The blocking: a job is up to MC rows by up to NC columns of one batch, its sums kept in
// double while KC terms at a time are added; inside a job, a packed rhs panel of `width`
// columns stays in L1 while the packed lhs rows stream past it from L2.
constexpr int64_t MC = 32 * tile_rows_max, NC = 256, KC = 128;

// Widens operand elements to double into a packed block: dst[k * lanes + i] for i below
// `valid` from src + base[i] + koff[k], zero beyond. `step` is the distance between
// consecutive terms where they are evenly spaced (one contracting dimension), else 0;
// consecutive f32 terms (step 1, the projections) take the tile kernel's own packing.
// T is float, or uint16_t for the bits of bf16 values (widen_term).
template <class T>
void pack(const TileKernel& tile, const T* src, const int64_t* base, int valid, int lanes, const int64_t* koff,
          int64_t step, int64_t kc, double* dst) {
  if constexpr (std::is_same_v<T, float>)
    if (step == 1) {
      int64_t at[tile_width_max];
      for (int i = 0; i < valid; ++i) at[i] = base[i] + koff[0];
      return tile.pack_rows(src, at, valid, lanes, kc, dst);
    }
  // Term by term, so that each term's row of the block is written in one run (and read
  // in one where the operand's lanes are consecutive, as v's columns are).
  for (int64_t k = 0; k < kc; ++k) {
    const int64_t at = step > 0 ? koff[0] + k * step : koff[k];
    double* row = dst + k * lanes;
    for (int i = 0; i < valid; ++i) row[i] = double(widen_term(src[base[i] + at]));
    for (int i = valid; i < lanes; ++i) row[i] = 0.0;
  }
}

// Rows [m0, m0 + mc) by columns [n0, n0 + nc) of batch b.
template <class T>
void gemm_job(const TileKernel& tile, const Gemm& g, const float* x, const T* w, float* y, int64_t b,
              int64_t m0, int64_t mc, int64_t n0, int64_t nc) {
  const int width = tile.width;
  const int64_t panels = (nc + width - 1) / width, ldc = panels * width;
  const int64_t tiles = (mc + tile_rows_max - 1) / tile_rows_max;
  thread_local std::vector<double> acc, a_pack, b_pack;  // grow once per thread
  acc.assign(size_t(mc * ldc), 0.0);
  a_pack.resize(size_t(tiles * tile_rows_max * KC));
  b_pack.resize(size_t(ldc * KC));
  int64_t lbase[tile_rows_max], rbase[tile_width_max];
  for (int64_t k0 = 0; k0 < g.K; k0 += KC) {
    const int64_t kc = std::min(KC, g.K - k0);
    for (int64_t t = 0; t < tiles; ++t) {
      const int rows = int(std::min<int64_t>(tile_rows_max, mc - t * tile_rows_max));
      for (int i = 0; i < rows; ++i) lbase[i] = g.bl[size_t(b)] + g.ml[size_t(m0 + t * tile_rows_max + i)];
      pack(tile, x, lbase, rows, tile_rows_max, g.kl.data() + k0, g.kl_step, kc, a_pack.data() + t * tile_rows_max * kc);
    }
    for (int64_t p = 0; p < panels; ++p) {
      const int cols = int(std::min<int64_t>(width, nc - p * width));
      for (int j = 0; j < cols; ++j) rbase[j] = g.br[size_t(b)] + g.nr[size_t(n0 + p * width + j)];
      pack(tile, w, rbase, cols, width, g.kr.data() + k0, g.kr_step, kc, b_pack.data() + p * width * kc);
    }
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t t = 0; t < tiles; ++t) {
        const int rows = int(std::min<int64_t>(tile_rows_max, mc - t * tile_rows_max));
        tile.run(rows, kc, a_pack.data() + t * tile_rows_max * kc, b_pack.data() + p * width * kc,
                 acc.data() + t * tile_rows_max * ldc + p * width, ldc);
      }
  }
  for (int64_t i = 0; i < mc; ++i)
    for (int64_t j = 0; j < nc; ++j) y[(b * g.M + m0 + i) * g.N + n0 + j] = float(acc[size_t(i * ldc + j)]);
}

// The lhs rows of a decode step's contraction widened to double, each row's K terms in
// order: x[(b * M + m) * K + k], in storage kept per thread.
const double* widened_rows(const Gemm& g, const float* x) {
  thread_local std::vector<double> wide;
  wide.resize(size_t(g.batches * g.M * g.K));
  for (int64_t b = 0; b < g.batches; ++b)
    for (int64_t m = 0; m < g.M; ++m) {
      const float* row = x + g.bl[size_t(b)] + g.ml[size_t(m)];
      double* to = wide.data() + (b * g.M + m) * g.K;
      if (g.kl_step == 1)  // consecutive terms (the usual case): a loop that vectorises
        for (int64_t k = 0; k < g.K; ++k) to[k] = double(row[k]);
      else
        for (int64_t k = 0; k < g.K; ++k) to[k] = double(row[g.kl[size_t(k)]]);
    }
  return wide.data();
}

// A decode step's contraction: a few lhs rows against weights whose terms are consecutive
// (rhs step 1). The lhs rows are widened once; the rhs is streamed where it lies, each
// weight read once, `width` columns per call of the kernel; threads take runs of columns.
template <class T>
void stream(const TileKernel& tile, const Gemm& g, const float* x, const T* w, float* y) {
  const bool cached = double(g.N) * double(g.K) * double(sizeof(T)) <= double(tile.cache_bytes);
  const StreamKernel& kernel = cached ? tile.from_cache : tile.from_memory;
  const int width = kernel.width;
  const double* xs = widened_rows(g, x);
  const int64_t blocks = (g.N + width - 1) / width, jobs = g.batches * blocks;
  parallel_for(jobs, double(width) * double(g.M) * double(std::max<int64_t>(g.K, 1)), [&](int64_t begin, int64_t end) {
    const T* cols[2 * stream_width_max];  // this job's columns, then the next one's (StreamFn)
    double out[stream_rows_max * stream_width_max];
    // A job: batch b's columns n0 .. n0 + valid - 1.
    struct Job {
      int64_t b, n0;
      int valid;
    };
    auto job_of = [&](int64_t job) {
      const int64_t n0 = job % blocks * width;
      return Job{job / blocks, n0, int(std::min<int64_t>(width, g.N - n0))};
    };
    auto columns = [&](int64_t job, const T** to) {
      const Job j = job_of(job);
      // Columns past the end repeat the first one; their sums are not stored.
      for (int c = 0; c < width; ++c) to[c] = w + g.br[size_t(j.b)] + g.nr[size_t(j.n0 + (c < j.valid ? c : 0))];
    };
    for (int64_t job = begin; job < end; ++job) {
      const auto [b, n0, valid] = job_of(job);
      columns(job, cols);
      // The cache's kernels prefetch nothing: the columns after stay those of the first job.
      if (!cached || job == begin) columns(cached || job + 1 == jobs ? job : job + 1, cols + width);
      if constexpr (std::is_same_v<T, float>)
        kernel.f32(int(g.M), g.K, xs + b * g.M * g.K, cols, out);
      else
        kernel.bf16(int(g.M), g.K, xs + b * g.M * g.K, cols, out);
      for (int64_t m = 0; m < g.M; ++m)
        for (int j = 0; j < valid; ++j) y[(b * g.M + m) * g.N + n0 + j] = float(out[m * width + j]);
    }
  });
}

// A few lhs rows against an rhs whose columns lie side by side for every term (probs . v:
// term k of columns n0, n0 + 1, ... is one run of v's row k; a small weight the
// interpreter holds transposed), which packing would only copy. The columns are cut
// into units of 8, batch after batch, and the tile's side kernel takes up to
// side_units_max units a call, from one batch or several (a decode step's heads have 8
// columns each where head_dim is 8); threads take runs of calls.
template <class T>
void side_by_side(const TileKernel& tile, const Gemm& g, const float* x, const T* w, float* y) {
  const double* xs = widened_rows(g, x);
  const int64_t per_batch = (g.N + 7) / 8, units = g.batches * per_batch;
  const int64_t calls = (units + side_units_max - 1) / side_units_max;
  parallel_for(calls, double(8 * side_units_max) * double(g.M) * double(std::max<int64_t>(g.K, 1)), [&](int64_t begin, int64_t end) {
    SideUnit<T> unit[side_units_max];
    double out[side_units_max * stream_rows_max * 8];
    for (int64_t call = begin; call < end; ++call) {
      const int64_t u0 = call * side_units_max;
      const int count = int(std::min<int64_t>(side_units_max, units - u0));
      for (int q = 0; q < count; ++q) {
        const int64_t b = (u0 + q) / per_batch, n0 = (u0 + q) % per_batch * 8;
        unit[q] = {xs + b * g.M * g.K, w + g.br[size_t(b)] + g.nr[size_t(n0)], int(std::min<int64_t>(8, g.N - n0))};
      }
      if constexpr (std::is_same_v<T, float>)
        tile.side.f32(int(g.M), g.K, g.kr.data(), count, unit, out);
      else
        tile.side.bf16(int(g.M), g.K, g.kr.data(), count, unit, out);
      for (int q = 0; q < count; ++q) {
        const int64_t b = (u0 + q) / per_batch, n0 = (u0 + q) % per_batch * 8;
        for (int64_t m = 0; m < g.M; ++m)
          for (int j = 0; j < unit[q].cols; ++j) y[(b * g.M + m) * g.N + n0 + j] = float(out[(q * g.M + m) * 8 + j]);
      }
    }
  });
}

// The rhs elements, f32 or the bits of bf16 values (a weight the interpreter hands over
// as stored rather than converted first); T says which.
template <class T>
const T* rhs_data(const Tensor& rhs) {
  if constexpr (std::is_same_v<T, float>)
    return rhs.as<float>().data();  // refuses any other dtype
  else
    return reinterpret_cast<const uint16_t*>(rhs.raw().data());  // bf16, as dispatched
}

template <class T>
void naive(const Operation& op, const Tensor& lhs, const Tensor& rhs, Tensor& out) {
  const DotLayout g = dot_layout(op, lhs.type(), rhs.type(), out.type());
  const float* x = lhs.as<float>().data();
  const T* w = rhs_data<T>(rhs);
  float* y = out.as_mut<float>().data();
  if (out.elements() == 0) return;
  Odometer at(g.out_size.data(), g.rank);
  do {
    int64_t l = 0, r = 0;
    for (int d = 0; d < g.rank; ++d) l += at.at[size_t(d)] * g.res_l[size_t(d)], r += at.at[size_t(d)] * g.res_r[size_t(d)];
    double sum = 0.0;
    Odometer c(g.con_size.data(), g.contracted);
    bool terms = true;
    for (int i = 0; i < g.contracted; ++i) terms = terms && g.con_size[size_t(i)] > 0;
    if (terms) do {
        int64_t cl = 0, cr = 0;
        for (int i = 0; i < g.contracted; ++i) cl += c.at[size_t(i)] * g.con_l[size_t(i)], cr += c.at[size_t(i)] * g.con_r[size_t(i)];
        sum += double(x[l + cl]) * double(widen_term(w[r + cr]));
      } while (c.next());
    *y++ = float(sum);
  } while (at.next());
}

// The tiled contraction of operands laid out as `g` says.
template <class T>
void contract(const TileKernel& tile, const Gemm& g, const float* x, const T* w, float* y) {
  if (g.M <= stream_rows_max && g.kr_step == 1) return stream(tile, g, x, w, y);
  if (g.M <= stream_rows_max && g.nr_consecutive) return side_by_side(tile, g, x, w, y);
  // Jobs: batches x row blocks x column blocks; with threads, columns are cut finer
  // when there would be too few jobs to share.
  const int64_t row_blocks = (g.M + MC - 1) / MC;
  int64_t nc = NC;
  const int64_t threads = kernel_threads();
  if (threads > 1 && g.batches * row_blocks * ((g.N + nc - 1) / nc) < 4 * threads)
    nc = std::max<int64_t>(tile.width, (g.N / (4 * threads) + tile.width - 1) / tile.width * tile.width);
  const int64_t col_blocks = (g.N + nc - 1) / nc, jobs = g.batches * row_blocks * col_blocks;
  const double cost = double(std::min(MC, g.M)) * double(std::min(nc, g.N)) * double(std::max<int64_t>(g.K, 1));
  parallel_for(jobs, cost, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      const int64_t b = j / (row_blocks * col_blocks), rb = j / col_blocks % row_blocks, cb = j % col_blocks;
      const int64_t m0 = rb * MC, n0 = cb * nc;
      gemm_job(tile, g, x, w, y, b, m0, std::min(MC, g.M - m0), n0, std::min(nc, g.N - n0));
    }
  });
}

template <class T>
void contract(const TileKernel& tile, const Gemm& g, const Tensor& lhs, const Tensor& rhs, Tensor& out) {
  if (out.elements() == 0) return;
  contract<T>(tile, g, lhs.as<float>().data(), rhs_data<T>(rhs), out.as_mut<float>().data());
}

template <class T>
void tiled(const TileKernel& tile, const Operation& op, const Tensor& lhs, const Tensor& rhs, Tensor& out) {
  if (out.elements() == 0) return;
  contract<T>(tile, gemm_of(dot_layout(op, lhs.type(), rhs.type(), out.type())), lhs, rhs, out);
}

// x . w^T with w a quantized weight [N, K] as stored (the interpreter hands it over in
// place of its convert): each row of w dequantized once (quant/dequantize.h, convert's own
// values) and contracted with every row of x, the terms summed in double in ascending k
// from 0 as the definition sums, so the bits are those of the f32 contraction. The
// definition's loop, one sum at a time (dot_general_naive).
void contract_quantized_naive(const Tensor& lhs, const Tensor& rhs, Tensor& out) {
  const QuantFormat format = *quant_format(rhs.dtype());
  const int64_t N = rhs.shape()[0], K = rhs.shape()[1], M = K == 0 ? 0 : lhs.elements() / K;
  float* y = out.as_mut<float>().data();
  if (K == 0) {
    std::fill(y, y + out.elements(), 0.0f);
    return;
  }
  const size_t stride = size_t(row_bytes(format, K));
  const float* x = lhs.as<float>().data();
  parallel_for(N, double(M + 1) * double(K), [&](int64_t begin, int64_t end) {
    std::vector<float> w(static_cast<size_t>(K));
    for (int64_t n = begin; n < end; ++n) {
      dequantize_row(format, rhs.raw().data() + size_t(n) * stride, K, w.data());
      for (int64_t m = 0; m < M; ++m) {
        const float* xm = x + m * K;
        double sum = 0.0;
        for (int64_t k = 0; k < K; ++k) sum += double(xm[k]) * double(w[size_t(k)]);
        y[m * N + n] = float(sum);
      }
    }
  });
}

// The layout of x [M, K] . panel [P, K]^T: a panel of a quantized weight's rows.
DotLayout panel_layout(int64_t M, int64_t P, int64_t K) {
  DotLayout g;
  g.rank = 2, g.lhs_free = 1, g.rhs_free = 1, g.contracted = 1;
  g.out_size[0] = M, g.out_size[1] = P;
  g.res_l[0] = K, g.res_r[1] = K;
  g.con_size[0] = K, g.con_l[0] = 1, g.con_r[0] = 1;
  return g;
}

// The same contraction at speed: panels of rows dequantized, then contracted by the f32
// kernels (the definition's bits; dequantized values are exact f32), so it is the f32
// contraction of the dequantized weight bit for bit. A panel is at most about
// panel_bytes_max of f32 (16 rows at least), one per thread: a decode holds no more of the
// widened weight than that. Threads take panels; the kernel inside a panel runs on the
// thread that took it.
void contract_quantized(const TileKernel& tile, const Tensor& lhs, const Tensor& rhs, Tensor& out) {
  constexpr int64_t panel_bytes_max = int64_t(256) << 10;
  const QuantFormat format = *quant_format(rhs.dtype());
  const int64_t N = rhs.shape()[0], K = rhs.shape()[1], M = K == 0 ? 0 : lhs.elements() / K;
  float* y = out.as_mut<float>().data();
  if (K == 0 || N == 0 || M == 0) {
    std::fill(y, y + out.elements(), 0.0f);
    return;
  }
  const int64_t P = std::min(N, std::max<int64_t>(16, panel_bytes_max / (K * int64_t(sizeof(float))) / 16 * 16));
  const int64_t panels = (N + P - 1) / P, tail = N - (panels - 1) * P;
  const Gemm full = gemm_of(panel_layout(M, P, K)), last = gemm_of(panel_layout(M, tail, K));
  const size_t stride = size_t(row_bytes(format, K));
  const float* x = lhs.as<float>().data();
  parallel_for(panels, double(P) * double(M + 1) * double(K), [&](int64_t begin, int64_t end) {
    std::vector<float> w(size_t(P * K)), part(size_t(M * P));
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n0 = p * P, rows = p + 1 < panels ? P : tail;
      for (int64_t r = 0; r < rows; ++r)
        dequantize_row(format, rhs.raw().data() + size_t(n0 + r) * stride, K, w.data() + r * K);
      contract<float>(tile, rows == P ? full : last, x, w.data(), part.data());
      for (int64_t m = 0; m < M; ++m)
        std::copy_n(part.data() + m * rows, rows, y + m * N + n0);
    }
  });
}

}  // namespace

bool contracts_stored(const Operation& op, const TensorType& lhs, const TensorType& rhs) {
  return rhs.rank() == 2 && lhs.rank() >= 1 && op.ints("lhs_batching_dimensions").empty() &&
         op.ints("rhs_contracting_dimensions") == std::vector<int64_t>{1} &&
         op.ints("lhs_contracting_dimensions") == std::vector<int64_t>{lhs.rank() - 1};
}

void dot_general_naive(const Operation& op, Operands in, Tensor& out) {
  if (is_quantized(in[1]->dtype())) return contract_quantized_naive(*in[0], *in[1], out);
  if (in[1]->dtype() == DType::bf16) return naive<uint16_t>(op, *in[0], *in[1], out);
  naive<float>(op, *in[0], *in[1], out);
}

void dot_general_tiled(const TileKernel& tile, const Operation& op, Operands in, Tensor& out) {
  if (is_quantized(in[1]->dtype())) return contract_quantized(tile, *in[0], *in[1], out);
  if (in[1]->dtype() == DType::bf16) return tiled<uint16_t>(tile, op, *in[0], *in[1], out);
  tiled<float>(tile, op, *in[0], *in[1], out);
}

void eval_dot_general(const Operation& op, Operands in, Tensor& out) { dot_general_tiled(tile_kernel(), op, in, out); }

Kernel dot_general_planned(const Operation& op, const TensorType& lhs, const TensorType& rhs, const TensorType& out) {
  // The offsets are kept only where they are few: a step of a large model has thousands
  // of columns and terms per contraction (8 MB of lists for llama1b's 112), and there
  // working them out again is nothing beside the contraction itself.
  constexpr size_t kept_offsets_max = 4096;
  const Gemm& view = gemm_of(dot_layout(op, lhs, rhs, out));
  const size_t offsets = view.bl.size() + view.br.size() + view.ml.size() + view.nr.size() + view.kl.size() + view.kr.size();
  if (offsets > kept_offsets_max) return eval_dot_general;
  auto g = std::make_shared<const Gemm>(view);
  return [g](const Operation&, Operands in, Tensor& result) {
    if (is_quantized(in[1]->dtype())) return contract_quantized(tile_kernel(), *in[0], *in[1], result);
    if (in[1]->dtype() == DType::bf16) return contract<uint16_t>(tile_kernel(), *g, *in[0], *in[1], result);
    contract<float>(tile_kernel(), *g, *in[0], *in[1], result);
  };
}

}  // namespace cutcheck
