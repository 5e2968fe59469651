// Backends that compute every cut correctly and still break an invariance that
// `cutcheck check --backend` looks for: each is the reference interpreter with one twist,
// to show that the check tells the twists apart (tests/cli_check_backend.sh).
//   cutcheck-misbehaving MODE FOLDER --inputs IN --outputs OUT
//   cutcheck-misbehaving MODE --serve        (the persistent protocol)
// MODE is one of
//   batch-order  Batch and its pieces sum in descending order (the f32-reversed variant),
//                Decode in ascending order: correct within the tolerance, other bits
//   noisy        a folder run again on the same inputs adds 1 ulp to its first float output
//   mixed-rows   Batch's logits and next come back with their rows rotated by one
//   zeroed-rows  Batch's caches come back with the don't-care rows (past each row's
//                position) zeroed, where Decode passes them through: correct, bitwise
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/files.h"
#include "core/json.h"
#include "core/safetensors.h"
#include "core/serve_protocol.h"
#include "core/sha256.h"
#include "harness/folder.h"
#include "harness/variants.h"
#include "model/cut.h"

namespace cutcheck {
namespace {

// The cut a program folder (or a split's chip 0) holds, from its manifest.
Cut folder_cut(const fs::path& folder) {
  fs::path manifest = folder / "manifest.json";
  if (!fs::exists(manifest)) manifest = folder / "chip0" / "manifest.json";
  const Json json = parse_json(read_file(manifest, max_bytes::manifest), manifest.string());
  return Cut::parse(json_string(json, "cut", manifest.string()), manifest.string());
}

// Rows r of `t` (first dimension) moved to r + 1, the last to 0.
void rotate_rows(Tensor& t) {
  const size_t rows = size_t(t.shape().at(0)), row = t.bytes() / rows;
  std::string bytes(reinterpret_cast<const char*>(t.raw().data()), t.bytes());
  std::rotate(bytes.begin(), bytes.end() - long(row), bytes.end());
  std::memcpy(t.raw_mut().data(), bytes.data(), bytes.size());
}

// Each row's cache rows past its position set to 0, in Batch's [R, C, K, E] caches.
void zero_unread_rows(TensorMap& out, const Tensor& positions) {
  for (auto& [name, t] : out) {
    if (!name.starts_with("k.") && !name.starts_with("v.")) continue;
    const int64_t rows = t.shape().at(0), ctx = t.shape().at(1), width = t.elements() / (rows * ctx);
    auto v = t.as_mut<float>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t p = positions.as<int32_t>()[size_t(r)] + 1; p < ctx; ++p)
        std::fill_n(v.begin() + (r * ctx + p) * width, width, 0.0f);
  }
}

void run(const std::string& mode, const fs::path& folder, const fs::path& inputs, const fs::path& outputs) {
  const Cut cut = folder_cut(folder);
  RunOptions options;
  if (mode == "batch-order" && cut.family() == Family::batch) options = find_variant("f32-reversed").run;
  const TensorMap in = read_safetensors(inputs).tensors;
  TensorMap out = FolderRun::open(folder, options).run(in);
  if (mode == "zeroed-rows" && cut.kind == CutKind::batch) zero_unread_rows(out, in.at("pos"));
  if (mode == "mixed-rows" && cut.kind == CutKind::batch && cut.rows > 1) {
    rotate_rows(out.at("logits"));
    rotate_rows(out.at("next"));
  }
  if (mode == "noisy") {
    // A marker beside the program for each inputs file seen: the second run is noisy.
    const fs::path seen = folder / (".seen-" + sha256_file(inputs));
    if (fs::exists(seen)) {
      for (auto& [name, t] : out)
        if (t.dtype() == DType::f32 && t.elements() > 0) {
          float& v = t.as_mut<float>()[0];
          v = std::nextafter(v, INFINITY);
          break;
        }
    } else {
      write_file_atomic(seen, "");
    }
  }
  write_safetensors(outputs, out);
}

}  // namespace
}  // namespace cutcheck

int main(int argc, char** argv) {
  const std::string usage =
      "usage: cutcheck-misbehaving batch-order|noisy|mixed-rows|zeroed-rows FOLDER --inputs IN --outputs OUT | --serve";
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool serve = argc == 3 && std::string(argv[2]) == "--serve";
  if ((mode != "batch-order" && mode != "noisy" && mode != "mixed-rows" && mode != "zeroed-rows") ||
      (!serve && (argc != 7 || std::string(argv[3]) != "--inputs" || std::string(argv[5]) != "--outputs"))) {
    fmt::print(stderr, "{}\n", usage);
    return 2;
  }
  try {
    if (serve) cutcheck::serve_requests([&](const cutcheck::ServeRequest& r) { cutcheck::run(mode, r.folder, r.inputs, r.outputs); });
    else cutcheck::run(mode, argv[2], argv[4], argv[6]);
  } catch (const std::exception& e) {
    const int code = cutcheck::exit_code_of(e);
    fmt::print(stderr, "cutcheck-misbehaving: {}\n", e.what());
    return code;
  }
  return 0;
}
