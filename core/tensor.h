// Tensors: a dtype, a static shape and row-major bytes. Storage is shared and may be
// a read-only view of a mapped file, so weights are never copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/quant_blocks.h"

namespace cutcheck {

// f32 and i32 as in StableHLO; i1 is a predicate, stored one byte per element. bf16 and
// f16 are the 16-bit floats checkpoints store weights in: programs move them and convert
// them to f32, and compute on nothing narrower than f32 (docs/language.md). The quantized
// types are weights stored in blocks (core/quant_blocks.h: ggml's Q8_0, Q4_0, Q5_0, Q4_K,
// Q6_K and per-row int8): a row of the last dimension is a whole number of blocks, and
// programs gather their rows and convert them to f32, exactly.
enum class DType : uint8_t { f32, i32, i1, bf16, f16, q8_0, q4_0, q5_0, q4_K, q6_K, i8_row };

// Bytes per element; a quantized type has none (its rows have row_bytes), and throws Error.
size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);  // "f32", "i32", "i1", "bf16", "f16", "q4_0", ...
bool parse_dtype(std::string_view name, DType& out);
// bf16 or f16: a storage type that is widened to f32 before any arithmetic.
bool is_half(DType dtype);
// The block format of a quantized type; nullopt for the others.
std::optional<QuantFormat> quant_format(DType dtype);
DType dtype_of(QuantFormat format);
inline bool is_quantized(DType dtype) { return quant_format(dtype).has_value(); }

using Shape = std::vector<int64_t>;

// Number of elements; throws LimitError when the product overflows or a dimension is negative.
int64_t element_count(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2,3]"

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;

  int64_t elements() const { return element_count(shape); }
  // Bytes as stored: elements times the dtype's size, or for a quantized type its rows
  // times row_bytes. Throws FormatError when a quantized type's rows are not whole blocks
  // (or it has no dimension), LimitError on overflow.
  uint64_t bytes() const;
  int64_t rank() const { return int64_t(shape.size()); }
  std::string str() const;  // "f32[2,3]"
  bool operator==(const TensorType&) const = default;
};

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::i1; }

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled, owned storage; checks the memory limit first.
  explicit Tensor(TensorType type);
  // A read-only view of bytes kept alive by `keepalive`.
  static Tensor view(TensorType type, const std::byte* data, std::shared_ptr<const void> keepalive);
  // A writable tensor over bytes [offset, offset + type.bytes()) of `whole`'s storage,
  // sharing it: the interpreter's arena hands out its intermediates this way.
  static Tensor part_of(TensorType type, const Tensor& whole, uint64_t offset);
  // A writable tensor over storage the caller made, at least type.bytes() long (memory
  // placed by core/pages.h); its bytes as they are.
  static Tensor over(TensorType type, std::shared_ptr<std::byte> storage);

  static Tensor scalar_i32(int32_t value);
  static Tensor of_f32(Shape shape, std::vector<float> values);
  static Tensor of_i32(Shape shape, std::vector<int32_t> values);

  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int64_t elements() const { return elements_; }
  uint64_t bytes() const { return bytes_; }

  std::span<const std::byte> raw() const { return {data_, bytes()}; }
  std::span<std::byte> raw_mut();

  template <class T> std::span<const T> as() const {
    check_dtype(dtype_of<T>());
    return {reinterpret_cast<const T*>(data_), size_t(elements_)};
  }
  template <class T> std::span<T> as_mut() {
    check_dtype(dtype_of<T>());
    return {reinterpret_cast<T*>(raw_mut().data()), size_t(elements_)};
  }

  // A writable deep copy.
  Tensor clone() const;
  // Owned storage whose bytes the caller writes before reading: not zero-filled.
  static Tensor uninitialized(TensorType type);
  // Owned storage starts on a cache line (malloc's large blocks start 16 bytes past one):
  // the decode kernels read a weight row a line at a time, and a row that starts inside a
  // line costs them a part line at each end (about 8% of a bf16 decode step's time). The
  // block is allocated that much longer and the data starts at its first line: aligned
  // operator new raised stories260K's peak RSS by 0.7 MiB (7.04 -> 7.56 times its weights
  // and caches), this by 40 KiB.
  static constexpr uint64_t storage_alignment = 64;
  // Same bytes, new shape of equal element count.
  Tensor reshaped(Shape shape) const;

  // Writable, and no other tensor shares the storage: writing it changes no one else's
  // values (the interpreter updates such an input in place when it dies).
  bool sole_owner() const { return writable_ && storage_.use_count() == 1; }

  // Bitwise equality of type and bytes.
  bool same_bits(const Tensor& other) const;

 private:
  void check_dtype(DType wanted) const;
  void set_type(TensorType type);  // type_, elements_ and bytes_

  TensorType type_;
  int64_t elements_ = 0;
  uint64_t bytes_ = 0;
  std::shared_ptr<const void> storage_;
  std::byte* data_ = nullptr;
  bool writable_ = false;
};

// Named tensors, as in a safetensors file; ordered by name so output is deterministic.
using TensorMap = std::map<std::string, Tensor>;

}  // namespace cutcheck
