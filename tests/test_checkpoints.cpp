// The Hugging Face and GGUF importers against the test suite's own writers
// (tests/checkpoint_writers.h): stories260K converted to each format imports and
// generates llama2.c's tokens; the 16-bit files stay within their precision's bound of
// the f32 import; malformed folders and files are refused naming the file and the key
// or tensor.
#include <gmock/gmock.h>

#include <cmath>

#include "core/error.h"
#include "core/limits.h"
#include "core/half.h"
#include "harness/generate.h"
#include "harness/runner.h"
#include "harness/tolerance.h"
#include "model/gguf.h"
#include "model/hf.h"
#include "model/llama2c.h"
#include "model/signature.h"
#include "model/weights.h"
#include "tests/checkpoint_writers.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using test::GgufWriter;
using test::HfFolder;
using test::Stored;
using ::testing::HasSubstr;

std::vector<int32_t> fixture_tokens(const fs::path& shared) {
  const fs::path path = shared / "fixtures" / "stories260K-greedy.json";
  return parse_json(test::read_whole(path), path.string()).at("tokens").get<std::vector<int32_t>>();
}

std::vector<int32_t> greedy_tokens(const ImportedModel& m) {
  ReferenceRunner runner(m.spec, m.weights);
  return generate(runner, m.spec, {{1}, 64, 0, Via::decode}).tokens;
}

ImportedModel gguf_model(const GgufWriter& g, const std::string& name) {
  auto bytes = std::make_shared<std::string>(g.bytes());
  return read_gguf(std::as_bytes(std::span(bytes->data(), bytes->size())), name, bytes);
}

// The worst headroom (|got - want| over what the bound allows) of the rounded model's
// logits, next token and caches against the exact model's, over prefixes of `sequence`
// fed as one prefill each; fails the test where a prefix is outside the bound.
double worst_headroom(const ImportedModel& exact, const ImportedModel& rounded, Precision precision,
                      const std::vector<int32_t>& sequence, bool expect_ok = true) {
  ReferenceRunner want(exact.spec, exact.weights), got(rounded.spec, rounded.weights);
  const Tolerance tolerance = Tolerance::bound(precision);
  double worst = 0;
  bool all_ok = true;
  for (int64_t n : {1, 2, 4, 8, 16, 32, 48, 65}) {
    const Cut cut = Cut::prefill(n, n);
    TensorMap inputs;
    for (const Port& port : signature(cut, exact.spec).inputs) inputs.emplace(port.name, Tensor(port.type));
    inputs["tokens"] = Tensor::of_i32({n}, std::vector<int32_t>(sequence.begin(), sequence.begin() + n));
    const Comparison c = compare(want.expect(cut, inputs, tolerance), got.run(cut, inputs), tolerance);
    all_ok = all_ok && c.ok;
    if (expect_ok) {
      EXPECT_TRUE(c.ok) << "prefix of " << n << ": " << c.failure;
    }
    for (const OutputError& e : c.outputs) worst = std::max(worst, e.headroom);
  }
  if (!expect_ok) {
    EXPECT_FALSE(all_ok) << "the bound passed a model that should fail it";
  }
  return worst;
}

struct Stories {
  ModelSpec spec;
  TensorMap weights;
  std::vector<int32_t> sequence;  // the prompt [1] and the fixture's 64 tokens
};

Stories stories(const fs::path& shared) {
  Llama2cModel m = read_llama2c(shared / "models" / "stories260K.bin");
  Stories s{m.spec, m.weights, {1}};
  for (int32_t t : fixture_tokens(shared)) s.sequence.push_back(t);
  return s;
}

TEST(HalfFloats, WidenExactly) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc040), -3.0f);
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), 0x1p-24f);  // the smallest subnormal
  EXPECT_EQ(f16_to_f32(0x83ff), -1023 * 0x1p-24f);
  EXPECT_EQ(f16_to_f32(0x0400), 0x1p-14f);  // the smallest normal
  EXPECT_TRUE(std::isinf(f16_to_f32(0xfc00)) && f16_to_f32(0xfc00) < 0);
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  // Every f16 pattern widens to a value that the writer's rounding maps back to it.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float v = f16_to_f32(uint16_t(bits));
    if (std::isfinite(v)) {
      ASSERT_EQ(test::round_to_f16(v), bits) << bits;
    }
  }
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float v = bf16_to_f32(uint16_t(bits));
    if (std::isfinite(v)) {
      ASSERT_EQ(test::round_to_bf16(v), bits) << bits;
    }
  }
}

TEST(ImportHf, StoriesInF32GeneratesLlama2cTokens) {
  SKIP_WITHOUT_SHARED(shared);
  const Stories s = stories(shared);
  const fs::path dir = test::temp_dir("hf-f32") / "stories260K";
  HfFolder::of(s.spec, s.weights, Stored::f32).write(dir);
  ImportedModel m = read_hf(dir);
  ModelSpec want = s.spec;
  want.name = "stories260K", want.rope_style = RopeStyle::half;
  EXPECT_EQ(m.spec, want);
  EXPECT_EQ(greedy_tokens(m), std::vector<int32_t>(s.sequence.begin() + 1, s.sequence.end()));
}

TEST(ImportHf, ShardedFolderReadsTheSameWeights) {
  SKIP_WITHOUT_SHARED(shared);
  const Stories s = stories(shared);
  const fs::path one = test::temp_dir("hf-one"), three = test::temp_dir("hf-three");
  const HfFolder folder = HfFolder::of(s.spec, s.weights, Stored::f32);
  folder.write(one);
  folder.write(three, 3);
  ImportedModel a = read_hf(one), b = read_hf(three);
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (const auto& [name, t] : a.weights) EXPECT_TRUE(t.same_bits(b.weights.at(name))) << name;
}

TEST(ImportHf, ForgettingHuggingFacesRowOrderIsCaught) {
  SKIP_WITHOUT_SHARED(shared);
  const Stories s = stories(shared);
  const fs::path dir = test::temp_dir("hf-unpermuted");
  HfFolder::of(s.spec, s.weights, Stored::f32, false).write(dir);
  ImportedModel wrong = read_hf(dir);
  EXPECT_NE(greedy_tokens(wrong), std::vector<int32_t>(s.sequence.begin() + 1, s.sequence.end()));
  // and the bound comparison the bf16 test relies on sees it
  const fs::path right = test::temp_dir("hf-right");
  HfFolder::of(s.spec, s.weights, Stored::f32).write(right);
  worst_headroom(read_hf(right), wrong, Precision::bf16, s.sequence, false);
}

TEST(ImportHf, StoriesInBf16StaysWithinTheBf16BoundOfF32) {
  SKIP_WITHOUT_SHARED(shared);
  const Stories s = stories(shared);
  const fs::path f32_dir = test::temp_dir("hf-f32b"), bf16_dir = test::temp_dir("hf-bf16");
  HfFolder::of(s.spec, s.weights, Stored::f32).write(f32_dir);
  HfFolder::of(s.spec, s.weights, Stored::bf16).write(bf16_dir);
  const ImportedModel exact = read_hf(f32_dir), rounded = read_hf(bf16_dir);
  const double worst = worst_headroom(exact, rounded, Precision::bf16, s.sequence);
  // Not asserted: rounded weights may legitimately flip a near tie.
  const std::vector<int32_t> tokens = greedy_tokens(rounded);
  const auto same = std::mismatch(tokens.begin(), tokens.end(), s.sequence.begin() + 1).first - tokens.begin();
  std::printf("bf16 import: worst headroom against the f32 import's bf16 bound %.3g; greedy tokens equal to "
              "llama2.c's for the first %td of 64\n", worst, same);
  RecordProperty("bf16_worst_headroom", std::to_string(worst));
  // The weights stay bf16, viewed in the file; widened (--widen) they are those values in f32,
  // which differ from the f32 import's by bf16 rounding only.
  EXPECT_EQ(rounded.spec.dtype, DType::bf16);
  EXPECT_EQ(exact.spec.dtype, DType::f32);
  const ImportedModel wide = read_hf(bf16_dir, true);
  EXPECT_EQ(wide.spec.dtype, DType::f32);
  const Tensor& stored = rounded.weights.at(weight::wq(0));
  ASSERT_EQ(stored.dtype(), DType::bf16);
  const auto* bits = reinterpret_cast<const uint16_t*>(stored.raw().data());
  const auto a = exact.weights.at(weight::wq(0)).as<float>(), b = wide.weights.at(weight::wq(0)).as<float>();
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(b[i], bf16_to_f32(bits[i])) << i;
    differs = differs || a[i] != b[i];
    EXPECT_LE(std::abs(a[i] - b[i]), std::abs(a[i]) * 0x1p-8f) << i;
  }
  EXPECT_TRUE(differs);
  // Kept in bf16 or widened, the model computes the same bits (widening is exact).
  const Cut cut = Cut::prefill(8, 8);
  TensorMap inputs;
  for (const Port& port : signature(cut, s.spec).inputs) inputs.emplace(port.name, Tensor(port.type));
  inputs["tokens"] = Tensor::of_i32({8}, std::vector<int32_t>(s.sequence.begin(), s.sequence.begin() + 8));
  ReferenceRunner kept(rounded.spec, rounded.weights), widened(wide.spec, wide.weights);
  const TensorMap x = kept.run(cut, inputs), y = widened.run(cut, inputs);
  for (const auto& [name, t] : x) EXPECT_TRUE(t.same_bits(y.at(name))) << name;
}

TEST(ImportGguf, F32NormsBesideBf16MatricesKeepBf16WhenExact) {
  ModelSpec spec = builtin_spec("tiny");
  const TensorMap weights = synthetic_weights(spec, 4);
  auto with_f32_norm = [&](bool exact) {
    GgufWriter g = GgufWriter::of(spec, weights, Stored::bf16);
    GgufWriter::TensorInfo& norm = g.tensor("output_norm.weight");  // llama.cpp keeps norms in F32
    const auto values = weights.at(weight::final_norm()).as<float>();
    norm.type = 0;
    norm.data.clear();
    for (float v : values) {
      float f = exact ? bf16_to_f32(test::round_to_bf16(v)) : v;
      norm.data.append(reinterpret_cast<const char*>(&f), 4);
    }
    return gguf_model(g, "mixed.gguf");
  };
  EXPECT_EQ(with_f32_norm(true).spec.dtype, DType::bf16);
  EXPECT_EQ(with_f32_norm(true).weights.at(weight::final_norm()).dtype(), DType::bf16);
  // A value bf16 cannot hold: the whole model is widened rather than rounded.
  EXPECT_EQ(with_f32_norm(false).spec.dtype, DType::f32);
  EXPECT_EQ(with_f32_norm(false).weights.at(weight::wq(0)).dtype(), DType::f32);
}

TEST(ImportGguf, StoriesInF32GeneratesLlama2cTokens) {
  SKIP_WITHOUT_SHARED(shared);
  const Stories s = stories(shared);
  ImportedModel m = gguf_model(GgufWriter::of(s.spec, s.weights, Stored::f32), "stories260K.gguf");
  ModelSpec want = s.spec;
  want.name = "stories260K";
  EXPECT_EQ(m.spec, want);
  // llama.cpp's permutation undoes Hugging Face's: the weights are llama2.c's, bit for bit.
  for (const auto& [name, t] : s.weights) EXPECT_TRUE(t.same_bits(m.weights.at(name))) << name;
  EXPECT_EQ(greedy_tokens(m), std::vector<int32_t>(s.sequence.begin() + 1, s.sequence.end()));
}

TEST(ImportGguf, StoriesInF16AndBf16StayWithinTheirBoundsOfF32) {
  SKIP_WITHOUT_SHARED(shared);
  const Stories s = stories(shared);
  const ImportedModel exact = gguf_model(GgufWriter::of(s.spec, s.weights, Stored::f32), "f32.gguf");
  for (auto [stored, precision, name] : {std::tuple{Stored::f16, Precision::f16, "f16"},
                                         std::tuple{Stored::bf16, Precision::bf16, "bf16"}}) {
    GgufWriter g = GgufWriter::of(s.spec, s.weights, stored);
    g.alignment = 64;
    g.set_u32("general.alignment", 64);
    const double worst = worst_headroom(exact, gguf_model(g, name), precision, s.sequence);
    std::printf("%s GGUF: worst headroom against the f32 import's %s bound %.3g\n", name, name, worst);
  }
}

TEST(ImportGguf, UntiedHeadAndOtherAlignments) {
  ModelSpec spec = builtin_spec("tiny");
  spec.tied = false;
  const TensorMap weights = synthetic_weights(spec, 7);
  for (uint64_t alignment : {1u, 8u, 256u}) {
    GgufWriter g = GgufWriter::of(spec, weights, Stored::f32);
    g.alignment = alignment;
    g.set_u32("general.alignment", uint32_t(alignment));
    ImportedModel m = gguf_model(g, "tiny.gguf");
    EXPECT_FALSE(m.spec.tied);
    for (const auto& [name, t] : weights) EXPECT_TRUE(t.same_bits(m.weights.at(name))) << name << " at " << alignment;
  }
}

TEST(ImportGguf, LinearRopeScaling) {
  const ModelSpec spec = builtin_spec("tiny");
  GgufWriter g = GgufWriter::of(spec, synthetic_weights(spec, 7), Stored::f32);
  g.set_string("llama.rope.scaling.type", "linear");
  g.set_f32("llama.rope.scaling.factor", 4.0f);
  EXPECT_EQ(gguf_model(g, "tiny.gguf").spec.rope_scaling, (RopeScaling{RopeScalingType::linear, 4}));
  g.set_string("llama.rope.scaling.type", "none");
  EXPECT_EQ(gguf_model(g, "tiny.gguf").spec.rope_scaling, RopeScaling{});
}

TEST(ImportHf, UntiedHeadAndMistral) {
  ModelSpec spec = builtin_spec("tiny");
  spec.tied = false;
  const TensorMap weights = synthetic_weights(spec, 7);
  HfFolder f = HfFolder::of(spec, weights, Stored::f32);
  f.config["architectures"] = {"MistralForCausalLM"};
  f.config["model_type"] = "mistral";
  f.config["sliding_window"] = nullptr;
  const fs::path dir = test::temp_dir("hf-mistral");
  f.write(dir);
  ImportedModel m = read_hf(dir);
  EXPECT_FALSE(m.spec.tied);
  EXPECT_TRUE(m.weights.at(weight::output()).same_bits(weights.at(weight::output())));
}

// Qwen2 (q, k, v biases), Qwen3 (q and k norms, heads wider than dim / heads), Mistral
// (a window) and Llama 3.1's rope_scaling, as the test suite's writer makes them from a
// spec in Meta's order: each imports as the half-rotary spec with the same knobs, and
// computes the same logits (within f32 rounding: the layouts sum q . k in other orders).
TEST(ImportHf, Qwen2Qwen3MistralAndLlama3Knobs) {
  struct Variant {
    const char* architecture;
    void (*set)(ModelSpec&);
  };
  const Variant variants[] = {
      {"Qwen2ForCausalLM", [](ModelSpec& s) { s.attention_bias = true; }},
      {"Qwen3ForCausalLM", [](ModelSpec& s) { s.qk_norm = true, s.head_dim = 8, s.tied = false; }},
      {"Qwen2ForCausalLM", [](ModelSpec& s) { s.attention_bias = true, s.sliding_window = 5; }},
      {"MistralForCausalLM", [](ModelSpec& s) { s.sliding_window = 7; }},
      {"LlamaForCausalLM", [](ModelSpec& s) { s.rope_scaling = {RopeScalingType::llama3, 8, 1, 4, 64}; }},
      {"LlamaForCausalLM", [](ModelSpec& s) { s.rope_scaling = {RopeScalingType::linear, 4}; }},
  };
  std::vector<int32_t> sequence;
  for (int32_t i = 0; i < 65; ++i) sequence.push_back((7 * i + 1) % 32);
  int n = 0;
  for (const Variant& v : variants) {
    ModelSpec spec = builtin_spec("tiny");
    v.set(spec);
    const TensorMap weights = synthetic_weights(spec, 5);
    const HfFolder folder = HfFolder::of(spec, weights, Stored::f32);
    EXPECT_EQ(folder.config.at("architectures")[0], v.architecture);
    const fs::path dir = test::temp_dir("hf-knobs-" + std::to_string(n++)) / "m";
    folder.write(dir);
    const ImportedModel imported = read_hf(dir);
    ModelSpec expected = spec;
    expected.name = "m", expected.rope_style = RopeStyle::half;
    EXPECT_EQ(imported.spec, expected) << imported.spec.summary();
    // The caches hold k in each layout's own order, so the logits and next tokens speak.
    ReferenceRunner want(spec, weights), got(imported.spec, imported.weights);
    for (int64_t rows : {1, 8, 33, 65}) {
      const Cut cut = Cut::prefill(rows, rows);
      TensorMap inputs;
      for (const Port& port : signature(cut, spec).inputs) inputs.emplace(port.name, Tensor(port.type));
      inputs["tokens"] = Tensor::of_i32({rows}, std::vector<int32_t>(sequence.begin(), sequence.begin() + rows));
      const TensorMap a = want.run(cut, inputs), b = got.run(cut, inputs);
      EXPECT_THAT(test::floats(b.at("logits")), ::testing::Pointwise(::testing::FloatNear(2e-5f), test::floats(a.at("logits"))))
          << v.architecture << " " << spec.knob_summary() << ", " << rows << " rows";
      EXPECT_TRUE(a.at("next").same_bits(b.at("next")));
    }
  }
}

TEST(ImportHf, QwenWindowsSlideOnlyWhereTheConfigSaysSo) {
  ModelSpec spec = builtin_spec("tiny");
  spec.attention_bias = true;
  HfFolder f = HfFolder::of(spec, synthetic_weights(spec, 5), Stored::f32);
  // As Qwen2's configs ship: a window size, but use_sliding_window false.
  f.config["sliding_window"] = 4096;
  f.config["use_sliding_window"] = false;
  f.config["max_window_layers"] = 21;
  EXPECT_EQ(hf_spec(f.config, "q/config.json").sliding_window, 0);
  // Every layer at or past max_window_layers slides: all of them, or none.
  f.config["use_sliding_window"] = true;
  EXPECT_EQ(hf_spec(f.config, "q/config.json").sliding_window, 0);
  f.config["max_window_layers"] = 0;
  EXPECT_EQ(hf_spec(f.config, "q/config.json").sliding_window, 4096);
  f.config["layer_types"] = {"full_attention", "full_attention"};
  EXPECT_EQ(hf_spec(f.config, "q/config.json").sliding_window, 0);
}

// Each malformed folder or file: the reader's error names the file and the key or tensor.
struct Malformed {
  std::string name;
  std::function<void(HfFolder&, GgufWriter&)> patch;
  bool gguf;
  std::string message;
};

void PrintTo(const Malformed& m, std::ostream* os) { *os << m.name; }

class MalformedCheckpoint : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedCheckpoint, IsRefusedNamingTheFileAndThePlace) {
  const Malformed& bad = GetParam();
  const ModelSpec spec = builtin_spec("tiny");
  const TensorMap weights = synthetic_weights(spec, 1);
  HfFolder hf = HfFolder::of(spec, weights, Stored::bf16);
  GgufWriter gguf = GgufWriter::of(spec, weights, Stored::f16);
  bad.patch(hf, gguf);
  const fs::path dir = test::temp_dir("malformed-" + test::param_name(bad.name)) / "m";
  std::string message;
  try {
    if (bad.gguf) {
      write_file_atomic(dir / "m.gguf", gguf.bytes());
      read_gguf(dir / "m.gguf");
    } else {
      hf.write(dir);
      read_hf(dir);
    }
    FAIL() << "accepted";
  } catch (const FormatError& e) {
    message = e.what();
  }
  EXPECT_THAT(message, HasSubstr(bad.message));
  EXPECT_THAT(message, HasSubstr((dir / (bad.gguf ? "m.gguf" : "")).string()));
}

std::vector<Malformed> malformed() {
  using H = HfFolder;
  using G = GgufWriter;
  return {
      {"hf_unknown_architecture", [](H& h, G&) { h.config["architectures"] = {"GPT2LMHeadModel"}; }, false,
       "config.json: architecture GPT2LMHeadModel is not one cutcheck imports"},
      {"hf_qwen2_without_biases", [](H& h, G&) { h.config["architectures"] = {"Qwen2ForCausalLM"}; }, false,
       "model.safetensors: tensor 'model.layers.0.self_attn.q_proj.bias' is missing"},
      {"hf_qwen3_without_qk_norms", [](H& h, G&) { h.config["architectures"] = {"Qwen3ForCausalLM"}; }, false,
       "model.safetensors: tensor 'model.layers.0.self_attn.q_norm.weight' is missing"},
      {"hf_rope_scaling_incomplete", [](H& h, G&) { h.config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}}; },
       false, "config.json: key 'rope_scaling': missing field 'low_freq_factor'"},
      {"hf_rope_scaling_dynamic", [](H& h, G&) { h.config["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}}; },
       false, "config.json: key 'rope_scaling' is {\"factor\":2.0,\"type\":\"dynamic\"}: rope_type \"dynamic\" rescales"},
      {"hf_rope_scaling_extra_key", [](H& h, G&) {
         h.config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"attention_factor", 0.5}};
       },
       false, "config.json: key 'rope_scaling': 'attention_factor' is not read for rope_type \"linear\""},
      {"hf_attention_bias", [](H& h, G&) { h.config["attention_bias"] = true; }, false,
       "config.json: key 'attention_bias' is true: it adds biases to the q, k, v and o projections"},
      {"hf_sliding_window_on_llama", [](H& h, G&) { h.config["sliding_window"] = 4096; }, false,
       "config.json: key 'sliding_window' is 4096: it limits how far back attention sees, and LlamaForCausalLM has no "
       "window"},
      {"hf_qwen_mixed_layer_types", [](H& h, G&) {
         h.config["architectures"] = {"Qwen2ForCausalLM"};
         h.config["use_sliding_window"] = true;
         h.config["sliding_window"] = 8;
         h.config["layer_types"] = {"full_attention", "sliding_attention"};
       },
       false, "config.json: key 'layer_types' slides the window in 1 of 2 layers"},
      {"hf_unknown_key", [](H& h, G&) { h.config["partial_rotary_factor"] = 0.5; }, false,
       "config.json: key 'partial_rotary_factor' is not one cutcheck knows"},
      {"hf_gelu", [](H& h, G&) { h.config["hidden_act"] = "gelu"; }, false, "config.json: key 'hidden_act' is \"gelu\""},
      {"hf_wrong_key_type", [](H& h, G&) { h.config["num_hidden_layers"] = "2"; }, false,
       "config.json: field 'num_hidden_layers' must be an integer, got \"2\""},
      {"hf_impossible_heads", [](H& h, G&) { h.config["num_key_value_heads"] = 3; }, false,
       "config.json: the checkpoint describes an impossible model: spec 'm': heads (4) must be a multiple of kv_heads (3)"},
      {"hf_missing_tensor", [](H& h, G&) { h.erase("model.layers.1.mlp.up_proj.weight"); }, false,
       "model.safetensors: tensor 'model.layers.1.mlp.up_proj.weight' is missing"},
      {"hf_inconsistent_shape", [](H& h, G&) { h.tensor("model.layers.0.self_attn.k_proj.weight") = Tensor({DType::f32, {4, 16}}); },
       false, "model.safetensors: tensor 'model.layers.0.self_attn.k_proj.weight': shape [4,16], but the model's layers.0.attention.wk needs [8,16]"},
      {"hf_extra_tensor", [](H& h, G&) { h.tensors.emplace_back("model.layers.0.self_attn.q_norm.weight", Tensor({DType::f32, {4}})); },
       false, "model.safetensors: tensor 'model.layers.0.self_attn.q_norm.weight' is not a weight of"},
      {"hf_tied_head_that_differs", [](H& h, G&) { h.tensors.emplace_back("lm_head.weight", Tensor({DType::f32, {32, 16}})); },
       false, "tensor 'lm_head.weight' differs from 'model.embed_tokens.weight'"},
      {"gguf_quantized", [](H&, G& g) { g.tensor("blk.0.attn_q.weight").type = 2; }, true,
       "m.gguf: tensor 'blk.0.attn_q.weight' is Q4_0 of shape [16,16] (rows of 16 values): q4_0: a row of 16 values "
       "is not a whole number of 32-value blocks"},
      {"gguf_Q5_1", [](H&, G& g) { g.tensor("blk.0.attn_q.weight").type = 7; }, true,
       "m.gguf: tensor 'blk.0.attn_q.weight' is Q5_1; cutcheck reads F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K and Q6_K tensors"},
      {"gguf_Q6_K", [](H&, G& g) { g.tensor("blk.1.ffn_down.weight").type = 14; }, true,
       "tensor 'blk.1.ffn_down.weight' is Q6_K"},
      {"gguf_wrong_metadata_type", [](H&, G& g) { g.set_string("llama.block_count", "2"); }, true,
       "m.gguf: key 'llama.block_count' has type string, but it must be an integer"},
      {"gguf_float_epsilon_as_integer", [](H&, G& g) { g.set_u32("llama.attention.layer_norm_rms_epsilon", 0); }, true,
       "key 'llama.attention.layer_norm_rms_epsilon' has type uint32, but it must be a float32 or float64"},
      {"gguf_array_for_an_integer", [](H&, G& g) {
         g.erase_key("llama.block_count");
         g.keys.push_back({"llama.block_count", 9, std::string("\x04\0\0\0\x01\0\0\0\0\0\0\0\x02\0\0\0", 16)});
       },
       true, "m.gguf: key 'llama.block_count' has type array, but it must be an integer"},
      {"gguf_missing_key", [](H&, G& g) { g.erase_key("llama.embedding_length"); }, true,
       "m.gguf: key 'llama.embedding_length' is missing"},
      {"gguf_other_architecture", [](H&, G& g) { g.set_string("general.architecture", "qwen2"); }, true,
       "m.gguf: architecture 'qwen2' is not one cutcheck imports (llama)"},
      {"gguf_rope_scaling", [](H&, G& g) { g.set_string("llama.rope.scaling.type", "yarn"); }, true,
       "m.gguf: key 'llama.rope.scaling.type' is \"yarn\": it rescales"},
      {"gguf_linear_scaling_below_1", [](H&, G& g) {
         g.set_string("llama.rope.scaling.type", "linear");
         g.set_f32("llama.rope.scaling.factor", 0.5f);
       },
       true, "m.gguf: the checkpoint describes an impossible model: spec 'm': rope_scaling.factor must be at least 1"},
      {"gguf_unknown_llama_key", [](H&, G& g) { g.set_u32("llama.attention.sliding_window", 4096); }, true,
       "m.gguf: key 'llama.attention.sliding_window' is not one cutcheck knows"},
      {"gguf_partial_rotary", [](H&, G& g) { g.set_u32("llama.rope.dimension_count", 2); }, true,
       "m.gguf: key 'llama.rope.dimension_count' is 2, but the heads are 4 wide"},
      {"gguf_missing_tensor", [](H&, G& g) { g.erase_tensor("blk.1.attn_v.weight"); }, true,
       "m.gguf: tensor 'blk.1.attn_v.weight' is missing"},
      {"gguf_inconsistent_shape", [](H&, G& g) { g.tensor("blk.0.ffn_gate.weight").shape = {16, 24}; }, true,
       "m.gguf: tensor 'blk.0.ffn_gate.weight': shape [16,24], but the model's layers.0.feed_forward.w1 needs [24,16]"},
      {"gguf_llama3_rope_factors", [](H&, G& g) { g.tensors.push_back({"rope_freqs.weight", {2}, 0, std::string(8, '\0')}); },
       true, "m.gguf: tensor 'rope_freqs.weight' is not a weight of"},
      {"gguf_version_1", [](H&, G& g) { g.version = 1; }, true, "m.gguf: GGUF version 1 is not read"},
      {"gguf_alignment_not_a_power_of_two", [](H&, G& g) { g.set_u32("general.alignment", 24); }, true,
       "m.gguf: key 'general.alignment' is 24, not a power of two"},
  };
}

INSTANTIATE_TEST_SUITE_P(Catalog, MalformedCheckpoint, ::testing::ValuesIn(malformed()),
                         [](const auto& info) { return test::param_name(info.param.name); });

TEST(ImportHf, ShardIndexNamingAMissingFileIsRefused) {
  const ModelSpec spec = builtin_spec("tiny");
  const fs::path dir = test::temp_dir("hf-missing-shard");
  HfFolder::of(spec, synthetic_weights(spec, 1), Stored::f32).write(dir, 2);
  fs::remove(dir / "model-00002-of-00002.safetensors");
  try {
    read_hf(dir);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_THAT(e.what(), HasSubstr((dir / "model.safetensors.index.json").string() +
                                    ": names shard 'model-00002-of-00002.safetensors', which is not in"));
  }
}

TEST(ImportHf, ShardsThatDisagreeWithTheIndexAreRefused) {
  const ModelSpec spec = builtin_spec("tiny");
  const fs::path dir = test::temp_dir("hf-wrong-shard");
  HfFolder::of(spec, synthetic_weights(spec, 1), Stored::f32).write(dir, 2);
  Json index = parse_json(test::read_whole(dir / "model.safetensors.index.json"), "index");
  index["weight_map"]["model.norm.weight"] = index["weight_map"]["model.norm.weight"] == "model-00001-of-00002.safetensors"
                                                 ? "model-00002-of-00002.safetensors"
                                                 : "model-00001-of-00002.safetensors";
  write_file_atomic(dir / "model.safetensors.index.json", index.dump());
  EXPECT_THROW(
      {
        try {
          read_hf(dir);
        } catch (const FormatError& e) {
          EXPECT_THAT(e.what(), HasSubstr("tensor 'model.norm.weight' is here, but the index places it in"));
          throw;
        }
      },
      FormatError);
  index["weight_map"]["escape"] = "../outside.safetensors";
  write_file_atomic(dir / "model.safetensors.index.json", index.dump());
  EXPECT_THROW(read_hf(dir), IoError);
}

TEST(ImportHf, NeverWritesIntoTheCheckpointsFolder) {
  const ModelSpec spec = builtin_spec("tiny");
  const fs::path dir = test::temp_dir("hf-in-place");
  HfFolder::of(spec, synthetic_weights(spec, 1), Stored::bf16).write(dir);
  const std::string before = test::read_whole(dir / "model.safetensors");
  EXPECT_THROW(import_hf(dir, dir / "." ), IoError);
  EXPECT_EQ(test::read_whole(dir / "model.safetensors"), before);
  import_hf(dir, dir / "imported");
  EXPECT_EQ(read_weights(dir / "imported", read_hf(dir).spec).size(), weight_layout(spec).size());
}

TEST(ImportHf, AFolderWithoutWeightsIsRefused) {
  const fs::path dir = test::temp_dir("hf-no-weights");
  const ModelSpec spec = builtin_spec("tiny");
  HfFolder::of(spec, synthetic_weights(spec, 1), Stored::f32).write(dir);
  fs::remove(dir / "model.safetensors");
  EXPECT_THROW(read_hf(dir), FormatError);
  EXPECT_THROW(read_hf(test::temp_dir("hf-empty")), IoError);  // no config.json
}

TEST(ImportGguf, AModelOverTheMemoryLimitIsRefusedBeforeWidening) {
  const ModelSpec spec = builtin_spec("tiny");
  const GgufWriter g = GgufWriter::of(spec, synthetic_weights(spec, 1), Stored::bf16);
  uint64_t f32_bytes = 0;
  for (const WeightInfo& w : weight_layout(spec)) f32_bytes += uint64_t(element_count(w.shape)) * 4;
  auto import = [&](bool widen) {
    auto bytes = std::make_shared<std::string>(g.bytes());
    return read_gguf(std::as_bytes(std::span(bytes->data(), bytes->size())), "big.gguf", bytes, widen);
  };
  {
    test::ScopedMemoryLimit short_by_one(f32_bytes - 1);  // the widened copies: one byte short
    EXPECT_THROW(
        {
          try {
            import(true);
          } catch (const LimitError& e) {
            EXPECT_THAT(e.what(), HasSubstr("big.gguf: importing big (the weights converted to f32) needs " +
                                            std::to_string(f32_bytes) + " bytes"));
            throw;
          }
        },
        LimitError);
    EXPECT_EQ(import(false).spec.dtype, DType::bf16);  // kept in bf16: nothing is copied
  }
  test::ScopedMemoryLimit exactly(f32_bytes);
  EXPECT_NO_THROW(import(true));
}

TEST(ImportGguf, EveryTruncationIsRefused) {
  const ModelSpec spec = builtin_spec("tiny");
  const std::string bytes = GgufWriter::of(spec, synthetic_weights(spec, 1), Stored::bf16).bytes();
  auto all = std::as_bytes(std::span(bytes.data(), bytes.size()));
  size_t refused = 0;
  for (size_t n = 0; n < bytes.size(); n += 1 + n / 64) {
    try {
      read_gguf(all.first(n), "cut.gguf", nullptr);
    } catch (const FormatError& e) {
      ++refused;
      EXPECT_THAT(e.what(), HasSubstr("cut.gguf: "));
    }
  }
  size_t tried = 0;
  for (size_t n = 0; n < bytes.size(); n += 1 + n / 64) ++tried;
  EXPECT_EQ(refused, tried);
  EXPECT_NO_THROW(read_gguf(all, "whole.gguf", nullptr));
}

TEST(ImportHf, TruncatedSafetensorsIsRefused) {
  const ModelSpec spec = builtin_spec("tiny");
  const fs::path dir = test::temp_dir("hf-truncated");
  HfFolder::of(spec, synthetic_weights(spec, 1), Stored::bf16).write(dir);
  const std::string bytes = test::read_whole(dir / "model.safetensors");
  write_file_atomic(dir / "model.safetensors", bytes.substr(0, bytes.size() - 2));
  try {
    read_hf(dir);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_THAT(e.what(), HasSubstr((dir / "model.safetensors").string() + ": tensor"));
  }
}

}  // namespace
}  // namespace cutcheck
