#include "conform/engine_model.h"

#include "core/error.h"
#include "model/weights.h"

namespace cutcheck {

fs::path engine_model_path(ModelFormat format, const fs::path& folder) {
  return format == ModelFormat::gguf ? folder / "model.gguf" : folder;
}

fs::path write_engine_model(ModelFormat format, const fs::path& folder, const ModelSpec& spec, const TensorMap& weights) {
  fs::create_directories(folder);
  switch (format) {
    case ModelFormat::cutcheck:
      write_weights(folder, weights, spec);
      write_file_atomic(folder / "spec.json", spec.to_json().dump(2) + "\n");
      return folder;
    case ModelFormat::gguf:
    case ModelFormat::hf: break;
  }
  throw NotYet("the " + model_format_name(format) + " model format is not written yet (the exporters are not merged)");
}

}  // namespace cutcheck
