#include "engine/engine_model.h"

#include <fmt/format.h>

#include "core/error.h"
#include "model/gguf_export.h"
#include "model/hf_export.h"
#include "model/weights.h"

namespace cutcheck {

fs::path engine_model_path(ModelFormat format, const fs::path& folder) {
  return format == ModelFormat::gguf ? folder / "model.gguf" : folder;
}

fs::path write_engine_model(ModelFormat format, const fs::path& folder, const ModelSpec& spec, const TensorMap& weights,
                            const EnginePrecision& precision) {
  if (precision.quantized() && format != ModelFormat::gguf)
    throw NotYet(fmt::format("the {} format holds no {} weights (GGUF does)", model_format_name(format), precision.name()));
  switch (format) {
    case ModelFormat::cutcheck:
      fs::create_directories(folder);
      write_weights(folder, weights, spec);
      write_file_atomic(folder / "spec.json", spec.to_json().dump(2) + "\n");
      break;
    case ModelFormat::gguf:
      try {
        check_gguf_expressible(spec);
      } catch (const Error& e) {  // a knob the engine declared that the format cannot carry
        throw NotYet(e.what());
      }
      fs::create_directories(folder);
      write_gguf(engine_model_path(format, folder), spec, weights, precision.file);
      break;
    case ModelFormat::hf: write_hf(folder, spec, weights, precision.spec_dtype()); break;
  }
  return engine_model_path(format, folder);
}

}  // namespace cutcheck
