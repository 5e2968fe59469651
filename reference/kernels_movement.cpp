// Data movement: every op here only moves elements, so each is a strided copy from the
// operand into the result with its own index map.
#include <algorithm>
#include <cstring>

#include "reference/index.h"
#include "reference/kernels.h"

namespace cutcheck {
namespace {

// A copy's index map over as few dimensions as describe it: a dimension of size 1 moves
// nothing, and a dimension that continues its outer neighbour's stride in both source
// and destination joins it. Every element goes where it went before.
struct Walk {
  int rank = 0;
  Index sizes{}, dst{}, src{};
};

Walk walk_of(const Index& dst_strides, const Index& src_strides, const Shape& shape) {
  Walk w;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    const size_t last = size_t(w.rank - 1);
    if (w.rank > 0 && w.dst[last] == dst_strides[i] * shape[i] && w.src[last] == src_strides[i] * shape[i]) {
      w.sizes[last] *= shape[i];
      w.dst[last] = dst_strides[i];
      w.src[last] = src_strides[i];
      continue;
    }
    const size_t d = size_t(w.rank++);
    w.sizes[d] = shape[i], w.dst[d] = dst_strides[i], w.src[d] = src_strides[i];
  }
  return w;
}

// Copies every element of `shape`: the element at multi-index j goes from
// src[sum j*src_strides] to dst[sum j*dst_strides] (strides in elements). Elements move
// as unsigned integers of their width.
template <class Bits>
void copy_elements(std::byte* dst_bytes, const Index& dst_strides, const std::byte* src_bytes,
                   const Index& src_strides, const Shape& shape) {
  Bits* dst = reinterpret_cast<Bits*>(dst_bytes);
  const Bits* src = reinterpret_cast<const Bits*>(src_bytes);
  if (element_count(shape) == 0) return;
  const Walk w = walk_of(dst_strides, src_strides, shape);
  if (w.rank == 0) {
    *dst = *src;
    return;
  }
  const size_t last = size_t(w.rank - 1);
  const int64_t n = w.sizes[last], ds = w.dst[last], ss = w.src[last];
  Odometer row(w.sizes.data(), w.rank - 1);
  do {
    int64_t d = 0, s = 0;
    for (size_t i = 0; i < last; ++i) {
      d += row.at[i] * w.dst[i];
      s += row.at[i] * w.src[i];
    }
    if (ds == 1 && ss == 1) std::memcpy(dst + d, src + s, size_t(n) * sizeof(Bits));
    else if (ss == 0) std::fill_n(dst + d, n, src[s]);  // broadcasting along the last dimension
    else
      for (int64_t i = 0; i < n; ++i) dst[d + i * ds] = src[s + i * ss];
  } while (row.next());
}

void copy_elements(size_t width, std::byte* dst, const Index& dst_strides, const std::byte* src,
                   const Index& src_strides, const Shape& shape) {
  if (width == 4) copy_elements<uint32_t>(dst, dst_strides, src, src_strides, shape);
  else if (width == 2) copy_elements<uint16_t>(dst, dst_strides, src, src_strides, shape);
  else copy_elements<uint8_t>(dst, dst_strides, src, src_strides, shape);
}

size_t width_of(const Tensor& t) { return dtype_size(t.dtype()); }

}  // namespace

void eval_broadcast_in_dim(const Operation& op, Operands in, Tensor& out) {
  // result[j] = operand[i] with i[k] = j[dims[k]], or 0 where operand dimension k has size 1.
  const Tensor& a = *in[0];
  const auto& dims = op.ints("broadcast_dimensions");
  Index from = strides_of(a.shape()), src{};
  for (size_t k = 0; k < dims.size(); ++k)
    if (a.shape()[k] != 1) src[size_t(dims[k])] = from[k];
  copy_elements(width_of(a), out.raw_mut().data(), strides_of(out.shape()), a.raw().data(), src, out.shape());
}

void eval_reshape(const Operation&, Operands in, Tensor& out) {
  // Row-major order is kept: the bytes are the same (already there when the result is
  // written over the operand).
  if (out.raw().data() != in[0]->raw().data()) std::memcpy(out.raw_mut().data(), in[0]->raw().data(), out.bytes());
}

void eval_transpose(const Operation& op, Operands in, Tensor& out) {
  // result[j] = operand[i] with i[perm[d]] = j[d].
  const Tensor& a = *in[0];
  const auto& perm = op.ints("permutation");
  Index from = strides_of(a.shape()), src{};
  for (size_t d = 0; d < perm.size(); ++d) src[d] = from[size_t(perm[d])];
  copy_elements(width_of(a), out.raw_mut().data(), strides_of(out.shape()), a.raw().data(), src, out.shape());
}

void eval_slice(const Operation& op, Operands in, Tensor& out) {
  // result[j] = operand[start + j * strides].
  const Tensor& a = *in[0];
  const auto &start = op.ints("start_indices"), &step = op.ints("strides");
  Index from = strides_of(a.shape()), src{};
  int64_t base = 0;
  for (size_t d = 0; d < start.size(); ++d) {
    src[d] = from[d] * step[d];
    base += start[d] * from[d];
  }
  copy_elements(width_of(a), out.raw_mut().data(), strides_of(out.shape()),
                a.raw().data() + base * int64_t(width_of(a)), src, out.shape());
}

void eval_concatenate(const Operation& op, Operands in, Tensor& out) {
  // The operands one after another along `dimension`.
  const size_t d = size_t(op.integer("dimension"));
  Index to = strides_of(out.shape());
  int64_t offset = 0;
  for (const Tensor* part : in) {
    copy_elements(width_of(*part), out.raw_mut().data() + offset * to[d] * int64_t(width_of(*part)), to,
                  part->raw().data(), strides_of(part->shape()), part->shape());
    offset += part->shape()[d];
  }
}

void eval_dynamic_update_slice(const Operation&, Operands in, Tensor& out) {
  // The operand with `update` written at the start indices, each clamped into
  // [0, size - update size] as in StableHLO.
  const Tensor &a = *in[0], &update = *in[1];
  if (out.raw().data() != a.raw().data()) std::memcpy(out.raw_mut().data(), a.raw().data(), out.bytes());
  Index to = strides_of(out.shape());
  int64_t base = 0;
  for (size_t d = 0; d < a.shape().size(); ++d) {
    int64_t start = in[2 + d]->as<int32_t>()[0];
    start = std::clamp<int64_t>(start, 0, a.shape()[d] - update.shape()[d]);
    base += start * to[d];
  }
  copy_elements(width_of(a), out.raw_mut().data() + base * int64_t(width_of(a)), to, update.raw().data(),
                strides_of(update.shape()), update.shape());
}

void eval_gather(const Operation&, Operands in, Tensor& out) {
  // result[i..., rest...] = operand[indices[i...], rest...], the index clamped into
  // [0, rows - 1] as in StableHLO (inputs are range-checked before any op runs).
  const Tensor &a = *in[0], &indices = *in[1];
  const int64_t rows = a.shape()[0];
  const size_t row_bytes = rows == 0 ? 0 : a.bytes() / size_t(rows);
  auto idx = indices.as<int32_t>();
  std::byte* y = out.raw_mut().data();
  if (rows == 0) return;
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t r = std::clamp<int64_t>(idx[i], 0, rows - 1);
    std::memcpy(y + i * row_bytes, a.raw().data() + size_t(r) * row_bytes, row_bytes);
  }
}

}  // namespace cutcheck
