// cutcheck's quantizers and dequantization against ggml's own, loaded from a libggml-base
// shared library (llama.cpp's, as node-llama-cpp ships it): the same f32 rows quantized by
// ggml_quantize_chunk (without an importance matrix, as llama-quantize calls it) and by
// quantize_row_reference give the same bytes, and ggml's dequantize_row_* and cutcheck's
// dequantize_row give the same f32 bits, for Q8_0, Q4_0, Q5_0, Q4_K and Q6_K; f32_to_f16 agrees
// with ggml_fp32_to_fp16. Rows cutcheck refuses (values too large for the format) are
// counted, and ggml's block for them is checked to carry an infinite scale or a
// non-finite fit.
//   usage: cutcheck-quant-ggml-identity LIBGGML_BASE [ROWS_PER_KIND]
// Exits 0 when everything agrees, 1 on a difference, 2 on bad usage; without the library
// it says so and exits 0, unless CUTCHECK_REQUIRE_LLAMACPP is set.
#include <dlfcn.h>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/random.h"
#include "core/quant_blocks.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"

namespace {

using namespace cutcheck;

using QuantizeChunk = size_t (*)(int type, const float* src, void* dst, int64_t start, int64_t nrows, int64_t n_per_row,
                                 const float* imatrix);
using DequantizeRow = void (*)(const void* blocks, float* out, int64_t k);
using Fp32ToFp16 = uint16_t (*)(float);

struct Format {
  QuantFormat format;
  int ggml_type;  // enum ggml_type
  DequantizeRow dequantize;
};

void* symbol(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) {
    fmt::print("no symbol {} in the library\n", name);
    std::exit(2);
  }
  return p;
}

// A row of n values of one kind (see `kinds` below).
using RowMaker = std::function<void(SplitMix64&, std::vector<float>&)>;

float gaussian(SplitMix64& rng) { return float(rng.normal()); }

// Values on a grid of halves and quarters times a power of two: ties for roundf and nearest_int.
float on_grid(SplitMix64& rng) {
  const int k = int(rng.next() % 64) - 32;
  return float(k) * 0.25f * std::ldexp(1.0f, int(rng.next() % 9) - 4);
}

std::vector<std::pair<std::string, RowMaker>> kinds() {
  std::vector<std::pair<std::string, RowMaker>> k;
  k.push_back({"gaussian", [](SplitMix64& r, std::vector<float>& x) {
                 for (float& v : x) v = gaussian(r);
               }});
  k.push_back({"gaussian, a random scale 2^-30..2^20 per block of 32", [](SplitMix64& r, std::vector<float>& x) {
                 for (size_t b = 0; b < x.size(); b += 32) {
                   const float s = std::ldexp(1.0f, int(r.next() % 51) - 30);
                   for (size_t i = b; i < b + 32; ++i) x[i] = gaussian(r) * s;
                 }
               }});
  k.push_back({"uniform, positive only", [](SplitMix64& r, std::vector<float>& x) {
                 for (float& v : x) v = std::fabs(r.symmetric());
               }});
  k.push_back({"uniform, negative only, offset", [](SplitMix64& r, std::vector<float>& x) {
                 for (float& v : x) v = -3.0f - std::fabs(r.symmetric());
               }});
  k.push_back({"all-zero blocks among gaussian ones", [](SplitMix64& r, std::vector<float>& x) {
                 for (size_t b = 0; b < x.size(); b += 32) {
                   const bool zero = r.next() % 2;
                   for (size_t i = b; i < b + 32; ++i) x[i] = zero ? 0.0f : gaussian(r);
                 }
               }});
  k.push_back({"negative zeros and zeros", [](SplitMix64& r, std::vector<float>& x) {
                 for (float& v : x) v = r.next() % 2 ? -0.0f : 0.0f;
               }});
  k.push_back({"a single nonzero value", [](SplitMix64& r, std::vector<float>& x) {
                 std::fill(x.begin(), x.end(), 0.0f);
                 x[r.next() % x.size()] = gaussian(r) * std::ldexp(1.0f, int(r.next() % 41) - 20);
               }});
  k.push_back({"one nonzero value per block of 16", [](SplitMix64& r, std::vector<float>& x) {
                 std::fill(x.begin(), x.end(), 0.0f);
                 for (size_t b = 0; b < x.size(); b += 16) x[b + r.next() % 16] = gaussian(r);
               }});
  k.push_back({"a constant", [](SplitMix64& r, std::vector<float>& x) {
                 std::fill(x.begin(), x.end(), gaussian(r));
               }});
  k.push_back({"equal magnitudes of both signs", [](SplitMix64& r, std::vector<float>& x) {
                 const float m = std::fabs(gaussian(r)) + 0.5f;
                 for (float& v : x) v = r.next() % 3 == 0 ? m : r.next() % 2 ? -m : gaussian(r) * 0.3f;
               }});
  k.push_back({"ties: values on a grid of quarters", [](SplitMix64& r, std::vector<float>& x) {
                 for (float& v : x) v = on_grid(r);
               }});
  // Rows whose blocks make Q8_0's d (amax / 127) or Q4_0's d (max / -8) a power of two, and
  // their other values multiples of half of it: every code a tie for roundf or floor(v + 8.5).
  k.push_back({"ties: amax = 127 x 2^e, the rest multiples of 2^(e-1)", [](SplitMix64& r, std::vector<float>& x) {
                 for (size_t b = 0; b < x.size(); b += 32) {
                   const float unit = std::ldexp(1.0f, int(r.next() % 21) - 10);
                   for (size_t i = b; i < b + 32; ++i) x[i] = float(int(r.next() % 253) - 126) * 0.5f * unit;
                   x[b + r.next() % 32] = (r.next() % 2 ? 127.0f : -127.0f) * unit;
                 }
               }});
  k.push_back({"ties: max = -8 x 2^e, the rest multiples of 2^(e-1)", [](SplitMix64& r, std::vector<float>& x) {
                 for (size_t b = 0; b < x.size(); b += 32) {
                   const float unit = std::ldexp(1.0f, int(r.next() % 21) - 10);
                   for (size_t i = b; i < b + 32; ++i) x[i] = float(int(r.next() % 31) - 15) * 0.5f * unit;
                   x[b + r.next() % 32] = -8.0f * unit;
                 }
               }});
  k.push_back({"ties: max = -16 x 2^e, the rest multiples of 2^(e-1)", [](SplitMix64& r, std::vector<float>& x) {
                 for (size_t b = 0; b < x.size(); b += 32) {
                   const float unit = std::ldexp(1.0f, int(r.next() % 21) - 10);
                   for (size_t i = b; i < b + 32; ++i) x[i] = float(int(r.next() % 63) - 31) * 0.5f * unit;
                   x[b + r.next() % 32] = -16.0f * unit;
                 }
               }});
  k.push_back({"small integers", [](SplitMix64& r, std::vector<float>& x) {
                 for (float& v : x) v = float(int(r.next() % 31) - 15);
               }});
  k.push_back({"huge: gaussian times 2^10..2^30", [](SplitMix64& r, std::vector<float>& x) {
                 const float s = std::ldexp(1.0f, int(r.next() % 21) + 10);
                 for (float& v : x) v = gaussian(r) * s;
               }});
  k.push_back({"tiny: gaussian times 2^-60..2^-20", [](SplitMix64& r, std::vector<float>& x) {
                 const float s = std::ldexp(1.0f, -int(r.next() % 41) - 20);
                 for (float& v : x) v = gaussian(r) * s;
               }});
  k.push_back({"very tiny: gaussian times 2^-149..2^-110 (subnormals)", [](SplitMix64& r, std::vector<float>& x) {
                 const float s = std::ldexp(1.0f, -int(r.next() % 40) - 110);
                 for (float& v : x) v = gaussian(r) * s;
               }});
  k.push_back({"outliers: gaussian with one value in 64 times 100", [](SplitMix64& r, std::vector<float>& x) {
                 for (float& v : x) v = gaussian(r) * (r.next() % 64 == 0 ? 100.0f : 1.0f);
               }});
  k.push_back({"random bit patterns (finite)", [](SplitMix64& r, std::vector<float>& x) {
                 for (float& v : x) {
                   do v = std::bit_cast<float>(uint32_t(r.next()));
                   while (!std::isfinite(v));
                 }
               }});
  return k;
}

bool scale_is_infinite(QuantFormat format, const std::byte* block) {
  auto inf = [&](int offset) { return (uint16_t(uint8_t(block[offset]) | uint8_t(block[offset + 1]) << 8) & 0x7c00) == 0x7c00; };
  switch (format) {
    case QuantFormat::q8_0:
    case QuantFormat::q4_0:
    case QuantFormat::q5_0: return inf(0);
    case QuantFormat::q4_K: return inf(0) || inf(2);
    case QuantFormat::q6_K: return inf(208);
    case QuantFormat::i8_row: break;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fmt::print("usage: cutcheck-quant-ggml-identity LIBGGML_BASE [ROWS_PER_KIND]\n");
    return 2;
  }
  const std::string path = argv[1];
  const int rows_per_kind = argc == 3 ? std::atoi(argv[2]) : 200;
  if (!std::filesystem::exists(path)) {
    if (std::getenv("CUTCHECK_REQUIRE_LLAMACPP")) {
      fmt::print("CUTCHECK_REQUIRE_LLAMACPP is set, but {} is missing\n", path);
      return 1;
    }
    fmt::print("quant ggml identity: skipped (no {})\n", path);
    return 0;
  }
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fmt::print("cannot load {}: {}\n", path, dlerror());
    return 2;
  }
  const auto quantize_chunk = reinterpret_cast<QuantizeChunk>(symbol(lib, "ggml_quantize_chunk"));
  const auto fp32_to_fp16 = reinterpret_cast<Fp32ToFp16>(symbol(lib, "ggml_fp32_to_fp16"));
  const Format formats[] = {
      {QuantFormat::q8_0, 8, reinterpret_cast<DequantizeRow>(symbol(lib, "dequantize_row_q8_0"))},
      {QuantFormat::q4_0, 2, reinterpret_cast<DequantizeRow>(symbol(lib, "dequantize_row_q4_0"))},
      {QuantFormat::q5_0, 6, reinterpret_cast<DequantizeRow>(symbol(lib, "dequantize_row_q5_0"))},
      {QuantFormat::q4_K, 12, reinterpret_cast<DequantizeRow>(symbol(lib, "dequantize_row_q4_K"))},
      {QuantFormat::q6_K, 14, reinterpret_cast<DequantizeRow>(symbol(lib, "dequantize_row_q6_K"))},
  };

  int failures = 0;
  // f16 narrowing: every f16 value's neighbourhood and random bit patterns, NaN and infinities included.
  {
    SplitMix64 rng{11};
    int64_t checked = 0, differ = 0;
    auto check = [&](float v) {
      ++checked;
      if (fp32_to_fp16(v) != f32_to_f16(v) && differ++ < 5) {
        fmt::print("f16: {} (bits 0x{:08x}): ggml 0x{:04x}, cutcheck 0x{:04x}\n", v, std::bit_cast<uint32_t>(v),
                   fp32_to_fp16(v), f32_to_f16(v));
      }
    };
    for (uint32_t bits = 0; bits < 0x10000; ++bits) {
      const float h = f16_to_f32(uint16_t(bits));
      check(h);
      check(std::nextafter(h, INFINITY));
      check(std::nextafter(h, -INFINITY));
    }
    for (int i = 0; i < 1000000; ++i) check(std::bit_cast<float>(uint32_t(rng.next())));
    fmt::print("f16 narrowing: {} values, {} differ\n", checked, differ);
    failures += differ != 0;
  }

  const auto row_kinds = kinds();
  for (const Format& f : formats) {
    const std::string_view name = quant_format_name(f.format);
    const int64_t block_values = block_layout(f.format, 0).values;
    int64_t rows = 0, blocks = 0, refused = 0, differ = 0, dequant_differ = 0;
    SplitMix64 rng{fnv1a(name)};
    for (const auto& [kind, make] : row_kinds) {
      for (int r = 0; r < rows_per_kind; ++r) {
        // Rows of 1 to 4 blocks (1 to 16 for the 32-value formats).
        const int64_t n = block_values * int64_t(1 + rng.next() % (block_values == 32 ? 16 : 4));
        std::vector<float> x(static_cast<size_t>(n));
        make(rng, x);
        const int64_t bytes = row_bytes(f.format, n);
        std::vector<std::byte> theirs(static_cast<size_t>(bytes)), ours(static_cast<size_t>(bytes));
        quantize_chunk(f.ggml_type, x.data(), theirs.data(), 0, 1, n, nullptr);
        ++rows;
        blocks += n / block_values;
        try {
          quantize_row_reference(f.format, x.data(), n, ours.data());
        } catch (const InputError& e) {
          ++refused;
          bool theirs_overflowed = false;
          for (int64_t b = 0; b < n / block_values; ++b) {
            theirs_overflowed |= scale_is_infinite(f.format, theirs.data() + b * block_layout(f.format, 0).bytes);
          }
          if (!theirs_overflowed && std::string(e.what()).find("fitted") == std::string::npos) {
            fmt::print("{} [{}]: refused ({}) but ggml's scales are finite\n", name, kind, e.what());
            ++differ;
          }
          continue;
        }
        if (theirs != ours) {
          if (differ++ < 5) {
            int64_t at = 0;
            while (theirs[size_t(at)] == ours[size_t(at)]) ++at;
            const int64_t block = at / block_layout(f.format, 0).bytes;
            fmt::print("{} [{}]: row of {} differs first at byte {} (block {}, byte {}): ggml 0x{:02x}, cutcheck 0x{:02x}\n",
                       name, kind, n, at, block, at % block_layout(f.format, 0).bytes, uint8_t(theirs[size_t(at)]),
                       uint8_t(ours[size_t(at)]));
            fmt::print("  values:");
            for (int64_t i = block * block_values; i < (block + 1) * block_values; ++i) {
              fmt::print(" {}", std::bit_cast<uint32_t>(x[size_t(i)]));
            }
            fmt::print("\n");
          }
          continue;
        }
        // Dequantization of ggml's blocks, and of the same blocks with random codes (the scales kept).
        std::vector<std::byte> mixed = theirs;
        for (size_t i = 0; i < mixed.size(); ++i) {
          if (rng.next() % 2) mixed[i] = std::byte(rng.next());
        }
        for (int64_t b = 0; b < n / block_values; ++b) {  // keep the scales finite: restore them where not
          std::byte* block = mixed.data() + b * block_layout(f.format, 0).bytes;
          const std::byte* orig = theirs.data() + b * block_layout(f.format, 0).bytes;
          if (scale_is_infinite(f.format, block)) std::memcpy(block, orig, size_t(block_layout(f.format, 0).bytes));
        }
        for (const auto* blocks_of : {&theirs, &mixed}) {
          std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
          f.dequantize(blocks_of->data(), a.data(), n);
          dequantize_row(f.format, blocks_of->data(), n, b.data());
          if (std::memcmp(a.data(), b.data(), size_t(n) * 4) != 0 && dequant_differ++ < 5) {
            fmt::print("{} [{}]: dequantized values differ\n", name, kind);
          }
        }
      }
    }
    fmt::print("{}: {} rows ({} blocks) of {} kinds: {} refused as too large, {} differ in bytes, {} differ when dequantized\n",
               name, rows, blocks, row_kinds.size(), refused, differ, dequant_differ);
    failures += differ != 0 || dequant_differ != 0;
  }
  dlclose(lib);
  fmt::print("{}\n", failures ? "FAIL" : "ok: byte-identical to ggml");
  return failures ? 1 : 0;
}
