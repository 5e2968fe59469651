#include "core/tensor.h"

#include <fmt/format.h>

#include <cstring>

#include "core/error.h"
#include "core/limits.h"
#include "core/pages.h"

namespace cutcheck {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::i32: return 4;
    case DType::i1: return 1;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::q8_0:
    case DType::q4_0:
    case DType::q5_0:
    case DType::q4_K:
    case DType::q6_K:
    case DType::i8_row: break;
  }
  throw Error(fmt::format("{} has no size per element: its rows are blocks", dtype_name(dtype)));
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::i32: return "i32";
    case DType::i1: return "i1";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::q8_0:
    case DType::q4_0:
    case DType::q5_0:
    case DType::q4_K:
    case DType::q6_K:
    case DType::i8_row: return quant_format_name(*quant_format(dtype));
  }
  return "?";
}

std::optional<QuantFormat> quant_format(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::i32:
    case DType::i1:
    case DType::bf16:
    case DType::f16: return std::nullopt;
    case DType::q8_0: return QuantFormat::q8_0;
    case DType::q4_0: return QuantFormat::q4_0;
    case DType::q5_0: return QuantFormat::q5_0;
    case DType::q4_K: return QuantFormat::q4_K;
    case DType::q6_K: return QuantFormat::q6_K;
    case DType::i8_row: return QuantFormat::i8_row;
  }
  return std::nullopt;
}

DType dtype_of(QuantFormat format) {
  switch (format) {
    case QuantFormat::q8_0: return DType::q8_0;
    case QuantFormat::q4_0: return DType::q4_0;
    case QuantFormat::q5_0: return DType::q5_0;
    case QuantFormat::q4_K: return DType::q4_K;
    case QuantFormat::q6_K: return DType::q6_K;
    case QuantFormat::i8_row: return DType::i8_row;
  }
  return DType::f32;
}

bool parse_dtype(std::string_view name, DType& out) {
  for (DType d : {DType::f32, DType::i32, DType::i1, DType::bf16, DType::f16, DType::q8_0, DType::q4_0, DType::q5_0,
                  DType::q4_K, DType::q6_K, DType::i8_row}) {
    if (dtype_name(d) == name) {
      out = d;
      return true;
    }
  }
  return false;
}

bool is_half(DType dtype) { return dtype == DType::bf16 || dtype == DType::f16; }

int64_t element_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw LimitError(fmt::format("shape {} has a negative dimension", shape_str(shape)));
    if (d != 0 && n > INT64_MAX / 16 / d)
      throw LimitError(fmt::format("shape {} has too many elements", shape_str(shape)));
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

uint64_t TensorType::bytes() const {
  const auto format = quant_format(dtype);
  if (!format) return uint64_t(elements()) * dtype_size(dtype);
  if (shape.empty()) throw FormatError(fmt::format("{}: a {} value has rows of blocks, so at least one dimension", str(), dtype_name(dtype)));
  const int64_t cols = shape.back(), rows = element_count(Shape(shape.begin(), shape.end() - 1));
  try {
    return uint64_t(bytes_for(*format, rows, cols));
  } catch (const FormatError& e) {
    throw FormatError(fmt::format("{}: {}", str(), e.what()));
  }
}

std::string TensorType::str() const { return fmt::format("{}{}", dtype_name(dtype), shape_str(shape)); }

Tensor::Tensor(TensorType type) : Tensor(uninitialized(std::move(type))) {
  if (bytes() == 0) return;
  populate_pages(data_, bytes());  // zeroed whole just below
  std::memset(data_, 0, bytes());
}

Tensor Tensor::uninitialized(TensorType type) {
  Tensor t;
  t.set_type(std::move(type));
  t.writable_ = true;
  uint64_t n = t.bytes();
  if (n > memory_limit()) check_memory(n, fmt::format("a tensor of type {}", t.type_.str()));  // the text only on failure
  auto buffer = std::shared_ptr<std::byte[]>(new std::byte[n + storage_alignment - 1]);
  const uintptr_t start = reinterpret_cast<uintptr_t>(buffer.get());
  t.data_ = buffer.get() + (storage_alignment - start % storage_alignment) % storage_alignment;
  t.storage_ = std::move(buffer);
  return t;
}

Tensor Tensor::view(TensorType type, const std::byte* data, std::shared_ptr<const void> keepalive) {
  Tensor t;
  t.set_type(std::move(type));
  t.storage_ = std::move(keepalive);
  t.data_ = const_cast<std::byte*>(data);  // never written: writable_ stays false
  return t;
}

Tensor Tensor::part_of(TensorType type, const Tensor& whole, uint64_t offset) {
  Tensor t;
  t.set_type(std::move(type));
  if (!whole.writable_ || offset > whole.bytes() || t.bytes() > whole.bytes() - offset)
    throw Error(fmt::format("{} at byte {} does not lie within a writable {}", t.type_.str(), offset, whole.type_.str()));
  t.storage_ = whole.storage_;
  t.data_ = whole.data_ + offset;
  t.writable_ = true;
  return t;
}

Tensor Tensor::over(TensorType type, std::shared_ptr<std::byte> storage) {
  Tensor t;
  t.set_type(std::move(type));
  t.writable_ = true;
  t.data_ = storage.get();
  t.storage_ = std::move(storage);
  return t;
}

Tensor Tensor::scalar_i32(int32_t value) { return of_i32({}, {value}); }

Tensor Tensor::of_f32(Shape shape, std::vector<float> values) {
  Tensor t({DType::f32, std::move(shape)});
  if (size_t(t.elements()) != values.size())
    throw Error(fmt::format("{} values given for a tensor of type {}", values.size(), t.type().str()));
  if (!values.empty()) std::memcpy(t.data_, values.data(), t.bytes());
  return t;
}

Tensor Tensor::of_i32(Shape shape, std::vector<int32_t> values) {
  Tensor t({DType::i32, std::move(shape)});
  if (size_t(t.elements()) != values.size())
    throw Error(fmt::format("{} values given for a tensor of type {}", values.size(), t.type().str()));
  if (!values.empty()) std::memcpy(t.data_, values.data(), t.bytes());
  return t;
}

std::span<std::byte> Tensor::raw_mut() {
  if (!writable_) throw Error(fmt::format("tensor of type {} is a read-only view", type_.str()));
  return {data_, bytes()};
}

Tensor Tensor::clone() const {
  Tensor t = uninitialized(type_);
  if (bytes() > 0) std::memcpy(t.data_, data_, bytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  t.set_type({type_.dtype, std::move(shape)});
  if (t.elements_ != elements_ || t.bytes_ != bytes_)
    throw Error(fmt::format("cannot reshape {} to {}", type_.str(), t.type_.str()));
  return t;
}

bool Tensor::same_bits(const Tensor& other) const {
  return type_ == other.type_ && (bytes() == 0 || std::memcmp(data_, other.data_, bytes()) == 0);
}

void Tensor::set_type(TensorType type) {
  type_ = std::move(type);
  elements_ = type_.elements();
  bytes_ = type_.bytes();
}

void Tensor::check_dtype(DType wanted) const {
  if (wanted != type_.dtype)
    throw Error(fmt::format("tensor of type {} read as {}", type_.str(), dtype_name(wanted)));
}

}  // namespace cutcheck
