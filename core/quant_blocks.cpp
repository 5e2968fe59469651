#include "core/quant_blocks.h"

#include <fmt/format.h>

#include "core/checked.h"
#include "core/error.h"

namespace cutcheck {

std::string_view quant_format_name(QuantFormat format) {
  switch (format) {
    case QuantFormat::q8_0: return "q8_0";
    case QuantFormat::q4_0: return "q4_0";
    case QuantFormat::q5_0: return "q5_0";
    case QuantFormat::q4_K: return "q4_K";
    case QuantFormat::q6_K: return "q6_K";
    case QuantFormat::i8_row: return "i8_row";
  }
  return "?";
}

bool parse_quant_format(std::string_view name, QuantFormat& out) {
  for (QuantFormat format : all_quant_formats) {
    if (quant_format_name(format) == name) {
      out = format;
      return true;
    }
  }
  return false;
}

std::optional<GgmlType> ggml_type(QuantFormat format) {
  switch (format) {
    case QuantFormat::q8_0: return GgmlType{"Q8_0", 8};
    case QuantFormat::q4_0: return GgmlType{"Q4_0", 2};
    case QuantFormat::q5_0: return GgmlType{"Q5_0", 6};
    case QuantFormat::q4_K: return GgmlType{"Q4_K", 12};
    case QuantFormat::q6_K: return GgmlType{"Q6_K", 14};
    case QuantFormat::i8_row: break;
  }
  return std::nullopt;
}

std::optional<QuantFormat> quant_format_of_ggml_name(std::string_view name) {
  for (QuantFormat format : all_quant_formats)
    if (const auto type = ggml_type(format); type && type->name == name) return format;
  return std::nullopt;
}

BlockLayout block_layout(QuantFormat format, int64_t row_length) {
  switch (format) {
    case QuantFormat::q8_0: return {32, 34};
    case QuantFormat::q4_0: return {32, 18};
    case QuantFormat::q5_0: return {32, 22};
    case QuantFormat::q4_K: return {256, 144};
    case QuantFormat::q6_K: return {256, 210};
    case QuantFormat::i8_row: return {row_length, row_bytes(format, row_length)};
  }
  return {0, 0};
}

int64_t values_per_scale(QuantFormat format, int64_t row_length) {
  if (format == QuantFormat::i8_row) return row_length;
  return format == QuantFormat::q6_K ? 16 : 32;
}

bool has_mins(QuantFormat format) { return format == QuantFormat::q4_K; }

int64_t row_bytes(QuantFormat format, int64_t cols) {
  const std::string_view name = quant_format_name(format);
  if (cols < 0) throw FormatError(fmt::format("{}: a row of {} values: the length is negative", name, cols));
  if (format == QuantFormat::i8_row) return checked_add(cols, int64_t{4}, "i8_row: the bytes of a row (an f32 scale and its values)");
  const BlockLayout block = block_layout(format, cols);
  if (cols % block.values != 0) {
    throw FormatError(
        fmt::format("{}: a row of {} values is not a whole number of {}-value blocks", name, cols, block.values));
  }
  return checked_mul(cols / block.values, block.bytes, fmt::format("{}: the bytes of a row of {} values", name, cols));
}

int64_t bytes_for(QuantFormat format, int64_t rows, int64_t cols) {
  const std::string_view name = quant_format_name(format);
  if (rows < 0) throw FormatError(fmt::format("{}: {} rows: the count is negative", name, rows));
  return checked_mul(rows, row_bytes(format, cols), fmt::format("{}: the bytes of {} rows of {} values", name, rows, cols));
}

}  // namespace cutcheck
