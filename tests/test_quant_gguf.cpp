// Quantized GGUF files (model/gguf_export.h, model/gguf.h): each tensor of an
// `export-gguf --dtype q8_0|q4_0|q4_k_m` file gets the type llama.cpp's recipe gives it (the
// tables here are worked out by hand from llama.cpp's src/llama-quant.cpp), holds the blocks
// of ggml's reference quantizers (quant/quantize.h, itself checked byte for byte against
// ggml by tests/quant_ggml_identity.cpp), and imports as exactly the dequantized weights,
// computed here row by row from quant/; the imported model generates the tokens of the same
// weights stored as F32. Seeded weights quantized through a format are the same values.
#include <gmock/gmock.h>

#include <cstring>
#include <map>

#include "core/error.h"
#include "core/half.h"
#include "harness/generate.h"
#include "harness/runner.h"
#include "model/checkpoint.h"
#include "model/gguf.h"
#include "model/gguf_export.h"
#include "model/llama2c.h"
#include "model/weights.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "tests/checkpoint_writers.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;

// Every row a whole number of 256-value blocks; 4 layers, so that use_more_bits picks
// layers 2 and 3 (i >= 7 * 4 / 8, and (i - 4 / 8) % 3 == 2).
ModelSpec k_quant_spec(bool tied) {
  ModelSpec s = builtin_spec("tiny");
  s.name = "q";
  s.vocab = 64, s.dim = 256, s.layers = 4, s.heads = 4, s.kv_heads = 2, s.head_dim = 64, s.ffn = 256;
  s.tied = tied;
  return s;
}

// stories260K's widths: rows of 64 values (no whole 256-value block) and ffn_down's of 172
// (no whole 32-value block).
ModelSpec stories_like_spec() {
  ModelSpec s = k_quant_spec(false);
  s.dim = 64, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.head_dim = 16, s.ffn = 172;
  return s;
}

// The ggml type name each weight must be stored in, by hand from llama_tensor_get_type and
// tensor_type_fallback: "F32" for norms.
std::string expected_type(const ModelSpec& spec, const std::string& name, GgufFileType type) {
  const WeightInfo w = [&] {
    for (const WeightInfo& i : weight_layout(spec))
      if (i.name == name) return i;
    throw std::out_of_range(name);
  }();
  if (w.shape.size() == 1) return "F32";
  const int64_t cols = w.shape.back();
  const bool head = name == weight::output() || (spec.tied && name == weight::embedding());
  bool more_bits = false;  // q4_k_m's attn_v and ffn_down of layer i of n: llama.cpp's use_more_bits
  const int64_t n = spec.layers;
  for (int64_t i = 0; i < n; ++i)
    if ((i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2) && (name == weight::wv(i) || name == weight::w2(i)))
      more_bits = true;
  switch (type) {
    case GgufFileType::q8_0: return cols % 32 == 0 ? "Q8_0" : "F16";
    case GgufFileType::q4_0:
      if (head) return cols % 256 == 0 ? "Q6_K" : cols % 32 == 0 ? "Q8_0" : "F16";
      return cols % 32 == 0 ? "Q4_0" : "F16";
    case GgufFileType::q4_k_m:
      if (head || more_bits) return cols % 256 == 0 ? "Q6_K" : cols % 32 == 0 ? "Q8_0" : "F16";
      return cols % 256 == 0 ? "Q4_K" : cols % 32 == 0 ? "Q5_0" : "F16";
    default: return "?";
  }
}

// `values` (f32, rows along the last dimension) as a file of type `ggml_name` stores them:
// the bytes, and the f32 values they import as.
std::pair<std::string, Tensor> as_stored(const Tensor& values, const std::string& ggml_name) {
  const int64_t cols = values.shape().back(), rows = values.elements() / cols;
  const float* x = values.as<float>().data();
  Tensor back({DType::f32, values.shape()});
  float* y = back.as_mut<float>().data();
  if (const auto format = quant_format_of_ggml_name(ggml_name)) {
    const int64_t stride = row_bytes(*format, cols);
    std::string bytes(size_t(rows * stride), '\0');
    for (int64_t r = 0; r < rows; ++r) {
      std::byte* b = reinterpret_cast<std::byte*>(bytes.data()) + r * stride;
      quantize_row_reference(*format, x + r * cols, cols, b);
      dequantize_row(*format, b, cols, y + r * cols);
    }
    return {bytes, back};
  }
  if (ggml_name == "F16") {
    std::string bytes(size_t(values.elements() * 2), '\0');
    for (int64_t i = 0; i < values.elements(); ++i) {
      const uint16_t bits = test::round_to_f16(x[i]);
      std::memcpy(bytes.data() + 2 * i, &bits, 2);
      y[i] = f16_to_f32(bits);
    }
    return {bytes, back};
  }
  return {std::string(reinterpret_cast<const char*>(x), size_t(values.bytes())), values};
}

std::vector<int32_t> greedy(const ImportedModel& m, int64_t steps) {
  ReferenceRunner runner(m.spec, m.weights);
  return generate(runner, m.spec, {{1}, steps, 0, Via::decode}).tokens;
}

// cutcheck's dtype for a ggml type name.
DType dtype_of_ggml(const std::string& ggml_name) {
  if (const auto format = quant_format_of_ggml_name(ggml_name)) return dtype_of(*format);
  return ggml_name == "F16" ? DType::f16 : ggml_name == "BF16" ? DType::bf16 : DType::f32;
}

// Writes `spec`'s weights as a file of `type`, and checks each tensor's type, its bytes and
// the values it imports as: kept in its own type, the file's bytes as they are (the spec
// naming each weight whose type is not the spec's), and with --widen as f32 values. Returns
// the import that keeps the types.
ImportedModel check_export(const ModelSpec& spec, const TensorMap& weights, GgufFileType type, const fs::path& file,
                           TensorMap& expected) {
  write_gguf(file, spec, weights, type);
  auto mapped = MappedFile::open(file);
  const GgufFile parsed = parse_gguf(mapped->bytes(), file.string(), mapped);
  const ImportedModel got = read_gguf(file), widened = read_gguf(file, true);
  EXPECT_EQ(widened.spec.dtype, DType::f32);
  EXPECT_TRUE(widened.spec.weight_dtypes.empty());
  std::map<DType, int> matrices;  // the spec's dtype is the type most matrices are in
  const auto names = checkpoint_name_map(spec, gguf_tensor_names);
  for (const WeightInfo& w : weight_layout(spec)) {
    const std::string want_type = expected_type(spec, w.name, type);
    const StoredTensor& stored = parsed.tensors.at(names.at(w.name)).stored;
    EXPECT_EQ(stored.dtype, want_type) << w.name << " in " << gguf_file_type_name(type);
    const std::string file_bytes(reinterpret_cast<const char*>(stored.bytes.data()), stored.bytes.size());
    const auto [bytes, values] = as_stored(weights.at(w.name), want_type);
    EXPECT_TRUE(file_bytes == bytes) << w.name << ": the file's bytes are not the reference quantizer's";
    const Tensor& kept = got.weights.at(w.name);
    EXPECT_EQ(kept.dtype(), dtype_of_ggml(want_type)) << w.name << " in " << gguf_file_type_name(type);
    EXPECT_EQ(stored_type(got.spec, w).dtype, kept.dtype()) << w.name;
    EXPECT_TRUE(std::string(reinterpret_cast<const char*>(kept.raw().data()), kept.raw().size()) == file_bytes)
        << w.name << ": not the file's bytes";
    if (w.shape.size() == 2) ++matrices[kept.dtype()];
    EXPECT_TRUE(widened.weights.at(w.name).same_bits(values)) << w.name << " in " << gguf_file_type_name(type);
    EXPECT_TRUE(f32_weights({{w.name, kept}}).at(w.name).same_bits(values)) << w.name;
    expected.insert_or_assign(w.name, values);
  }
  const auto most = std::max_element(matrices.begin(), matrices.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  EXPECT_EQ(got.spec.dtype, most->first);
  ModelSpec plain = got.spec;  // a weight has a type of its own only where the spec's would differ
  plain.weight_dtypes.clear();
  for (const auto& [name, own] : got.spec.weight_dtypes) EXPECT_NE(own, stored_type(plain, *find_weight(plain, name)).dtype);
  // The spec, weight_dtypes with it, is written and read back whole.
  EXPECT_EQ(ModelSpec::from_json(got.spec.to_json(), "spec"), got.spec);
  const TensorMap stored = gguf_stored_weights(spec, weights, type);  // what conform-engine's reference runs on
  for (const auto& [name, values] : expected) EXPECT_TRUE(stored.at(name).same_bits(values)) << name;
  return got;
}

TEST(QuantGguf, EachTensorGetsLlamaCppsTypeAndImportsAsItsDequantizedValues) {
  const fs::path dir = test::temp_dir("quant-gguf");
  for (bool tied : {false, true}) {
    const ModelSpec spec = k_quant_spec(tied);
    const TensorMap weights = synthetic_weights(spec, 11);
    for (GgufFileType type : {GgufFileType::q8_0, GgufFileType::q4_0, GgufFileType::q4_k_m}) {
      SCOPED_TRACE(gguf_file_type_name(type) + (tied ? " tied" : " untied"));
      TensorMap expected;
      check_export(spec, weights, type, dir / "q.gguf", expected);
    }
  }
}

TEST(QuantGguf, RowsThatAreNotWholeBlocksFallBackAsLlamaCppDoes) {
  const fs::path dir = test::temp_dir("quant-gguf-fallback");
  const ModelSpec spec = stories_like_spec();
  const TensorMap weights = synthetic_weights(spec, 12);
  // Q4_K rows of 64 values fall back to Q5_0, Q6_K's to Q8_0, and rows of 172 to F16.
  for (GgufFileType type : {GgufFileType::q8_0, GgufFileType::q4_0, GgufFileType::q4_k_m}) {
    SCOPED_TRACE(gguf_file_type_name(type));
    TensorMap expected;
    check_export(spec, weights, type, dir / "s.gguf", expected);
  }
}

// A value too large for a format's f16 scale: refused naming the weight, the row and the
// block, nothing written.
TEST(QuantGguf, ValuesTooLargeForTheFormatAreRefused) {
  const fs::path dir = test::temp_dir("quant-gguf-large");
  const ModelSpec spec = k_quant_spec(false);
  TensorMap weights = synthetic_weights(spec, 14);
  Tensor big = weights.at(weight::w3(1)).clone();
  big.as_mut<float>()[256 * 2 + 40] = 1e9f;  // row 2, block 1: d = 1e9 / 127 is beyond 65504
  weights[weight::w3(1)] = big;
  try {
    write_gguf(dir / "x.gguf", spec, weights, GgufFileType::q8_0);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("GGUF export: weight 'layers.1.feed_forward.w3' (Q8_0), row 2: q8_0 block 1 "
                                    "(values 32..63): its scale d"));
  }
  EXPECT_FALSE(fs::exists(dir / "x.gguf"));
}

// The import generates exactly what the same dequantized weights generate when a file
// stores them as F32.
TEST(QuantGguf, ImportGeneratesAsTheDequantizedWeightsStoredAsF32) {
  const fs::path dir = test::temp_dir("quant-gguf-generate");
  const ModelSpec spec = k_quant_spec(false);
  const TensorMap weights = synthetic_weights(spec, 13);
  for (GgufFileType type : {GgufFileType::q8_0, GgufFileType::q4_0, GgufFileType::q4_k_m}) {
    SCOPED_TRACE(gguf_file_type_name(type));
    TensorMap expected;
    const ImportedModel quantized = check_export(spec, weights, type, dir / "q.gguf", expected);
    write_gguf(dir / "f32.gguf", spec, expected, DType::f32);
    const ImportedModel f32 = read_gguf(dir / "f32.gguf");
    const std::vector<int32_t> tokens = greedy(quantized, 24);
    EXPECT_EQ(tokens, greedy(f32, 24));
    EXPECT_EQ(tokens.size(), 24u);
  }
}

// stories260K in Q8_0 and Q4_0 (ffn_down, 172 wide, in F16; Q4_0's head in Q8_0): the import
// is the dequantized weights, and how far its greedy tokens follow the f32 model's.
TEST(QuantGguf, Stories260KInQ8_0AndQ4_0) {
  SKIP_WITHOUT_SHARED(shared);
  const Llama2cModel m = read_llama2c(shared / "models" / "stories260K.bin");
  const fs::path dir = test::temp_dir("quant-gguf-stories");
  ImportedModel original{m.spec, m.weights};
  const std::vector<int32_t> want = greedy(original, 64);
  for (GgufFileType type : {GgufFileType::q8_0, GgufFileType::q4_0}) {
    SCOPED_TRACE(gguf_file_type_name(type));
    TensorMap expected;
    const ImportedModel quantized = check_export(m.spec, m.weights, type, dir / "s.gguf", expected);
    const std::vector<int32_t> got = greedy(quantized, 64);
    size_t same = 0;
    while (same < got.size() && got[same] == want[same]) ++same;
    std::printf("stories260K %s: the first %zu of 64 greedy tokens are the f32 model's\n",
                gguf_file_type_name(type).c_str(), same);
  }
}

// `weights --dtype`: seeded f32 weights whose matrices went through a format, row by row as
// here, and the same values a q8_0 export of the seeded weights imports as.
TEST(QuantGguf, SeededWeightsThroughAFormat) {
  const fs::path dir = test::temp_dir("quant-seeded");
  ModelSpec spec = k_quant_spec(false);
  spec.dtype = DType::f32;
  const TensorMap plain = synthetic_weights(spec, 5);
  for (QuantFormat format : {QuantFormat::q8_0, QuantFormat::q4_0, QuantFormat::q4_K, QuantFormat::q6_K}) {
    SCOPED_TRACE(std::string(quant_format_name(format)));
    write_synthetic_weights(dir / "w", spec, 5, format);
    const TensorMap got = read_weights(dir / "w", spec);
    for (const WeightInfo& w : weight_layout(spec)) {
      const std::string stored = w.shape.size() == 1 ? "F32" : std::string(ggml_type(format)->name);
      EXPECT_TRUE(got.at(w.name).same_bits(as_stored(plain.at(w.name), stored).second)) << w.name;
    }
  }
  write_synthetic_weights(dir / "w", spec, 5, QuantFormat::q8_0);
  write_gguf(dir / "q8.gguf", spec, plain, GgufFileType::q8_0);
  const TensorMap seeded = read_weights(dir / "w", spec);
  const TensorMap imported = f32_weights(read_gguf(dir / "q8.gguf").weights);
  for (const auto& [name, t] : seeded) EXPECT_TRUE(imported.at(name).same_bits(t)) << name;
  // Rows that are not whole blocks, and i8_row (no ggml block), are refused.
  EXPECT_THROW(write_synthetic_weights(dir / "x", stories_like_spec(), 5, QuantFormat::q8_0), Error);
  EXPECT_THROW(write_synthetic_weights(dir / "x", spec, 5, QuantFormat::i8_row), Error);
  EXPECT_FALSE(fs::exists(dir / "x"));
}

}  // namespace
}  // namespace cutcheck
