// The model's weights: their names and shapes (Meta's naming, [out, in] layout as in
// llama2.c and Hugging Face), a seeded synthetic generator, and a weights folder.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/tensor.h"
#include "model/spec.h"
#include "core/quant_blocks.h"

namespace cutcheck {

namespace weight {
std::string embedding();                 // tok_embeddings [V, D]
std::string attention_norm(int64_t l);   // layers.l.attention_norm [D]
std::string wq(int64_t l);               // layers.l.attention.wq [H*E, D]
std::string wk(int64_t l);               // layers.l.attention.wk [K*E, D]
std::string wv(int64_t l);               // layers.l.attention.wv [K*E, D]
std::string wo(int64_t l);               // layers.l.attention.wo [D, H*E]
std::string bq(int64_t l);               // layers.l.attention.bq [H*E], with attention_bias
std::string bk(int64_t l);               // layers.l.attention.bk [K*E], with attention_bias
std::string bv(int64_t l);               // layers.l.attention.bv [K*E], with attention_bias
std::string q_norm(int64_t l);           // layers.l.attention.q_norm [E], with qk_norm
std::string k_norm(int64_t l);           // layers.l.attention.k_norm [E], with qk_norm
std::string ffn_norm(int64_t l);         // layers.l.ffn_norm [D]
std::string w1(int64_t l);               // layers.l.feed_forward.w1 [F, D] (gate)
std::string w2(int64_t l);               // layers.l.feed_forward.w2 [D, F] (down)
std::string w3(int64_t l);               // layers.l.feed_forward.w3 [F, D] (up)
std::string final_norm();                // norm [D]
std::string output();                    // output [V, D], only when the head is not tied
std::string head(const ModelSpec& spec);  // the classifier: output, or tok_embeddings when tied
}  // namespace weight

struct WeightInfo {
  std::string name;
  Shape shape;
};

// Every weight of the model, in llama2.c's order.
std::vector<WeightInfo> weight_layout(const ModelSpec& spec);
// The weight of the layout named `name`, without making the whole layout; nullopt when the
// spec has none of that name.
std::optional<WeightInfo> find_weight(const ModelSpec& spec, const std::string& name);

// The type weight `w` is stored in: its own in spec.weight_dtypes, else the spec's dtype,
// except that under a quantized dtype only the matrices are quantized and the vectors (norm
// gains, biases) stay f32, as GGUF files keep them. The one rule the author, the weights,
// the shards, the footprint and the faults read.
TensorType stored_type(const ModelSpec& spec, const WeightInfo& w);

// Seeded weights for any spec. Each tensor's values depend only on (seed, name), and
// are uniform with the spread of a standard initialisation: projections 1/sqrt(fan_in),
// the residual outputs (wo, w2) further by 1/sqrt(2 layers) so activations stay near
// unit scale however deep the model is, norm gains in [0.5, 1.5], biases uniform in
// [-0.5, 0.5] (as large as a trained model's, so that a dropped one shows).
// Weights are in stored_type: bf16 and f16 round those values to nearest; a quantized
// type quantizes each row by its format's reference quantizer (ggml's rules).
TensorMap synthetic_weights(const ModelSpec& spec, uint64_t seed);
// Writes the same weights to DIR/model.safetensors piece by piece, the same bytes as
// write_weights(dir, synthetic_weights(spec, seed), spec) without holding any tensor
// whole: an 8B model in bf16 takes its 16 GB on disk and a few MiB of memory.
// With `through` (a ggml format), every matrix's values (f32: spec.dtype must be f32) are
// quantized by its reference quantizer and dequantized again (quant/), the weights a file
// quantized so imports as; norms and biases are kept. A matrix whose rows are not whole
// blocks of the format is refused (Error naming it) before anything is written.
void write_synthetic_weights(const fs::path& dir, const ModelSpec& spec, uint64_t seed,
                             std::optional<QuantFormat> through = std::nullopt);

// The weights with every tensor in f32, each value exactly: quantized ones dequantized
// (quant/dequantize.h), bf16 and f16 widened. A model of any stored types as an f32 one
// (exports, which write checkpoints from f32 values).
TensorMap f32_weights(const TensorMap& weights);

// A weights folder holds model.safetensors, and spec.json when it came from an import.
fs::path weights_file(const fs::path& dir);
void write_weights(const fs::path& dir, const TensorMap& weights, const ModelSpec& spec);
// Reads the folder's weights and checks each against the spec's layout, by name and shape.
TensorMap read_weights(const fs::path& dir, const ModelSpec& spec);
// Throws FormatError naming the first weight that is missing or mis-shaped.
void check_weights(const TensorMap& weights, const ModelSpec& spec, const std::string& source);

}  // namespace cutcheck
