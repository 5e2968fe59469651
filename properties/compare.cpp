#include "properties/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/half.h"
#include "model/signature.h"

namespace cutcheck {
namespace {

std::string element_str(const Tensor& t, size_t i) {
  switch (t.dtype()) {
    case DType::f32: {
      float v = t.as<float>()[i];
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      return fmt::format("{} (0x{:08x})", v, bits);
    }
    case DType::i32: return fmt::format("{}", t.as<int32_t>()[i]);
    case DType::i1: return fmt::format("{}", int(t.as<uint8_t>()[i]));
    case DType::bf16:
    case DType::f16: {
      uint16_t bits;
      std::memcpy(&bits, t.raw().data() + 2 * i, 2);
      return fmt::format("{} (0x{:04x})", half_to_f32(t.dtype(), bits), bits);
    }
    case DType::q8_0:
    case DType::q4_0:
    case DType::q5_0:
    case DType::q4_K:
    case DType::q6_K:
    case DType::i8_row: break;  // compared by bytes
  }
  return "?";
}

}  // namespace

std::optional<std::string> bitwise_difference(const TensorMap& want, const TensorMap& got) {
  for (const auto& [name, w] : want) {
    auto it = got.find(name);
    if (it == got.end()) return fmt::format("'{}' is missing", name);
    const Tensor& g = it->second;
    if (g.type() != w.type()) return fmt::format("'{}' is {}, expected {}", name, g.type().str(), w.type().str());
    if (w.same_bits(g)) continue;
    if (is_quantized(w.dtype())) {
      const auto at = std::mismatch(w.raw().begin(), w.raw().end(), g.raw().begin()).first - w.raw().begin();
      return fmt::format("'{}' byte {} of its blocks is 0x{:02x}, expected 0x{:02x}", name, at,
                         uint8_t(g.raw()[size_t(at)]), uint8_t(w.raw()[size_t(at)]));
    }
    const size_t width = dtype_size(w.dtype());
    for (size_t i = 0; i < size_t(w.elements()); ++i)
      if (std::memcmp(w.raw().data() + i * width, g.raw().data() + i * width, width) != 0)
        return fmt::format("'{}' element {} is {}, expected {}", name, i, element_str(g, i), element_str(w, i));
  }
  for (const auto& [name, g] : got)
    if (!want.count(name)) return fmt::format("'{}' is not expected", name);
  return std::nullopt;
}

std::optional<std::string> text_difference(const std::string& want, const std::string& got) {
  if (want == got) return std::nullopt;
  size_t at = size_t(std::mismatch(want.begin(), want.end(), got.begin(), got.end()).first - want.begin());
  size_t line = size_t(std::count(want.begin(), want.begin() + long(at), '\n')) + 1;
  auto around = [&](const std::string& s) {
    size_t begin = s.rfind('\n', at == 0 ? 0 : at - 1);
    begin = begin == std::string::npos ? 0 : begin + 1;
    return s.substr(begin, s.find('\n', at) == std::string::npos ? std::string::npos : s.find('\n', at) - begin);
  };
  return fmt::format("line {} differs: '{}' against '{}'", line, around(got), around(want));
}

std::optional<std::string> split_difference(const Cut& cut, Expected unsplit, TensorMap split,
                                            const Tolerance& tolerance) {
  TensorMap exact_unsplit, exact_split;
  for (const std::string& name : {k_cache_name(cut.layer), v_cache_name(cut.layer)}) {
    if (!unsplit.values.count(name) || !split.count(name)) continue;
    exact_unsplit.insert(unsplit.values.extract(name));
    unsplit.bounds.erase(name);
    exact_split.insert(split.extract(name));
  }
  if (auto diff = bitwise_difference(exact_unsplit, exact_split)) return "the first layer's caches: " + *diff;
  Comparison cmp = compare(unsplit, split, tolerance);
  if (!cmp.ok) return cmp.failure;
  return std::nullopt;
}

Tensor row_of(const Tensor& t, int64_t r) {
  Shape rest(t.shape().begin() + 1, t.shape().end());
  Tensor out({t.dtype(), rest});
  std::memcpy(out.raw_mut().data(), t.raw().data() + size_t(r) * out.bytes(), out.bytes());
  return out;
}

}  // namespace cutcheck
