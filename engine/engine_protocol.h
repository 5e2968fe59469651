// The engine protocol, cutcheck-engine-1 (docs/engines.md): what an engine declares
// (`describe`), the requests cutcheck writes for `run`, and the results it reads back.
// Readers throw FormatError naming the document and the first key that is wrong.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bound/perturbed_runs.h"
#include "bound/precision.h"
#include "core/json.h"
#include "model/gguf_export.h"
#include "model/spec.h"

namespace cutcheck {

inline constexpr const char* engine_protocol = "cutcheck-engine-1";

// The model files an engine loads: cutcheck's weights folder, a GGUF file, a Hugging Face folder.
enum class ModelFormat { cutcheck, gguf, hf };
std::string model_format_name(ModelFormat f);
ModelFormat parse_model_format(const std::string& name);  // throws Error naming the formats

// What an engine computes in (docs/engines.md, "Precisions"): a float precision (f32, f16,
// bf16: the weights stored in it, the activations held to its bound), or a quantized model
// (q8_0, q4_0, q4_k_m: the weights quantized as llama-quantize does, the reference run on
// them as stored, the activations f32 but where they meet a stored weight in a contraction,
// rounded there as llama.cpp's CPU matrix products round them).
struct EnginePrecision {
  GgufFileType file = GgufFileType::f32;  // the weights' storage (a GGUF file type)
  std::string name() const;               // "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m"
  bool quantized() const;
  Precision compute() const;  // the activations' storage: the float type's, f32 for a quantized model
  // Throws Error naming the precisions there are.
  static EnginePrecision parse(const std::string& name);
  // The dtype of a generated spec's weights: the float precision's, f32 for a quantized
  // model (quantized from f32 weights).
  DType spec_dtype() const;
  // Values per block of the file type's own quantized type (32 for q8_0 and q4_0, 256 for
  // q4_k_m's K-quants), 1 for a float precision.
  int64_t block_values() const;
  // Per weight of `spec`, how the activation that meets it in a contraction is rounded: in a
  // quantized model, as ggml's CPU backend converts it to the weight type's vec_dot_type
  // (Q8_0 blocks beside Q8_0, Q4_0 and Q5_0 weights, Q8_K blocks beside Q4_K and Q6_K, f16 beside
  // F16); none in a float one, whose activations the precision's bound holds already.
  std::map<std::string, ActivationRounding> weight_meets(const ModelSpec& spec) const;
  bool operator==(const EnginePrecision&) const = default;
};

struct EngineDescription {
  std::string name;
  std::vector<ModelFormat> formats;
  std::vector<EnginePrecision> precisions;
  int64_t max_context = 0;
  int64_t max_top_k = 0;  // 0: full-vocabulary log-probabilities
  std::vector<RopeStyle> rope_styles{RopeStyle::interleaved, RopeStyle::half};
  std::vector<std::string> knobs;         // the spec knobs it implements, by name (model/spec_knobs.h)
  std::map<std::string, int64_t> limits;  // spec field -> largest value

  static EngineDescription from_json(const Json& json, const std::string& source);
  Json to_json() const;
  bool takes_knob(const std::string& knob) const;
  // Why the engine would not take `spec` by what it declared; empty when it would.
  std::string refuses(const ModelSpec& spec) const;
};

struct EngineRequest {
  std::vector<int32_t> prompt;
  int64_t steps = 0;
  std::vector<int64_t> positions;  // increasing, each below positions_end()
  int64_t length() const { return int64_t(prompt.size()) + steps; }
  // The positions there are: the prompt's, and those of the generated tokens but the last
  // (which is never fed back): max(prompt, prompt + steps - 1).
  int64_t positions_end() const { return std::max(int64_t(prompt.size()), length() - 1); }
};

// The requests file of one run. `include`, with top_k > 0: per request and reported
// position, the tokens whose log-probabilities cutcheck would like as well.
Json requests_json(int64_t vocab, int64_t top_k, const std::vector<EngineRequest>& requests,
                   const std::vector<std::vector<std::vector<int32_t>>>& include = {});

// One reported position: the full vocabulary's log-probabilities, or top-k pairs.
// Minus infinity stands for `null`.
struct PositionLogprobs {
  std::vector<double> full;                      // vocab values, with top_k 0
  std::vector<std::pair<int32_t, double>> top;   // with top_k > 0
};

struct EngineResult {
  std::vector<int32_t> tokens;
  std::vector<PositionLogprobs> logprobs;  // in the order of the request's positions
};

// The results file of one run, one result per request, in request order. Throws
// FormatError naming the key ("results[1].logprobs[3]: 31 numbers, the vocabulary has 32").
std::vector<EngineResult> parse_results(const Json& json, const std::vector<EngineRequest>& requests, int64_t vocab,
                                        int64_t top_k, const std::string& source);

}  // namespace cutcheck
