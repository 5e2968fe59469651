// The bad-input catalog: malformed program text, manifests, specs, safetensors and cut
// text, each refused with exactly the right error class and a message that names the
// place (line:column, field, tensor or weight). Plus path escapes, memory bombs and
// atomic writes.
#include <gmock/gmock.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <typeindex>

#include "core/error.h"
#include "core/files.h"
#include "core/limits.h"
#include "core/safetensors.h"
#include "core/serve_protocol.h"
#include "model/cut.h"
#include "model/gguf.h"
#include "model/hf.h"
#include "model/llama2c.h"
#include "model/spec.h"
#include "program/folder.h"
#include "program/manifest.h"
#include "program/text.h"
#include "harness/generate.h"
#include "harness/runner.h"
#include "model/signature.h"
#include "model/weights.h"
#include "program/verifier.h"
#include "properties/case.h"
#include "properties/catalog.h"
#include "properties/check.h"
#include "properties/subject.h"
#include "quant/quantize.h"
#include <rapidcheck.h>
#include <rapidcheck/detail/Configuration.h>
#include "tests/checkpoint_writers.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

struct Bad {
  std::string name;
  std::function<void()> trigger;
  std::type_index error;
  std::string place;  // the message must contain this
  int exit_code = 2;  // what the command line exits with (docs/exit-codes.md)
};

void PrintTo(const Bad& bad, std::ostream* os) { *os << bad.name; }

template <class E>
std::type_index is() {
  return typeid(E);
}

void program(const std::string& text) { parse_and_verify(text, "p.txt"); }
const std::string head = "program \"p\"\n";

void spec(const std::string& patch) {
  Json j = builtin_spec("tiny").to_json();
  j.merge_patch(Json::parse(patch));
  ModelSpec::from_json(j, "spec.json");
}

void spec_text(const std::string& text) { ModelSpec::from_json(parse_json(text, "spec.json"), "spec.json"); }

Json good_manifest() {
  return Json::parse(R"({"format": "cutcheck-manifest-2", "dir": "w", "weights": [
    {"name": "w", "file": "model.safetensors", "tensor": "w", "dtype": "f32", "shape": [4, 3]}]})");
}

void manifest(const Json& j) { Manifest::from_json(j, "manifest.json"); }

// A safetensors file from a header and a number of data bytes.
std::string safetensors_file(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xff);
  return out + header + std::string(data_bytes, '\0');
}

void safetensors(const std::string& bytes) {
  parse_safetensors(std::as_bytes(std::span(bytes.data(), bytes.size())), "t.safetensors", nullptr);
}

void cut(const std::string& text) { Cut::parse(text, "--cut"); }

// A replayed case.json: a valid decode{ctx=4} case on tiny, patched.
void case_file(const std::string& patch) {
  Case c;
  c.spec = builtin_spec("tiny");
  c.cut = Cut::decode(4);
  c.tokens = {1};
  c.positions = {2};
  Json j = c.to_json();
  j.merge_patch(Json::parse(patch));
  Case::from_json(j, "case.json");
}

// A llama2.c header (dim, hidden_dim, layers, heads, kv_heads, vocab, seq_len) and some bytes.
void llama2c_header(std::vector<int32_t> header) {
  std::vector<std::byte> bytes(header.size() * 4 + 64);
  std::memcpy(bytes.data(), header.data(), header.size() * 4);
  read_llama2c(bytes, "model.bin");
}

// A GGUF file of tiny, patched, read from memory as "m.gguf".
void gguf(const std::function<void(test::GgufWriter&)>& patch) {
  const ModelSpec spec = builtin_spec("tiny");
  test::GgufWriter g = test::GgufWriter::of(spec, synthetic_weights(spec, 1), test::Stored::f16);
  patch(g);
  const std::string bytes = g.bytes();
  read_gguf(std::as_bytes(std::span(bytes.data(), bytes.size())), "m.gguf", nullptr);
}

// A GGUF file of a model whose rows are one 32-value block, every matrix in Q8_0 (the test
// suite's writer's F32 values quantized by quant/), patched, read from memory as "m.gguf".
void gguf_q8_0(const std::function<void(test::GgufWriter&)>& patch) {
  ModelSpec spec = builtin_spec("tiny");
  spec.dim = spec.ffn = 32, spec.heads = 2, spec.kv_heads = 1, spec.head_dim = 16;
  test::GgufWriter g = test::GgufWriter::of(spec, synthetic_weights(spec, 1), test::Stored::f32);
  for (auto& t : g.tensors) {
    if (t.shape.size() != 2) continue;
    const int64_t rows = t.shape[0];
    std::vector<float> values(size_t(rows * 32));
    std::memcpy(values.data(), t.data.data(), values.size() * 4);
    std::string blocks(size_t(rows * 34), '\0');
    for (int64_t r = 0; r < rows; ++r)
      quantize_row_reference(QuantFormat::q8_0, values.data() + r * 32, 32,
                             reinterpret_cast<std::byte*>(blocks.data()) + r * 34);
    t.type = 8, t.data = blocks;
  }
  patch(g);
  const std::string bytes = g.bytes();
  read_gguf(std::as_bytes(std::span(bytes.data(), bytes.size())), "m.gguf", nullptr);
}

// GGUF bytes from the start: the magic, version 3, the counts, then `rest`.
void gguf_raw(uint64_t tensors, uint64_t keys, const std::string& rest) {
  std::string bytes = "GGUF";
  auto put = [&](uint64_t v, int n) { bytes.append(reinterpret_cast<const char*>(&v), size_t(n)); };
  put(3, 4), put(tensors, 8), put(keys, 8);
  bytes += rest;
  read_gguf(std::as_bytes(std::span(bytes.data(), bytes.size())), "m.gguf", nullptr);
}

std::string le(uint64_t v, int n) { return std::string(reinterpret_cast<const char*>(&v), size_t(n)); }

// A config.json of tiny as a Hugging Face Llama, patched, read into a spec.
void hf_config(const std::string& patch) {
  const ModelSpec spec = builtin_spec("tiny");
  Json config = test::HfFolder::of(spec, synthetic_weights(spec, 1), test::Stored::f32).config;
  config.merge_patch(Json::parse(patch));
  hf_spec(config, "hf/config.json");
}

std::vector<Bad> catalog() {
  std::vector<Bad> c;
  // Program text: ParseError or VerifyError with file:line:column.
  c.push_back({"truncated type", [] { program(head + "input %x : f32[2"); }, is<ParseError>(), "p.txt:2:17: expected ','"});
  c.push_back({"unknown dtype", [] { program(head + "input %x : f64[2]\n"); }, is<ParseError>(), "p.txt:2:12: expected a type"});
  c.push_back({"undefined value", [] { program(head + "input %x : f32[2]\n%y = add %x, %q : f32[2]\n"); }, is<ParseError>(),
               "p.txt:3:14: %q is not defined"});
  c.push_back({"duplicate name", [] { program(head + "input %x : f32[2]\ninput %x : f32[2]\n"); }, is<ParseError>(),
               "p.txt:3:7: %x is defined twice"});
  c.push_back({"wrong shape", [] { program(head + "input %x : f32[2]\n%y = add %x, %x : f32[3]\noutput y = %y\n"); },
               is<VerifyError>(), "p.txt:3:1: %y = add: result type is f32[2], but the program states f32[3]"});
  c.push_back({"wrong dtype", [] {
                 program(head + "input %x : i32[2,2]\n%y = dot_general %x, %x {lhs_batching_dimensions = [], "
                                "rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], "
                                "rhs_contracting_dimensions = [0]} : f32[2,2]\noutput y = %y\n");
               },
               is<VerifyError>(), "p.txt:3:1: %y = dot_general: operands must be f32"});
  c.push_back({"number out of range", [] { program(head + "input %x : f32[99999999999999999999]\n"); }, is<ParseError>(),
               "p.txt:2:16: 99999999999999999999 is out of range"});
  c.push_back({"NaN as a size", [] { program(head + "input %x : f32[nan]\n"); }, is<ParseError>(),
               "p.txt:2:16: expected an integer"});
  c.push_back({"negative size", [] { program(head + "input %x : f32[-2]\n"); }, is<ParseError>(), "dimension -2 is negative"});
  c.push_back({"huge dimensions", [] { program(head + "input %x : f32[100000,100000,100000]\n%y = negate %x : f32[100000,100000,100000]\noutput y = %y\n"); },
               is<LimitError>(), "p.txt: the program's values need"});
  c.push_back({"attribute of the wrong kind", [] { program(head + "input %x : f32[2]\n%y = reduce %x {kind = add, dimensions = add} : f32[]\n"); },
               is<ParseError>(), "p.txt:3:42: expected '['"});
  c.push_back({"unknown attribute", [] { program(head + "input %x : f32[2]\n%y = negate %x {scale = 2} : f32[2]\n"); },
               is<ParseError>(), "p.txt:3:17: negate has no attribute 'scale'"});
  c.push_back({"no outputs", [] { program(head + "input %x : f32[2]\n"); }, is<VerifyError>(), "p.txt: the program has no outputs"});
  c.push_back({"rank above 8", [] { program(head + "input %x : f32[1,1,1,1,1,1,1,1,1]\n%y = negate %x : f32[1,1,1,1,1,1,1,1,1]\noutput y = %y\n"); },
               is<VerifyError>(), "p.txt:2:1: %x has rank 9, above the limit of 8"});
  c.push_back({"collective outside a split", [] {
                 program(head + "input %x : f32[2]\n%y = all_reduce %x {kind = add, replica_groups = [[0]]} : f32[2]\noutput y = %y\n");
               },
               is<VerifyError>(), "p.txt:3:1: %y = all_reduce: a collective needs"});
  c.push_back({"statement out of order", [] { program(head + "output y = %x\n"); }, is<ParseError>(), "p.txt:2:12: %x is not defined"});
  // Shapes whose element count overflows: the file, line and column of the declaration.
  c.push_back({"input shape that overflows", [] { program(head + "input %x : f32[4294967296,4294967296]\noutput x = %x\n"); },
               is<LimitError>(), "p.txt:2:1: %x: shape [4294967296,4294967296] has too many elements"});
  c.push_back({"result shape that overflows", [] {
                 program(head + "input %x : f32[2]\n%y = broadcast_in_dim %x {broadcast_dimensions = [0]} : "
                                "f32[2,4294967296,4294967296]\noutput y = %y\n");
               },
               is<LimitError>(), "p.txt:3:1: %y: shape [2,4294967296,4294967296] has too many elements"});
  c.push_back({"reshape to a shape that overflows", [] {
                 program(head + "input %x : f32[2]\n%y = reshape %x : f32[4294967296,4294967296]\noutput y = %y\n");
               },
               is<LimitError>(), "p.txt:3:1: %y = reshape: shape [4294967296,4294967296] has too many elements"});

  // Manifests: FormatError, VerifyError or IoError naming the field or the weight.
  c.push_back({"manifest without weights", [] {
                 Json j = good_manifest();
                 j.erase("weights");
                 manifest(j);
               },
               is<FormatError>(), "manifest.json: missing field 'weights'"});
  c.push_back({"manifest of another format", [] {
                 Json j = good_manifest();
                 j["format"] = "other-2";
                 manifest(j);
               },
               is<FormatError>(), "manifest.json: format is 'other-2'"});
  c.push_back({"manifest dtype", [] {
                 Json j = good_manifest();
                 j["weights"][0]["dtype"] = "f64";
                 manifest(j);
               },
               is<FormatError>(), "manifest.json: weight 'w': unknown dtype 'f64'"});
  c.push_back({"manifest quantized rows not whole blocks", [] {
                 Json j = good_manifest();
                 j["weights"][0]["dtype"] = "q4_0";
                 j["weights"][0]["shape"] = {4, 30};
                 manifest(j);
               },
               is<FormatError>(), "manifest.json: weight 'w': q4_0[4,30]: q4_0: a row of 30 values is not a whole number of "
               "32-value blocks"});
  c.push_back({"manifest shape of the wrong kind", [] {
                 Json j = good_manifest();
                 j["weights"][0]["shape"] = "4x3";
                 manifest(j);
               },
               is<FormatError>(), "weight 'w': field 'shape' must be a list of integers"});
  c.push_back({"manifest weight named twice", [] {
                 Json j = good_manifest();
                 j["weights"].push_back(j["weights"][0]);
                 manifest(j);
               },
               is<FormatError>(), "manifest.json: weight 'w': named twice"});
  c.push_back({"manifest against the program", [] {
                 Program p = parse_and_verify(head + "weight %w : f32[3,4]\n%y = negate %w : f32[3,4]\noutput y = %y\n");
                 verify_manifest(p, Manifest::from_json(good_manifest(), "m"), "manifest.json");
               },
               is<VerifyError>(), "manifest.json: weight 'w' is f32[3,4] in the program but f32[4,3] in the manifest"});
  c.push_back({"malformed JSON", [] { parse_json("{\"format\": ", "manifest.json"); }, is<FormatError>(),
               "manifest.json: malformed JSON"});
  c.push_back({"JSON nested too deep", [] { parse_json(std::string(100, '[') + std::string(100, ']'), "manifest.json"); },
               is<FormatError>(), "manifest.json: JSON nested deeper than 32 levels"});
  c.push_back({"duplicate JSON key", [] { parse_json(R"({"dir": "a", "dir": "b"})", "manifest.json"); }, is<FormatError>(),
               "manifest.json: key 'dir' appears twice"});

  // Specs: SpecError or FormatError naming the field.
  c.push_back({"heads not a multiple of kv_heads", [] { spec(R"({"kv_heads": 3})"); }, is<SpecError>(),
               "spec.json: spec 'tiny': heads (4) must be a multiple of kv_heads (3)"});
  c.push_back({"fractional size", [] { spec(R"({"dim": 1.5})"); }, is<FormatError>(), "spec.json: field 'dim' must be an integer"});
  c.push_back({"negative spec size", [] { spec(R"({"ffn": -3})"); }, is<SpecError>(), "ffn must be positive, got -3"});
  c.push_back({"huge spec size", [] { spec(R"({"vocab": 1099511627776})"); }, is<SpecError>(), "vocab = 1099511627776 is larger than 2^31"});
  c.push_back({"unknown field", [] { spec(R"({"colour": "blue"})"); }, is<FormatError>(), "spec.json: unknown spec field 'colour'"});
  c.push_back({"unknown rope style", [] { spec(R"({"rope_style": "sideways"})"); }, is<FormatError>(), "field 'rope_style'"});
  c.push_back({"missing field", [] { spec_text(R"({"vocab": 4})"); }, is<FormatError>(), "spec.json: missing field 'dim'"});
  c.push_back({"NaN in JSON", [] { spec_text(R"({"vocab": NaN})"); }, is<FormatError>(), "spec.json: malformed JSON"});

  // Safetensors: FormatError naming the tensor.
  c.push_back({"truncated safetensors", [] { safetensors("abc"); }, is<FormatError>(), "t.safetensors: 3 bytes is too short"});
  c.push_back({"header past the end", [] { safetensors(safetensors_file("{}", 0).substr(0, 9)); }, is<FormatError>(),
               "t.safetensors: header length 2 runs past the end"});
  c.push_back({"offsets past the end", [] {
                 safetensors(safetensors_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4));
               },
               is<FormatError>(), "t.safetensors: tensor 'a' ends at byte 8, past the 4 data bytes"});
  c.push_back({"overlapping tensors", [] {
                 safetensors(safetensors_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                                  "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8));
               },
               is<FormatError>(), "t.safetensors: tensor 'b' overlaps tensor 'a'"});
  c.push_back({"unindexed bytes", [] {
                 safetensors(safetensors_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8));
               },
               is<FormatError>(), "t.safetensors: bytes 0..4 before tensor 'a' belong to no tensor"});
  c.push_back({"unsupported dtype", [] {
                 safetensors(safetensors_file(R"({"a": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}})", 16));
               },
               is<FormatError>(), "t.safetensors: tensor 'a': dtype F64 is not supported (cutcheck reads F32, BF16, F16, I32 and BOOL)"});
  c.push_back({"size against shape", [] {
                 safetensors(safetensors_file(R"({"a": {"dtype": "I32", "shape": [3], "data_offsets": [0, 8]}})", 8));
               },
               is<FormatError>(), "tensor 'a': data_offsets span 8 bytes but I32[3] needs 12"});
  c.push_back({"huge shape", [] {
                 safetensors(safetensors_file(
                     R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296, 4294967296], "data_offsets": [0, 4]}})", 4));
               },
               is<FormatError>(), "tensor 'a': shape [4294967296,4294967296,4294967296] is too large"});
  c.push_back({"header not an object", [] { safetensors(safetensors_file("[1, 2]", 0)); }, is<FormatError>(),
               "t.safetensors: the header must be a JSON object"});
  c.push_back({"duplicate tensor names", [] {
                 safetensors(safetensors_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                                                  "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8));
               },
               is<FormatError>(), "key 'a' appears twice"});

  // Cut text: ParseError with the column.
  c.push_back({"unknown cut", [] { cut("decoder{ctx=4}"); }, is<ParseError>(), "--cut:1:1: unknown cut 'decoder'"});
  c.push_back({"missing parameter", [] { cut("batch{rows=2}"); }, is<ParseError>(), "--cut:1:14: batch needs parameter 'ctx'"});
  c.push_back({"parameter twice", [] { cut("decode{ctx=4,ctx=4}"); }, is<ParseError>(), "--cut:1:14: parameter 'ctx' given twice"});
  c.push_back({"trailing text", [] { cut("forward junk"); }, is<ParseError>(), "--cut:1:9: unexpected text after the cut"});
  c.push_back({"negative parameter", [] { cut("decode{ctx=-1}"); }, is<ParseError>(), "--cut:1:12: expected a non-negative integer"});
  c.push_back({"impossible layer", [] { Cut::parse("decode_layer{layer=9,ctx=4}").check_possible(builtin_spec("tiny")); },
               is<Refused>(), "layer 9 does not exist"});

  // Sizes and indices from input that overflow or fall outside what they index.
  c.push_back({"spec vocab of 2^31", [] { spec(R"({"vocab": 2147483648})"); }, is<SpecError>(),
               "vocab = 2147483648 is larger than 2^31 - 1"});
  c.push_back({"input range wider than i32", [] {
                 program(head + "input %t : i32[] range [-9223372036854775808, 9223372036854775807]\noutput t = %t\n");
               },
               is<VerifyError>(), "p.txt:2:1: input %t: range [-9223372036854775808, 9223372036854775807]"});
  c.push_back({"empty input range", [] { program(head + "input %t : i32[] range [3, 2]\noutput t = %t\n"); },
               is<VerifyError>(), "p.txt:2:1: input %t: range [3, 2]"});
  c.push_back({"llama2c sizes that wrap", [] { llama2c_header({1 << 30, 1 << 30, 1 << 30, 1 << 29, 1 << 29, 8, 1 << 30}); },
               is<FormatError>(), "model.bin: the header describes a model too large to exist"});
  // Checkpoints: Hugging Face config.json and GGUF files (tests/test_checkpoints.cpp has more).
  c.push_back({"hf config value of the wrong type", [] { hf_config(R"({"hidden_size": "16"})"); }, is<FormatError>(),
               "hf/config.json: field 'hidden_size' must be an integer, got \"16\""});
  c.push_back({"hf rope scaling of another type", [] { hf_config(R"({"rope_scaling": {"rope_type": "yarn", "factor": 2.0}})"); },
               is<FormatError>(), "hf/config.json: key 'rope_scaling' is {\"factor\":2.0,\"rope_type\":\"yarn\"}: rope_type \"yarn\""});
  c.push_back({"hf rope scaling below 1", [] { hf_config(R"({"rope_scaling": {"rope_type": "linear", "factor": 0.5}})"); },
               is<FormatError>(), "rope_scaling.factor must be at least 1"});
  c.push_back({"hf qwen2 sliding only some layers", [] {
                 hf_config(R"({"architectures": ["Qwen2ForCausalLM"], "use_sliding_window": true, "sliding_window": 8,
                               "max_window_layers": 1})");
               },
               is<FormatError>(), "hf/config.json: key 'max_window_layers' slides the window in 1 of 2 layers"});
  // Spec knobs: the key named.
  c.push_back({"rope scaling of another type", [] { spec(R"({"rope_scaling": {"type": "yarn", "factor": 2}})"); },
               is<FormatError>(), "spec.json: rope_scaling: field 'type' must be \"linear\" or \"llama3\", got \"yarn\""});
  c.push_back({"llama3 scaling without its context", [] {
                 spec(R"({"rope_scaling": {"type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4}})");
               },
               is<FormatError>(), "spec.json: rope_scaling: missing field 'original_max_position_embeddings'"});
  c.push_back({"llama3 frequency factors reversed", [] {
                 spec(R"({"rope_scaling": {"type": "llama3", "factor": 8, "low_freq_factor": 4, "high_freq_factor": 1,
                                           "original_max_position_embeddings": 8192}})");
               },
               is<SpecError>(), "rope_scaling.high_freq_factor (1) must be larger than low_freq_factor (4)"});
  c.push_back({"linear scaling with a llama3 key", [] {
                 spec(R"({"rope_scaling": {"type": "linear", "factor": 2, "low_freq_factor": 1}})");
               },
               is<FormatError>(), "spec.json: rope_scaling: unknown field 'low_freq_factor' for type linear"});
  // One rule and one message for every window outside [1, 2^31 - 1].
  for (const char* window : {"0", "-3", "1099511627776"})
    c.push_back({fmt::format("sliding window of {}", window), [window] { spec(fmt::format(R"({{"sliding_window": {}}})", window)); },
                 is<SpecError>(),
                 fmt::format("spec.json: spec 'tiny': sliding_window must be in [1, 2^31 - 1] (leave it out for none), got {}",
                             window)});
  c.push_back({"sliding window as text", [] { spec(R"({"sliding_window": "4096"})"); }, is<FormatError>(),
               "spec.json: field 'sliding_window' must be an integer"});
  c.push_back({"weight_dtypes not an object", [] { spec(R"({"weight_dtypes": ["norm"]})"); }, is<FormatError>(),
               "spec.json: field 'weight_dtypes' must be an object of weight name: dtype"});
  c.push_back({"weight_dtypes of a number", [] { spec(R"({"weight_dtypes": {"norm": 3}})"); }, is<FormatError>(),
               "spec.json: field 'weight_dtypes.norm' must be a dtype name"});
  c.push_back({"weight_dtypes of an unknown type", [] { spec(R"({"weight_dtypes": {"norm": "f64"}})"); },
               is<FormatError>(), "spec.json: field 'weight_dtypes.norm' must be a dtype name"});
  c.push_back({"weight_dtypes of a layer past the last", [] { spec(R"({"weight_dtypes": {"layers.2.attention.wq": "bf16"}})"); },
               is<SpecError>(), "spec.json: spec 'tiny': weight_dtypes names 'layers.2.attention.wq', which is not a weight of it"});
  c.push_back({"weight_dtypes of a padded layer", [] { spec(R"({"weight_dtypes": {"layers.01.attention.wq": "bf16"}})"); },
               is<SpecError>(), "weight_dtypes names 'layers.01.attention.wq', which is not a weight of it"});
  c.push_back({"weight_dtypes of a tied output", [] { spec(R"({"weight_dtypes": {"output": "bf16"}})"); },
               is<SpecError>(), "weight_dtypes names 'output', which is not a weight of it"});
  c.push_back({"weight_dtypes quantizing a vector", [] { spec(R"({"weight_dtypes": {"norm": "q8_0"}})"); },
               is<SpecError>(), "spec.json: spec 'tiny': weight 'norm' [16] cannot be stored as q8_0"});
  c.push_back({"weight_dtypes rows not whole blocks", [] { spec(R"({"weight_dtypes": {"tok_embeddings": "q8_0"}})"); },
               is<SpecError>(),
               "spec.json: spec 'tiny': q8_0 stores rows in whole blocks of 32 values, but the rows of tok_embeddings (16 "
               "values) are not"});
  c.push_back({"quantized dtype, rows not whole blocks", [] { spec(R"({"dtype": "q8_0"})"); }, is<SpecError>(),
               "but the rows of tok_embeddings (16 values) are not (give such weights a type of their own in weight_dtypes)"});
  c.push_back({"qk_norm as a number", [] { spec(R"({"qk_norm": 1})"); }, is<FormatError>(), "spec.json: field 'qk_norm'"});
  c.push_back({"hf config that is a FIFO", [] {
                 const fs::path dir = test::temp_dir("hf-fifo");
                 ::mkfifo((dir / "config.json").c_str(), 0600);
                 read_hf(dir);
               },
               is<IoError>(), "config.json' is not a regular file (a FIFO"});
  c.push_back({"gguf layers bomb", [] { gguf([](auto& g) { g.set_u32("llama.block_count", 0x7fffffff); }); },
               is<FormatError>(), "m.gguf: the model has 2147483647 layers, but the checkpoint holds only 20 tensors"});
  c.push_back({"gguf dimensions that overflow", [] {
                 gguf([](auto& g) { g.tensor("blk.0.attn_q.weight").shape = {int64_t(1) << 32, int64_t(1) << 32}; });
               },
               is<FormatError>(), "m.gguf: tensor 'blk.0.attn_q.weight' has shape [4294967296,4294967296], too large"});
  c.push_back({"gguf quantized type not read", [] { gguf([](auto& g) { g.tensor("token_embd.weight").type = 9; }); },
               is<FormatError>(),
               "m.gguf: tensor 'token_embd.weight' is Q8_1; cutcheck reads F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K and Q6_K"});
  // Quantized tensors: rows of whole blocks, sizes that fit, and data where the type puts it.
  c.push_back({"gguf Q4_K rows not whole super-blocks", [] { gguf([](auto& g) { g.tensor("blk.0.attn_q.weight").type = 12; }); },
               is<FormatError>(),
               "m.gguf: tensor 'blk.0.attn_q.weight' is Q4_K of shape [16,16] (rows of 16 values): q4_K: a row of 16 "
               "values is not a whole number of 256-value blocks"});
  c.push_back({"gguf Q8_0 rows not whole blocks", [] { gguf([](auto& g) { g.tensor("blk.1.ffn_down.weight").type = 8; }); },
               is<FormatError>(),
               "m.gguf: tensor 'blk.1.ffn_down.weight' is Q8_0 of shape [16,24] (rows of 24 values): q8_0: a row of 24 "
               "values is not a whole number of 32-value blocks"});
  c.push_back({"gguf Q5_0 rows not whole blocks", [] { gguf([](auto& g) { g.tensor("blk.1.ffn_down.weight").type = 6; }); },
               is<FormatError>(),
               "m.gguf: tensor 'blk.1.ffn_down.weight' is Q5_0 of shape [16,24] (rows of 24 values): q5_0: a row of 24 "
               "values is not a whole number of 32-value blocks"});
  c.push_back({"gguf quantized block count that overflows", [] {
                 gguf([](auto& g) {
                   auto& t = g.tensor("blk.0.attn_q.weight");
                   t.type = 8;
                   t.shape = {int64_t(1) << 58, 32};
                 });
               },
               is<FormatError>(),
               "m.gguf: tensor 'blk.0.attn_q.weight' is Q8_0 of shape [288230376151711744,32] (rows of 32 values): q8_0: "
               "the bytes of 288230376151711744 rows of 32 values: 288230376151711744 x 34 overflows"});
  c.push_back({"gguf truncated super-block", [] {
                 gguf([](auto& g) { g.tensors.push_back({"blk.0.extra.weight", {1, 256}, 14, std::string(100, '\0')}); });
               },
               is<FormatError>(), "m.gguf: tensor 'blk.0.extra.weight' (Q6_K of shape [1,256]: 210 bytes at offset 8864) "
               "runs past the 8992 data bytes"});
  c.push_back({"gguf quantized size that does not match the type", [] {
                 gguf([](auto& g) {
                   auto& t = g.tensor("blk.0.attn_q.weight");
                   t.shape = {8, 32};
                   t.data = std::string(8 * 18, '\0');  // Q4_0's bytes: 8 rows of one 18-byte block
                   t.type = 8;                           // but Q8_0's blocks are 34 bytes
                 });
               },
               is<FormatError>(), "m.gguf: tensor 'blk.0.attn_q.weight' (Q8_0 of shape [8,32]: 272 bytes at offset 1056) "
               "runs into tensor 'blk.0.attn_k.weight' at offset 1216"});
  c.push_back({"gguf quantized block with an infinite scale", [] {
                 gguf_q8_0([](auto& g) {
                   std::string& data = g.tensor("blk.0.attn_v.weight").data;
                   data[34 * 3] = '\0', data[34 * 3 + 1] = '\x7c';  // row 3's scale: f16 infinity
                 });
               },
               is<FormatError>(), "m.gguf: tensor 'blk.0.attn_v.weight' row 3: q8_0 block 0: the scale d is inf (f16 bits "
               "0x7c00), not a finite number"});
  // Quantized weights in a program: rows of whole blocks, counts that fit, finite scales.
  c.push_back({"program quantized row not whole blocks",
               [] { program("program \"p\"\nweight %w : q4_K[2,100]\n%y = convert %w : f32[2,100]\noutput y = %y\n"); },
               is<VerifyError>(), "p.txt:2:1: weight %w: q4_K[2,100]: q4_K: a row of 100 values is not a whole number of 256-value blocks"});
  c.push_back({"program quantized block count that overflows", [] {
                 program("program \"p\"\nweight %w : q4_0[4611686018427387904,32]\n"
                         "%y = convert %w : f32[4611686018427387904,32]\noutput y = %y\n");
               },
               is<LimitError>(), "p.txt:2:1: %w: shape [4611686018427387904,32] has too many elements"});
  c.push_back({"quantized weight with an infinite scale", [] {
                 Tensor w(TensorType{DType::q4_0, {3, 32}});
                 w.raw_mut()[18 * 2 + 1] = std::byte{0x7c};  // row 2's scale: f16 infinity
                 Executable(parse_and_verify("program \"p\"\nweight %w : q4_0[3,32]\n%y = convert %w : f32[3,32]\noutput y = %y\n"),
                            {{"w", w}});
               },
               is<FormatError>(), "weight 'w' row 2: q4_0 block 0: the scale d is inf (f16 bits 0x7c00), not a finite number"});
  c.push_back({"gguf metadata of the wrong type", [] { gguf([](auto& g) { g.set_f32("llama.attention.head_count", 4); }); },
               is<FormatError>(), "m.gguf: key 'llama.attention.head_count' has type float32, but it must be an integer"});
  c.push_back({"gguf array longer than the file", [] { gguf_raw(0, 1, le(1, 8) + "k" + le(9, 4) + le(10, 4) + le(uint64_t(1) << 62, 8)); },
               is<FormatError>(), "m.gguf: key 'k' holds 4611686018427387904 elements of 8 bytes"});
  c.push_back({"gguf string longer than the file", [] { gguf_raw(0, 1, le(uint64_t(1) << 40, 8)); }, is<FormatError>(),
               "m.gguf: metadata key 0 is 1099511627776 bytes long"});
  c.push_back({"gguf truncated", [] { gguf_raw(1, 0, le(3, 8) + "abc" + le(1, 4)); }, is<FormatError>(),
               "m.gguf: tensor 'abc' (dimensions) needs 8 bytes at byte 39, but the file ends at byte 39"});
  c.push_back({"gguf file that is a FIFO", [] {
                 const fs::path fifo = test::temp_dir("gguf-fifo") / "m.gguf";
                 ::mkfifo(fifo.c_str(), 0600);
                 read_gguf(fifo);
               },
               is<IoError>(), "m.gguf' is not a regular file (a FIFO"});
  c.push_back({"case without positions", [] { case_file(R"({"positions": []})"); }, is<FormatError>(),
               "case.json: positions: 0 given, decode{ctx=4} needs 1"});
  c.push_back({"case position past the cache", [] { case_file(R"({"positions": [4]})"); }, is<FormatError>(),
               "case.json: positions[0] = 4 is outside what decode{ctx=4} allows"});
  c.push_back({"case negative position", [] { case_file(R"({"positions": [-1]})"); }, is<FormatError>(),
               "case.json: positions[0] = -1"});
  c.push_back({"case position not an i32", [] { case_file(R"({"positions": [4294967296]})"); }, is<FormatError>(),
               "case.json: positions: 4294967296 is not an i32"});
  c.push_back({"case token outside the vocabulary", [] { case_file(R"({"tokens": [32]})"); }, is<FormatError>(),
               "case.json: tokens[0] = 32 is outside [0, vocab = 32)"});
  c.push_back({"case with two tokens for one row", [] { case_file(R"({"tokens": [1, 2]})"); }, is<FormatError>(),
               "case.json: tokens: 2 given for the 1 rows of decode{ctx=4}"});
  c.push_back({"case tp of 0", [] { case_file(R"({"tp": 0})"); }, is<FormatError>(), "case.json: tp must be at least 1, got 0"});
  c.push_back({"case tp that does not divide", [] { case_file(R"({"tp": 3})"); }, is<FormatError>(),
               "case.json: tp: decode{ctx=4} cannot be split 3 ways"});
  c.push_back({"case tp of a cut that does not split", [] { case_file(R"({"tp": 2, "cut": "forward", "positions": [0]})"); },
               is<FormatError>(), "case.json: tp: forward cannot be split yet"});
  c.push_back({"case k_scale of 0", [] { case_file(R"({"k_scale": 0})"); }, is<FormatError>(),
               "case.json: k_scale must be finite and non-zero"});

  // Memory bombs: the whole run is estimated from the spec and the cut and refused, naming
  // the number that is too big, before any weight, cache or value is allocated.
  c.push_back({"spec of a billion layers", [] { spec(R"({"layers": 1000000000})"); }, is<LimitError>(),
               "spec.json: layers = 1000000000 (with ffn = 24, dim = 16) makes the weights"});
  c.push_back({"spec whose weights total 60 GiB", [] {
                 spec(R"({"vocab": 32000, "dim": 8192, "layers": 18, "heads": 64, "kv_heads": 8, "head_dim": 128, "ffn": 28672})");
               },
               is<LimitError>(), "spec.json: ffn = 28672 (with dim = 8192, layers = 18) makes the weights 58.4 GiB, above the memory limit"});
  c.push_back({"untied head of a huge vocabulary", [] { spec(R"({"vocab": 2000000000, "dim": 4096, "tied": false})"); },
               is<LimitError>(), "spec.json: vocab = 2000000000 (with dim = 4096) makes the weights"});
  c.push_back({"cut whose caches are too big", [] { signature(Cut::decode(500000000), builtin_spec("tiny")); },
               is<LimitError>(), "decode{ctx=500000000}: ctx = 500000000 (with head_dim = 4, layers = 2, kv_heads = 2) makes the kv caches"});
  c.push_back({"batch of too many rows", [] { signature(Cut::batch(2000000000, 4), builtin_spec("tiny")); },
               is<LimitError>(), "batch{rows=2000000000,ctx=4}: rows = 2000000000"});
  c.push_back({"layer cut of a huge ffn", [] {
                 ModelSpec s = builtin_spec("tiny");
                 s.ffn = 2000000000;
                 signature(Cut::forward_layer(0), s);
               },
               is<LimitError>(), "makes the weights"});
  c.push_back({"generation with a huge ctx", [] {
                 GenerateOptions o{{1}, 2, 500000000, Via::decode};
                 ReferenceRunner runner(builtin_spec("tiny"), synthetic_weights(builtin_spec("tiny"), 1));
                 generate(runner, builtin_spec("tiny"), o);
               },
               is<LimitError>(), "generate --ctx: decode{ctx=500000000}: ctx = 500000000"});
  c.push_back({"generation whose steps overflow", [] {
                 GenerateOptions o{{1}, INT64_MAX, 0, Via::decode};
                 ReferenceRunner runner(builtin_spec("tiny"), synthetic_weights(builtin_spec("tiny"), 1));
                 generate(runner, builtin_spec("tiny"), o);
               },
               is<LimitError>(), "prompt + steps: 1 + 9223372036854775807 overflows"});
  c.push_back({"case with a huge spec", [] { case_file(R"({"spec": {"layers": 1000000000}})"); }, is<LimitError>(),
               "case.json: spec: layers = 1000000000 (with ffn = 24, dim = 16) makes the weights 7.1 TiB"});
  c.push_back({"case with a huge ctx", [] { case_file(R"({"cut": "decode{ctx=2000000000}"})"); }, is<LimitError>(),
               "case.json: decode{ctx=2000000000}: ctx = 2000000000"});
  c.push_back({"case with a negative spec size", [] { case_file(R"({"spec": {"dim": -16}})"); }, is<SpecError>(),
               "dim must be positive, got -16"});
  c.push_back({"case with a NaN norm_eps", [] { case_file(R"({"spec": {"norm_eps": "nan"}})"); }, is<FormatError>(),
               "norm_eps"});
  c.push_back({"negative memory limit", [] { parse_byte_size("-5"); }, is<Error>(), "'-5' is not a byte size"});
  c.push_back({"memory limit with spaces", [] { parse_byte_size(" 5G"); }, is<Error>(), "' 5G' is not a byte size"});
  c.push_back({"memory limit that overflows", [] { parse_byte_size("99999999999999999999999G"); }, is<Error>(),
               "is not a byte size"});
  c.push_back({"reproduce string of negative size", [] {
                 rc::detail::Configuration config;
                 config.reproduce["composition.decode"] = rc::detail::Reproduce{rc::Random(1), -5, {}};
                 check(find_property("composition.decode"), Subject::reference(),
                       {1, 1, true, rc::detail::configToMinimalString(config)});
               },
               is<InputError>(), "the reproduce string: property 'composition.decode': size -5 is outside [0, 100]"});
  c.push_back({"reproduce string of huge size", [] {
                 rc::detail::Configuration config;
                 config.reproduce["composition.decode"] = rc::detail::Reproduce{rc::Random(1), 1 << 30, {}};
                 check(find_property("composition.decode"), Subject::reference(),
                       {1, 1, true, rc::detail::configToMinimalString(config)});
               },
               is<InputError>(), "size 1073741824 is outside [0, 100]"});
  c.push_back({"reproduce string that is garbage", [] {
                 check(find_property("composition.decode"), Subject::reference(), {1, 1, true, "reproduce=@@@"});
               },
               is<InputError>(), "'reproduce' must be followed by '=' and RapidCheck's encoding"});
  c.push_back({"reproduce string that holds nothing", [] {
                 check(find_property("composition.decode"), Subject::reference(), {1, 1, true, "reproduce=A"});
               },
               is<InputError>(), "the reproduce string ends within the property count"});
  // Found by fuzz_replay: RapidCheck reads a generator's last byte past the end of the
  // data. One property, an empty name, the key, bits and counter, and then nothing.
  c.push_back({"reproduce string that ends before the generator's last byte", [] {
                 check(find_property("composition.decode"), Subject::reference(),
                       {1, 1, true, "reproduce=BAAA" + std::string(44, 'A')});
               },
               is<InputError>(), "the reproduce string ends within the generator's bit index"});
  // Found by fuzz_replay: a name length RapidCheck would have reserved (4 TB) before reading.
  c.push_back({"reproduce string naming a property of terabytes", [] {
                 check(find_property("composition.decode"), Subject::reference(),
                       {1, 1, true, "es=10 reproduce=ffffffduceff"});
               },
               is<InputError>(), "the reproduce string: a property name of 4326970780639 bytes, in 9 bytes"});

  // Wrong types: result sizes that overflow are refused, never wrapped into a type that verifies.
  c.push_back({"concatenate whose size wraps to 0", [] {
                 program(head + "input %a : f32[0,4611686018427387904]\n"
                                "%y = concatenate %a, %a, %a, %a {dimension = 1} : f32[0,0]\noutput y = %y\n");
               },
               is<VerifyError>(), "p.txt:3:1: %y = concatenate: the sizes along dimension 1 add up to more than 2^63"});
  c.push_back({"slice with a huge stride", [] {
                 program(head + "input %a : f32[4]\n%y = slice %a {start_indices = [1], limit_indices = [4], "
                                "strides = [9223372036854775807]} : f32[0]\noutput y = %y\n");
               },
               is<VerifyError>(), "p.txt:3:1: %y = slice: result type is f32[1], but the program states f32[0]"});
  // Destinations: an existing destination that is not a regular file is never replaced,
  // and authoring replaces only a folder that is cutcheck's own program folder.
  c.push_back({"output onto a device", [] { write_file_atomic("/dev/null", std::string("x")); }, is<IoError>(),
               "'/dev/null' exists and is not a regular file (a device)"});
  c.push_back({"output onto a FIFO", [] {
                 fs::path fifo = test::temp_dir("fifo-out") / "out.safetensors";
                 if (::mkfifo(fifo.c_str(), 0600) != 0) throw std::runtime_error("mkfifo");
                 write_file_atomic(fifo, std::string("x"));
               },
               is<IoError>(), "out.safetensors' exists and is not a regular file (a FIFO)"});
  c.push_back({"output onto a folder", [] {
                 fs::path dir = test::temp_dir("folder-out") / "out.safetensors";
                 fs::create_directories(dir);
                 write_file_atomic(dir, std::string("x"));
               },
               is<IoError>(), "out.safetensors' exists and is not a regular file (a folder)"});
  c.push_back({"authoring over a folder of the user's", [] {
                 fs::path dir = test::temp_dir("user-folder");
                 write_file_atomic(dir / "thesis.tex", std::string("years of work"));
                 publish_program(dir, {ProgramFolder{}}, false);
               },
               is<IoError>(), "exists and is not a cutcheck program folder ('thesis.tex' is not cutcheck's)"});
  c.push_back({"authoring over a chip folder with extra files", [] {
                 fs::path dir = test::temp_dir("chip-extra");
                 write_file_atomic(dir / "chip0" / "program.txt", std::string("x"));
                 write_file_atomic(dir / "chip0" / "notes.md", std::string("x"));
                 publish_program(dir, {ProgramFolder{}}, false);
               },
               is<IoError>(), "('chip0/notes.md' is not cutcheck's)"});

  // Safetensors headers that lie about their sizes.
  c.push_back({"safetensors offsets that wrap", [] {
                 safetensors(safetensors_file(
                     R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [18446744073709551612, 0]}})", 4));
               },
               is<FormatError>(), "tensor 'a'"});
  c.push_back({"safetensors negative offset", [] {
                 safetensors(safetensors_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", 4));
               },
               is<FormatError>(), "tensor 'a'"});
  c.push_back({"safetensors header length of 2^64 - 1", [] {
                 std::string f = safetensors_file("{}", 0);
                 for (int i = 0; i < 8; ++i) f[size_t(i)] = char(0xff);
                 safetensors(f);
               },
               is<FormatError>(), "t.safetensors: header length 18446744073709551615 runs past the end"});
  c.push_back({"safetensors negative dimension", [] {
                 safetensors(safetensors_file(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4));
               },
               is<FormatError>(), "tensor 'a'"});
  c.push_back({"safetensors nested too deep", [] {
                 safetensors(safetensors_file(R"({"a": )" + std::string(64, '[') + std::string(64, ']') + "}", 0));
               },
               is<FormatError>(), "t.safetensors (header): JSON nested deeper than 32 levels"});
  c.push_back({"spec nested too deep", [] { spec_text(std::string(40, '[') + std::string(40, ']')); }, is<FormatError>(),
               "spec.json: JSON nested deeper than 32 levels"});
  c.push_back({"spec key twice", [] { spec_text(R"({"vocab": 32, "vocab": 1000000000000})"); }, is<FormatError>(),
               "spec.json: key 'vocab' appears twice"});
  c.push_back({"truncated spec", [] { spec_text(R"({"vocab": 32, "dim")"); }, is<FormatError>(), "spec.json: malformed JSON"});
  c.push_back({"manifest shape that overflows", [] {
                 Json j = good_manifest();
                 j["weights"][0]["shape"] = Json::parse("[4294967296, 4294967296, 4294967296]");
                 manifest(j);
               },
               is<FormatError>(), "manifest.json: weight 'w': shape [4294967296,4294967296,4294967296] is too large"});
  // The persistent protocol's messages (core/serve_protocol.h).
  c.push_back({"serve answer not JSON", [] { parse_answer("done"); }, is<FormatError>(), "the answer: malformed JSON"});
  c.push_back({"serve answer without id", [] { parse_answer(R"({"status": "ok"})"); }, is<FormatError>(),
               "the answer: missing field 'id'"});
  c.push_back({"serve answer with a string id", [] { parse_answer(R"({"id": "1", "status": "ok"})"); }, is<FormatError>(),
               "the answer: field 'id'"});
  c.push_back({"serve answer of unknown status", [] { parse_answer(R"({"id": 1, "status": "done"})"); },
               is<FormatError>(), "status 'done' is none of ok, unsupported, error"});
  c.push_back({"serve answer with a numeric message", [] { parse_answer(R"({"id": 1, "status": "ok", "message": 3})"); },
               is<FormatError>(), "the answer: field 'message'"});
  c.push_back({"serve request without outputs", [] { parse_request(R"({"id": 1, "folder": "f", "inputs": "i"})"); },
               is<FormatError>(), "the request: missing field 'outputs'"});
  c.push_back({"serve request path not UTF-8", [] { request_line({1, "f\xff", "i", "o"}); }, is<Error>(),
               "not valid UTF-8"});
  return c;
}

class BadInput : public ::testing::TestWithParam<Bad> {};

TEST_P(BadInput, IsRefusedWithTheRightErrorAndPlace) {
  const Bad& bad = GetParam();
  // The memory bombs are judged against a fixed limit, not the machine's default.
  test::ScopedMemoryLimit limit(uint64_t{16} << 30);
  try {
    bad.trigger();
    FAIL() << bad.name << ": accepted";
  } catch (const std::exception& e) {
    EXPECT_EQ(std::type_index(typeid(e)), bad.error) << bad.name << ": " << e.what();
    EXPECT_THAT(e.what(), ::testing::HasSubstr(bad.place)) << bad.name;
    EXPECT_EQ(exit_code_of(e), bad.exit_code) << bad.name << ": " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Catalog, BadInput, ::testing::ValuesIn(catalog()), [](const auto& info) {
  std::string n = info.param.name;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

TEST(BadInputCatalog, HasAtLeastEightyNineEntries) { EXPECT_GE(catalog().size(), 89u); }

TEST(ServeProtocol, MessagesRoundTrip) {
  const ServeRequest r = parse_request(request_line({7, "/a b/\"q\"", "/in", "/out"}));
  EXPECT_EQ(r.id, 7);
  EXPECT_EQ(r.folder, "/a b/\"q\"");
  EXPECT_EQ(r.outputs, "/out");
  const std::string line = answer_line({7, ServeStatus::unsupported, "no\nsplits"});
  EXPECT_EQ(line.find('\n'), line.size() - 1);  // one line, the message's newline escaped
  const ServeAnswer a = parse_answer(line);
  EXPECT_EQ(a.status, ServeStatus::unsupported);
  EXPECT_EQ(a.message, "no\nsplits");
  EXPECT_EQ(parse_answer(R"({"id": 2, "status": "error"})").message, "");
}

TEST(Paths, ManifestEntriesCannotLeaveTheirFolder) {
  fs::path dir = test::temp_dir("paths");
  fs::create_directories(dir / "w");
  write_file_atomic(dir / "secret", std::string("x"));
  fs::create_symlink(dir / "secret", dir / "w" / "link");
  fs::create_symlink(dir / "w" / "model", dir / "w" / "inside");  // a link that stays inside is fine
  auto escape = [&](const std::string& file) {
    try {
      resolve_under(dir / "w", file, "weight 'w'");
    } catch (const IoError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_THAT(escape("../secret"), ::testing::HasSubstr("weight 'w': '../secret' climbs out"));
  EXPECT_THAT(escape("a/../../secret"), ::testing::HasSubstr("climbs out"));
  EXPECT_THAT(escape((dir / "secret").string()), ::testing::HasSubstr("is absolute"));
  EXPECT_THAT(escape("link"), ::testing::HasSubstr("weight 'w': 'link' leads outside"));
  EXPECT_THAT(escape("inside"), ::testing::IsEmpty());
  EXPECT_THAT(escape("sub/model.safetensors"), ::testing::IsEmpty());
  // Through the loader as a user meets it.
  Json j = good_manifest();
  j["weights"][0]["file"] = "../secret";
  EXPECT_THROW(load_weights(Manifest::from_json(j, "m"), dir), IoError);
}

TEST(Limits, AMemoryBombIsRefusedBeforeAllocating) {
  {
    test::ScopedMemoryLimit limit(1 << 20);
    // Far beyond what the machine could allocate: were it attempted, this would not throw
    // a LimitError but die.
    EXPECT_THROW(Tensor(TensorType{DType::f32, {1 << 30, 1 << 30}}), LimitError);
    EXPECT_THROW(program(head + "input %x : f32[512,1024]\n%y = negate %x : f32[512,1024]\noutput y = %y\n"), LimitError);
  }
  EXPECT_NO_THROW(program(head + "input %x : f32[512,1024]\n%y = negate %x : f32[512,1024]\noutput y = %y\n"));
  EXPECT_EQ(parse_byte_size("16G"), uint64_t{16} << 30);
  EXPECT_THROW(parse_byte_size("lots"), Error);
}

// kill -9 in the middle of a write leaves no OUT.tmp.* beside the destination: the data
// goes to an unnamed file (O_TMPFILE) that gets its name only when complete.
TEST(Files, AKilledWriteLeavesNoTemporaryFile) {
  fs::path dir = test::temp_dir("killed-write");
  {
    int probe = ::open(dir.c_str(), O_TMPFILE | O_WRONLY, 0644);
    if (probe < 0) GTEST_SKIP() << "no O_TMPFILE on this filesystem: the named fallback is used";
    ::close(probe);
  }
  const fs::path file = dir / "big.safetensors";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string big(size_t(512) << 20, 'x');  // long enough to be killed while writing
    (void)!::write(ready[1], "w", 1);
    write_file_atomic(file, big);
    _exit(0);
  }
  char go;
  ASSERT_EQ(::read(ready[0], &go, 1), 1);
  ::close(ready[0]), ::close(ready[1]);
  usleep(20 * 1000);  // well inside the write
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path(), file) << "left behind: " << e.path();
}

TEST(Files, WritesAreAtomic) {
  fs::path dir = test::temp_dir("atomic");
  fs::path file = dir / "out.safetensors";
  write_file_atomic(file, std::string("first"));
  write_file_atomic(file, std::string("second"));
  EXPECT_EQ(test::read_whole(file), "second");
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.path() != file;
  EXPECT_EQ(entries, 0u) << "a temporary file was left behind";
  // A write that cannot happen leaves what was there.
  fs::create_directories(dir / "blocked");
  EXPECT_THROW(write_file_atomic(dir / "blocked", std::string("x")), IoError);
  EXPECT_TRUE(fs::is_directory(dir / "blocked"));
  EXPECT_EQ(test::read_whole(file), "second");
}

}  // namespace
}  // namespace cutcheck
