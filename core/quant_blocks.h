// Quantized weight formats: ggml's block formats Q8_0, Q4_0, Q5_0, Q4_K and Q6_K byte for byte as
// ggml stores them (the structs block_q8_0, block_q4_0, block_q5_0, block_q4_K and block_q6_K of
// ggml/src/ggml-common.h), and i8_row, int8 values with one f32 scale per row as int8
// kernels outside GGUF use. A row of a tensor is a whole number of blocks: blocks never
// straddle rows. Multi-byte fields are little-endian; "f16" is IEEE binary16.
//
// Q8_0: 32 values in 34 bytes (block_q8_0).
//   bytes 0-1   d, f16
//   bytes 2-33  q[0..31], int8
//   value i = d * q[i]
//
// Q4_0: 32 values in 18 bytes (block_q4_0).
//   bytes 0-1   d, f16
//   bytes 2-17  16 bytes of nibbles: byte j holds q[j] in its low nibble and q[j + 16] in its
//               high nibble (values 0..15)
//   value i = d * (q[i] - 8)
//
// Q5_0: 32 values in 22 bytes (block_q5_0); llama-quantize's fallback for Q4_K rows that
// are not whole 256-value super-blocks.
//   bytes 0-1   d, f16
//   bytes 2-5   qh, a little-endian uint32: bit i is the fifth (high) bit of q[i]
//   bytes 6-21  16 bytes of nibbles: byte j holds the low 4 bits of q[j] in its low nibble and
//               of q[j + 16] in its high nibble (q in 0..31)
//   value i = d * (q[i] - 16)
//
// Q4_K: a super-block of 256 values in 144 bytes (block_q4_K): eight sub-blocks of 32, each
// with a 6-bit scale sc[j] and a 6-bit min m[j].
//   bytes 0-1    d, f16 (the scale of the scales)
//   bytes 2-3    dmin, f16 (the scale of the mins)
//   bytes 4-15   s[0..11], the sixteen 6-bit numbers (ggml's get_scale_min_k4):
//                  j < 4:  sc[j] = s[j] & 63                  m[j] = s[j + 4] & 63
//                  j >= 4: sc[j] = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4
//                          m[j]  = (s[j + 4] >> 4) | (s[j] >> 6) << 4
//                so s[0..3] carry sc[0..3] in their low 6 bits and the top 2 bits of
//                sc[4..7]; s[4..7] likewise m[0..3] and the top 2 bits of m[4..7]; s[8..11]
//                the low 4 bits of sc[4..7] (low nibble) and of m[4..7] (high nibble).
//   bytes 16-143 128 bytes of nibbles in four chunks of 32 bytes: byte l of chunk c holds
//                q[64c + l] in its low nibble and q[64c + 32 + l] in its high nibble
//   value i, in sub-block j = i / 32: (d * sc[j]) * q[i] - dmin * m[j]
//
// Q6_K: a super-block of 256 values in 210 bytes (block_q6_K): sixteen sub-blocks of 16,
// each with a signed 8-bit scale; 6-bit quants split into 4 low and 2 high bits.
//   bytes 0-127    ql, the low 4 bits; bytes 128-191 qh, the high 2 bits; in two halves of
//                  128 values (half h: ql[64h..], qh[32h..]). For l in 0..31, with v = 128h:
//                    q[v + l]      = (ql[64h + l] & 15)      | ((qh[32h + l] >> 0) & 3) << 4
//                    q[v + 32 + l] = (ql[64h + 32 + l] & 15) | ((qh[32h + l] >> 2) & 3) << 4
//                    q[v + 64 + l] = (ql[64h + l] >> 4)      | ((qh[32h + l] >> 4) & 3) << 4
//                    q[v + 96 + l] = (ql[64h + 32 + l] >> 4) | ((qh[32h + l] >> 6) & 3) << 4
//   bytes 192-207  sc[0..15], int8
//   bytes 208-209  d, f16
//   value i = (d * sc[i / 16]) * (q[i] - 32)
//
// i8_row: a whole row of n values in 4 + n bytes.
//   bytes 0-3      s, f32
//   bytes 4..n+3   q[0..n-1], int8
//   value i = s * q[i]
//
// Every product above is exact in f32 for Q8_0, Q4_0, Q5_0 and Q6_K (an 11-bit f16 significand
// times integers of at most 12 significant bits together). Q4_K's two products are exact too and their
// difference is rounded once (to nearest, ties to even), as ggml's dequantize_row_q4_K
// computes it; i8_row's product is rounded once (and overflows to infinity beyond f32's range). So every value is the f32 nearest to the
// formula's exact real value, whatever the order of operations or fused multiply-adds.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace cutcheck {

enum class QuantFormat : uint8_t { q8_0, q4_0, q5_0, q4_K, q6_K, i8_row };

inline constexpr QuantFormat all_quant_formats[] = {QuantFormat::q8_0, QuantFormat::q4_0, QuantFormat::q5_0,
                                                    QuantFormat::q4_K, QuantFormat::q6_K, QuantFormat::i8_row};

// ggml's spelling ("q8_0", "q4_0", "q5_0", "q4_K", "q6_K") and "i8_row".
std::string_view quant_format_name(QuantFormat format);
bool parse_quant_format(std::string_view name, QuantFormat& out);

// ggml's name of each ggml format (ggml_type_name: "Q8_0", "Q4_0", "Q5_0", "Q4_K", "Q6_K") and
// its enum ggml_type value (ggml/include/ggml.h: 8, 2, 6, 12, 14), as GGUF files store and name
// it. i8_row is no ggml type.
struct GgmlType {
  std::string_view name;
  uint32_t id;
};
std::optional<GgmlType> ggml_type(QuantFormat format);
// The ggml format of that name; nullopt for any other name.
std::optional<QuantFormat> quant_format_of_ggml_name(std::string_view name);

struct BlockLayout {
  int64_t values;  // values per block
  int64_t bytes;   // bytes per block
};

// The block of `format` in a row of `row_length` values: fixed for the ggml formats, the
// whole row for i8_row.
BlockLayout block_layout(QuantFormat format, int64_t row_length);

// The values that share one scale (quant/block_fields.h): 32 (q4_K's sub-blocks too), 16 for
// q6_K's sub-blocks, the whole row of `row_length` for i8_row.
int64_t values_per_scale(QuantFormat format, int64_t row_length);
// Whether the format subtracts a min per sub-block (q4_K).
bool has_mins(QuantFormat format);

// Bytes of one row of `cols` values. Throws FormatError naming the format and the length
// when `cols` is negative or not a whole number of blocks, LimitError on overflow.
int64_t row_bytes(QuantFormat format, int64_t cols);

// Bytes of `rows` rows of `cols` values, with row_bytes' refusals and a FormatError for
// negative `rows`.
int64_t bytes_for(QuantFormat format, int64_t rows, int64_t cols);

}  // namespace cutcheck
