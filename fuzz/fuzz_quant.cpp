// Quantized blocks (quant/): the first byte picks the format and whether the payload is read
// as blocks to dequantize or as f32 values to quantize; the next 16 bytes are a shape (rows,
// cols: two little-endian int64) for bytes_for and the row length. Beyond no crash:
//   - bytes_for is rows * row_bytes(cols), or an Error;
//   - a row length row_bytes refuses is refused by dequantize_row and quantize_row_reference
//     too, before they touch memory;
//   - a ggml-format row that dequantizes has finite values (finite f16 scales times small
//     integers);
//   - what quantize_row_reference writes, dequantize_row reads without error, to finite
//     values for the ggml formats.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "core/quant_blocks.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"

using namespace cutcheck;

namespace {

int64_t read_i64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return int64_t(v);
}

// The longest row of whole blocks that fits in `units` bytes (as_bytes) or f32 values.
int64_t whole_blocks(QuantFormat format, int64_t units, bool as_bytes) {
  if (format == QuantFormat::i8_row) return as_bytes ? std::max<int64_t>(units - 4, 0) : units;
  const BlockLayout block = block_layout(format, 0);
  return (as_bytes ? units / block.bytes : units / block.values) * block.values;
}

void check_finite(QuantFormat format, const std::vector<float>& values) {
  if (format == QuantFormat::i8_row) return;  // an f32 scale times 127 may overflow
  for (float v : values) {
    if (!std::isfinite(v)) std::abort();
  }
}

// Whether row_bytes takes the row length n; where it does not, `call` (whose pointers are
// null, so it must refuse before touching memory) has to refuse it too.
template <class Call> bool length_taken(QuantFormat format, int64_t n, Call call) {
  try {
    row_bytes(format, n);
    return true;
  } catch (const Error&) {
  }
  try {
    call();
  } catch (const Error&) {
    return false;
  }
  std::abort();  // a length row_bytes refuses was taken
}

void dequantize_payload(QuantFormat format, int64_t cols, const std::byte* payload, int64_t size) {
  if (!length_taken(format, cols, [&] { dequantize_row(format, payload, cols, nullptr); })) cols = -1;
  const int64_t n = cols >= 0 && row_bytes(format, cols) <= size ? cols : whole_blocks(format, size, true);
  if (row_bytes(format, n) > size) return;  // i8_row: not even a scale
  std::vector<float> out(static_cast<size_t>(n));
  try {
    dequantize_row(format, payload, n, out.data());
  } catch (const FormatError&) {
    return;  // a non-finite scale
  }
  check_finite(format, out);
  // The grid values quantize again (or are refused as too large), without undefined behaviour.
  std::vector<std::byte> again(static_cast<size_t>(row_bytes(format, n)));
  try {
    quantize_row_reference(format, out.data(), n, again.data());
  } catch (const InputError&) {
  }
}

void quantize_payload(QuantFormat format, int64_t cols, const uint8_t* payload, int64_t size) {
  const int64_t count = size / 4;
  if (!length_taken(format, cols, [&] { quantize_row_reference(format, nullptr, cols, nullptr); })) cols = -1;
  const int64_t n = cols >= 0 && cols <= count ? cols : whole_blocks(format, count, false);
  std::vector<float> x(static_cast<size_t>(n));
  if (n > 0) std::memcpy(x.data(), payload, size_t(n) * 4);
  std::vector<std::byte> blocks(static_cast<size_t>(row_bytes(format, n)));
  try {
    quantize_row_reference(format, x.data(), n, blocks.data());
  } catch (const InputError&) {
    return;  // a non-finite value, or values too large for the format
  }
  std::vector<float> back(static_cast<size_t>(n));
  dequantize_row(format, blocks.data(), n, back.data());  // an Error here escapes: a bug
  check_finite(format, back);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  set_memory_limit(16 << 20);
  if (size < 17) return 0;
  const QuantFormat format = all_quant_formats[data[0] % std::size(all_quant_formats)];
  const bool quantize = data[0] / std::size(all_quant_formats) % 2;
  const int64_t rows = read_i64(data + 1), cols = read_i64(data + 9);
  try {
    const int64_t total = bytes_for(format, rows, cols);
    if (total != rows * row_bytes(format, cols)) std::abort();
  } catch (const Error&) {
  }
  const int64_t payload_size = int64_t(size) - 17;
  if (quantize) {
    quantize_payload(format, cols, data + 17, payload_size);
  } else {
    dequantize_payload(format, cols, reinterpret_cast<const std::byte*>(data + 17), payload_size);
  }
  return 0;
}
