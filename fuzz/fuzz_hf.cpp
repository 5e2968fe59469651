// The Hugging Face importer. The first byte picks config.json text (read into a spec) or
// a safetensors file read as the weights of a fixed small config; what imports fits the
// spec it gives.
#include "core/error.h"
#include "fuzz/fuzz_input.h"
#include "model/hf.h"
#include "model/weights.h"

using namespace cutcheck;

namespace {

// The config the corpus's safetensors seeds are written for (make_corpus.sh).
const char* const small_config = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 4, "intermediate_size": 4, "num_hidden_layers": 1, "num_attention_heads": 2,
  "num_key_value_heads": 1, "head_dim": 2, "vocab_size": 8, "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0, "tie_word_embeddings": false})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto input = fuzz::pick_reader(data, size, 2);
  if (!input) return 0;
  try {
    if (input->reader == 0) {
      hf_spec(parse_json(input->text, "config.json"), "fuzz/config.json");
    } else {
      auto bytes = std::as_bytes(std::span(input->text.data(), input->text.size()));
      CheckpointTensors tensors;
      for (const auto& [name, stored] : index_safetensors(bytes, "fuzz").tensors)
        tensors.emplace(name, CheckpointTensor{"fuzz", stored, nullptr});
      ImportedModel m = read_hf(parse_json(small_config, "config.json"), "fuzz/config.json", tensors, "fuzz");
      check_weights(m.weights, m.spec, "fuzz");
    }
  } catch (const Error&) {
  }
  return 0;
}
