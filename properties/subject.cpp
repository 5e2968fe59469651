#include "properties/subject.h"

#include "core/json.h"
#include "core/safetensors.h"
#include "harness/compose.h"
#include "harness/split.h"
#include "oracle/oracle.h"
#include "program/text.h"
#include "properties/generators.h"
#include "model/weights.h"
#include "reference/definitions.h"

namespace cutcheck {

Subject Subject::reference() {
  Subject s;
  s.runner = [](const ModelSpec& spec, const TensorMap& weights) {
    return std::make_unique<ReferenceRunner>(spec, weights);
  };
  s.oracle = [](const ModelSpec& spec, const TensorMap& weights) { return std::make_unique<Oracle>(spec, weights); };
  s.bounds = [](const ModelSpec& spec, const TensorMap& weights, const Cut& cut, const TensorMap& inputs,
                const Tolerance& tolerance) {
    return ReferenceRunner(spec, weights).expect(cut, inputs, tolerance).bounds;
  };
  s.definitions = [](const ModelSpec& spec, const TensorMap& weights) {
    RunOptions definitions;
    definitions.kernels = definition_for;
    return std::make_unique<ReferenceRunner>(spec, weights, ProgramEdit{}, definitions);
  };
  s.split_runner = [](const ModelSpec& spec, const TensorMap& weights, int64_t tp) {
    return std::make_unique<SplitRunner>(spec, weights, tp);
  };
  s.write_split = [](const Cut& cut, const ModelSpec& spec, const std::string& dir, int64_t tp) {
    return cutcheck::write_split(cut, spec, dir, tp);
  };
  s.pieces = pieces_of;
  s.write = [](const Cut& cut, const ModelSpec& spec, const std::string& dir) { return cutcheck::write(cut, spec, dir); };
  s.print = [](const Program& p) { return cutcheck::print(p); };
  s.parse = [](const std::string& text) { return parse_and_verify(text, "roundtrip"); };
  s.cut_text = [](const Cut& cut) { return cut.str(); };
  s.parse_cut = [](const std::string& text) { return Cut::parse(text); };
  s.spec_text = [](const ModelSpec& spec) { return spec.to_json().dump(); };
  s.parse_spec = [](const std::string& text) { return ModelSpec::from_json(parse_json(text, "spec"), "spec"); };
  s.encode = [](const TensorMap& t) { return encode_safetensors(t); };
  s.decode = [](const std::string& bytes) {
    auto keep = std::make_shared<std::string>(bytes);
    return parse_safetensors(std::as_bytes(std::span(keep->data(), keep->size())), "roundtrip", keep).tensors;
  };
  s.cases = [](std::vector<CutKind> kinds) { return gen_case(std::move(kinds)); };
  s.split_cases = [] { return gen_split_case(); };
  s.weights = [](const Case& c) { return synthetic_weights(c.spec, c.weight_seed); };
  return s;
}

}  // namespace cutcheck
