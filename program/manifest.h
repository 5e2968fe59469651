// A manifest says where a program's weights live: for each weight the program
// declares, a file under the weights folder, the tensor's name in that file, its dtype
// and shape. The program text never names a folder; the manifest does.
#pragma once

#include <string>
#include <vector>

#include "core/files.h"
#include "core/json.h"
#include "core/tensor.h"
#include "program/program.h"

namespace cutcheck {

struct ManifestWeight {
  std::string name;    // the program's weight value, without '%'
  std::string file;    // relative to the manifest's dir
  std::string tensor;  // the tensor's name inside the file
  TensorType type;
  bool operator==(const ManifestWeight&) const = default;
};

// The version of the folder contract (docs/formats.md): a reader refuses any other.
inline constexpr const char* manifest_format = "cutcheck-manifest-2";

struct Manifest {
  // The weights folder. A relative dir is taken relative to the folder that holds
  // manifest.json, so a program folder and its weights can move together.
  std::string dir;
  std::vector<ManifestWeight> weights;
  // Where the program came from: cut (text), tp, chip, and spec (the spec.json beside the
  // manifest, as JSON). Written as the manifest's top-level "cut", "tp", "chip" fields and
  // spec.json, for backends that run the cut without reading program text; never needed
  // to run the program. Empty for a hand-written folder.
  Json about = Json::object();

  Json to_json() const;
  static Manifest from_json(const Json& json, const std::string& source);
  static Manifest read(const fs::path& path);

  const ManifestWeight* find(const std::string& name) const;
  // The weights folder as seen from the current directory.
  fs::path weights_dir(const fs::path& manifest_folder) const;
  bool operator==(const Manifest&) const = default;
};

// Every weight the program declares has exactly one entry of the same type, and the
// manifest names no other weight. Throws VerifyError naming the weight.
void verify_manifest(const Program& program, const Manifest& manifest, const std::string& source);

// Opens each file once, maps it, and returns the program's weights by name. Files must
// lie under the weights folder; tensors must exist with the stated type.
TensorMap load_weights(const Manifest& manifest, const fs::path& manifest_folder);

}  // namespace cutcheck
