#include "program/manifest.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "core/error.h"
#include "core/limits.h"
#include "core/safetensors.h"

namespace cutcheck {

Json Manifest::to_json() const {
  Json list = Json::array();
  for (const ManifestWeight& w : weights)
    list.push_back({{"name", w.name},
                    {"file", w.file},
                    {"tensor", w.tensor},
                    {"dtype", dtype_name(w.type.dtype)},
                    {"shape", w.type.shape}});
  Json out{{"format", manifest_format}, {"dir", dir}};
  if (about.contains("cut")) {  // the origin, for backends that do not read program text
    for (const char* key : {"cut", "tp", "chip"}) out[key] = about[key];
    out["spec"] = "spec.json";
  }
  out["weights"] = list;
  return out;
}

Manifest Manifest::from_json(const Json& json, const std::string& source) {
  if (!json.is_object()) throw FormatError(fmt::format("{}: a manifest must be a JSON object", source));
  std::string format = json_string(json, "format", source);
  if (format != manifest_format)
    throw FormatError(fmt::format("{}: format is '{}', expected '{}'{}", source, format, manifest_format,
                                  format == "cutcheck-manifest-1" ? " (author the folder again)" : ""));
  Manifest m;
  m.dir = json_string(json, "dir", source);
  if (json.contains("cut")) {
    m.about["cut"] = json_string(json, "cut", source);
    m.about["tp"] = json_int(json, "tp", source);
    m.about["chip"] = json_int(json, "chip", source);
    if (json_string(json, "spec", source) != "spec.json")
      throw FormatError(fmt::format("{}: field 'spec' must be \"spec.json\", the file beside the manifest", source));
  }
  const Json& list = json_field(json, "weights", source);
  if (!list.is_array()) throw FormatError(fmt::format("{}: field 'weights' must be a list", source));
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = fmt::format("{}: weights[{}]", source, i);
    const Json& entry = list[i];
    ManifestWeight w;
    w.name = json_string(entry, "name", where);
    where = fmt::format("{}: weight '{}'", source, w.name);
    w.file = json_string(entry, "file", where);
    w.tensor = json_string(entry, "tensor", where);
    std::string dtype = json_string(entry, "dtype", where);
    if (!parse_dtype(dtype, w.type.dtype)) throw FormatError(fmt::format("{}: unknown dtype '{}'", where, dtype));
    w.type.shape = json_int_list(entry, "shape", where);
    for (int64_t d : w.type.shape)
      if (d < 0) throw FormatError(fmt::format("{}: shape {} has a negative dimension", where, shape_str(w.type.shape)));
    try {
      check_memory(w.type.bytes(), where);  // a shape whose size overflows, or no run could hold
    } catch (const LimitError& e) {
      throw FormatError(fmt::format("{}: shape {} is too large ({})", where, shape_str(w.type.shape), e.what()));
    } catch (const FormatError& e) {  // a quantized type whose rows are not whole blocks
      throw FormatError(fmt::format("{}: {}", where, e.what()));
    }
    if (!names.insert(w.name).second) throw FormatError(fmt::format("{}: named twice", where));
    m.weights.push_back(std::move(w));
  }
  return m;
}

Manifest Manifest::read(const fs::path& path) {
  Manifest m = from_json(parse_json(read_file(path, max_bytes::manifest), path.string()), path.string());
  if (m.about.contains("cut")) {
    const fs::path spec = path.parent_path() / "spec.json";
    m.about["spec"] = parse_json(read_file(spec, max_bytes::spec), spec.string());
  }
  return m;
}

const ManifestWeight* Manifest::find(const std::string& name) const {
  for (const ManifestWeight& w : weights)
    if (w.name == name) return &w;
  return nullptr;
}

fs::path Manifest::weights_dir(const fs::path& manifest_folder) const {
  fs::path d(dir);
  return d.is_absolute() ? d : manifest_folder / d;
}

void verify_manifest(const Program& program, const Manifest& manifest, const std::string& source) {
  std::set<std::string> declared;
  for (const WeightDecl& decl : program.weights) {
    const std::string& name = program.name(decl.value);
    declared.insert(name);
    const ManifestWeight* w = manifest.find(name);
    if (!w) throw VerifyError(fmt::format("{}: weight '{}' is declared by the program but not in the manifest", source, name));
    if (w->type != program.type(decl.value))
      throw VerifyError(fmt::format("{}: weight '{}' is {} in the program but {} in the manifest", source, name,
                                    program.type(decl.value).str(), w->type.str()));
  }
  for (const ManifestWeight& w : manifest.weights)
    if (!declared.count(w.name))
      throw VerifyError(fmt::format("{}: the manifest lists weight '{}', which the program does not declare", source, w.name));
}

TensorMap load_weights(const Manifest& manifest, const fs::path& manifest_folder) {
  fs::path dir = manifest.weights_dir(manifest_folder);
  std::map<std::string, SafetensorsFile> files;
  TensorMap out;
  for (const ManifestWeight& w : manifest.weights) {
    std::string what = fmt::format("manifest weight '{}'", w.name);
    fs::path path = resolve_under(dir, w.file, what);
    auto it = files.find(path.string());
    if (it == files.end()) it = files.emplace(path.string(), SafetensorsFile::open(path)).first;
    if (!it->second.holds(w.tensor))
      throw FormatError(fmt::format("{}: '{}' holds no tensor '{}'", what, path.string(), w.tensor));
    out.emplace(w.name, it->second.read(w.tensor, w.type,
                                        fmt::format("{}: tensor '{}' in '{}'", what, w.tensor, path.string()),
                                        "the manifest says"));
  }
  return out;
}

}  // namespace cutcheck
