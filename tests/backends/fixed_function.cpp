// A fixed-function backend, as a vendor kernel library or llama2.c would be one: it never
// reads program.txt. It learns what to run from the folder contract alone
// (docs/formats.md): manifest.json's `cut`, `tp` and `chip`, the spec.json beside it, and
// the weights the manifest lists. Its engine is the oracle (oracle/, Eigen in double),
// which computes the model directly, so it shares no code with the author or the
// reference interpreter.
//
// Like a real fixed-function engine it covers one family and says so for the rest
// (exit 77): Decode and Forward, unsplit, interleaved rope, head_dim = dim / heads
// (llama2.c's models), weights in f32 or Q4_0 (which it dequantizes with its own code,
// from ggml's block layout as docs/formats.md states it). It obeys the conformance protocol:
//   cutcheck-fixed-function FOLDER --inputs IN --outputs OUT
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/files.h"
#include "core/safetensors.h"
#include "model/cut.h"
#include "model/spec.h"
#include "oracle/oracle.h"
#include "program/manifest.h"

namespace cutcheck {
namespace {

// Throws NotYet when the folder asks for what this engine does not have.
void check_family(const Cut& cut, int64_t tp, const ModelSpec& spec) {
  if (cut.kind != CutKind::decode && cut.kind != CutKind::forward)
    throw NotYet(fmt::format("{}: this engine runs decode and forward only", cut.str()));
  if (tp != 1) throw NotYet(fmt::format("tp {}: this engine runs on one chip", tp));
  if (spec.rope_style != RopeStyle::interleaved) throw NotYet("rope_style half: this engine rotates interleaved pairs");
  if (spec.heads * spec.head_dim != spec.dim)
    throw NotYet(fmt::format("head_dim {} with dim {} and {} heads: this engine needs head_dim = dim / heads",
                             spec.head_dim, spec.dim, spec.heads));
}

// IEEE binary16 to float, by its fields.
float f16_value(uint16_t h) {
  const int exponent = (h >> 10) & 31, mantissa = h & 1023;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exponent == 0) return sign * std::ldexp(float(mantissa), -24);
  if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
  return sign * std::ldexp(float(1024 + mantissa), exponent - 25);
}

// A Q4_0 matrix as f32: blocks of 18 bytes, a little-endian f16 scale d and 16 bytes whose
// low nibbles are values 0-15 of the block and high nibbles values 16-31; value = d (q - 8).
Tensor q4_0_as_f32(const Tensor& t) {
  Tensor out({DType::f32, t.shape()});
  const uint8_t* block = reinterpret_cast<const uint8_t*>(t.raw().data());
  float* y = out.as_mut<float>().data();
  for (int64_t i = 0; i < out.elements(); i += 32, block += 18) {
    const float d = f16_value(uint16_t(block[0] | block[1] << 8));
    for (int j = 0; j < 16; ++j) {
      y[i + j] = d * float((block[2 + j] & 15) - 8);
      y[i + j + 16] = d * float((block[2 + j] >> 4) - 8);
    }
  }
  return out;
}

void run(const fs::path& folder, const fs::path& inputs, const fs::path& outputs) {
  const fs::path manifest_file = folder / "manifest.json";
  if (!fs::exists(manifest_file) && fs::exists(folder / "chip0")) throw NotYet("tp splits: this engine runs on one chip");
  // Only the contract's fields: the format, cut, tp and chip, spec.json and the weights.
  const Json json = parse_json(read_file(manifest_file, max_bytes::manifest), manifest_file.string());
  if (json_string(json, "format", manifest_file.string()) != manifest_format)
    throw FormatError(fmt::format("{}: not a {} manifest", manifest_file.string(), manifest_format));
  const Cut cut = Cut::parse(json_string(json, "cut", manifest_file.string()), manifest_file.string());
  const int64_t tp = json_int(json, "tp", manifest_file.string());
  ModelSpec spec = load_spec((folder / json_string(json, "spec", manifest_file.string())).string());
  check_family(cut, tp, spec);
  const Manifest manifest = Manifest::read(manifest_file);
  TensorMap weights = load_weights(manifest, folder);
  for (auto& [name, t] : weights) {
    if (t.dtype() == DType::q4_0) t = q4_0_as_f32(t);
    if (t.dtype() != DType::f32)
      throw NotYet(fmt::format("weight '{}' in {}: this engine reads f32 and q4_0", name, dtype_name(t.dtype())));
  }
  spec.store_every_weight_as(DType::f32);  // the oracle computes on the f32 values
  Oracle engine(spec, std::move(weights));
  write_safetensors(outputs, engine.run(cut, read_safetensors(inputs).tensors));
}

}  // namespace
}  // namespace cutcheck

int main(int argc, char** argv) {
  const std::string usage = "usage: cutcheck-fixed-function FOLDER --inputs IN --outputs OUT";
  if (argc != 6 || std::string(argv[2]) != "--inputs" || std::string(argv[4]) != "--outputs") {
    fmt::print(stderr, "{}\n", usage);
    return 2;
  }
  try {
    cutcheck::run(argv[1], argv[3], argv[5]);
  } catch (const std::exception& e) {  // 77 for what it does not run, as the protocol says
    const int code = cutcheck::exit_code_of(e);
    fmt::print(stderr, "cutcheck-fixed-function: {}: {}\n", code == 77 ? "not supported" : "error", e.what());
    return code;
  }
  return 0;
}
