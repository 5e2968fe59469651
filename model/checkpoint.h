// What the checkpoint importers (llama2.c, Hugging Face, GGUF) share: taking a
// checkpoint's stored tensors as cutcheck's weights, and the folder an import writes.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/files.h"
#include "core/safetensors.h"
#include "model/spec.h"

namespace cutcheck {

// A tensor a checkpoint stores, and where: `file` names it in errors, `keepalive` owns
// the bytes. The dtype uses safetensors' names; the readers take F32, F16 and BF16.
struct CheckpointTensor {
  std::string file;
  StoredTensor stored;
  std::shared_ptr<const void> keepalive;
};
using CheckpointTensors = std::map<std::string, CheckpointTensor>;

// How a checkpoint names the weights: the three whole-model tensors, and each layer's
// tensors as `layer_prefix` (with {} for the layer) followed by the suffix of each kind,
// in the order attention_norm, wq, wk, wv, wo, ffn_norm, w1 (gate), w2 (down), w3 (up).
// The knobs' tensors follow, in the order bq, bk, bv, q_norm, k_norm (empty where the
// format has none).
struct CheckpointNames {
  std::string embedding, final_norm, output;
  std::string layer_prefix;
  std::array<std::string, 9> layer;
  std::array<std::string, 5> knob_layer = {};
};

// cutcheck's weight name -> the checkpoint's, for every weight of the spec's layout (and
// `output`, which a tied spec lacks).
std::map<std::string, std::string> checkpoint_name_map(const ModelSpec& spec, const CheckpointNames& names);

// Every weight of the spec's layout from the checkpoint tensor `names` gives it, shape
// checked. A checkpoint with quantized tensors keeps every tensor in its own type (viewed
// in place): spec.dtype is the type most matrices have, spec.weight_dtypes the others'.
// Otherwise the weights keep the checkpoint's dtype (viewed in place, never copied) when
// one 16-bit float type stores them all, F32 tensors beside it (GGUF's norms) narrowed
// when every value is exact in it; else they are widened to f32. With `widen`, every
// weight is f32 (quantized ones dequantized, exactly). Sets spec.dtype to the dtype kept. Throws FormatError naming the file and the
// checkpoint's tensor for one that is missing, mis-shaped, of another dtype, or left over
// (a tensor no weight takes may carry semantics cutcheck would drop). A spec with more
// layers than the checkpoint has tensors is refused before any name is made.
TensorMap take_weights(ModelSpec& spec, const CheckpointTensors& tensors, const CheckpointNames& names,
                       const std::string& source, bool widen = false);

// Writes DIR/spec.json and DIR/model.safetensors, the folder every import produces.
void write_imported(const fs::path& dir, const ModelSpec& spec, const TensorMap& weights);

// A FormatError naming `source` for a spec the checkpoint describes but cutcheck refuses.
[[noreturn]] void impossible_model(const std::string& source, const std::string& why);

}  // namespace cutcheck
