// The model file an engine loads, in the format it declared (docs/engines.md, Model files).
#pragma once

#include "core/files.h"
#include "core/tensor.h"
#include "engine/engine_protocol.h"

namespace cutcheck {

// Writes the model under `folder` and returns the path to hand the engine: the folder
// itself for `cutcheck` (spec.json + model.safetensors) and `hf`, a file in it for `gguf`.
// The GGUF and Hugging Face files store the weights as the run's precision says (a float
// dtype, or for GGUF a quantized file type); the cutcheck folder stores them as the spec
// says (generated specs have the run's dtype).
fs::path engine_model_path(ModelFormat format, const fs::path& folder);
// Throws NotYet for a spec the format cannot express (a knob GGUF's llama architecture lacks)
// and for a quantized precision in a format other than GGUF.
fs::path write_engine_model(ModelFormat format, const fs::path& folder, const ModelSpec& spec, const TensorMap& weights,
                            const EnginePrecision& precision);

}  // namespace cutcheck
