#include "harness/split.h"

#include <fmt/format.h>

#include "core/error.h"
#include "model/sharding.h"
#include "program/split.h"
#include "program/text.h"
#include "reference/chips.h"

namespace cutcheck {

std::vector<TensorMap> shard_inputs(const TensorMap& unsplit, const std::vector<const Program*>& chips) {
  const int64_t tp = int64_t(chips.size());
  std::vector<TensorMap> out(chips.size());
  for (size_t c = 0; c < chips.size(); ++c) {
    const Program& p = *chips[c];
    for (const InputDecl& in : p.inputs) {
      const std::string& name = p.name(in.value);
      const TensorType& want = p.type(in.value);
      auto it = unsplit.find(name);
      if (it == unsplit.end()) throw InputError(fmt::format("input '{}' was not given", name));
      const TensorType& have = it->second.type();
      if (have == want) {
        out[c].emplace(name, it->second);
        continue;
      }
      Shape sliced = have.shape;
      bool cache = sliced.size() >= 2 && sliced[sliced.size() - 2] % tp == 0;
      if (cache) sliced[sliced.size() - 2] /= tp;
      if (!cache || TensorType{have.dtype, sliced} != want)
        throw InputError(fmt::format("input '{}' is {}; chip {} of {} takes {} (the unsplit type, or a cache split by "
                                     "kv heads)", name, have.str(), c, tp, want.str()));
      out[c].emplace(name, shard_cache(it->second, tp, int64_t(c)));
    }
  }
  return out;
}

TensorMap gather_outputs(const std::vector<TensorMap>& chip_outputs, const TensorMap& unsplit_inputs) {
  TensorMap out;
  for (const auto& [name, first] : chip_outputs.at(0)) {
    std::vector<Tensor> parts;
    for (size_t c = 0; c < chip_outputs.size(); ++c) {
      auto it = chip_outputs[c].find(name);
      if (it == chip_outputs[c].end()) throw Error(fmt::format("chip {} returned no '{}'", c, name));
      parts.push_back(it->second);
    }
    auto in = unsplit_inputs.find(name);
    if (in != unsplit_inputs.end() && in->second.type() != first.type()) {  // a cache the chips hold slices of
      out.emplace(name, gather_cache(parts));
      continue;
    }
    for (size_t c = 1; c < parts.size(); ++c)
      if (!parts[c].same_bits(first))
        throw Error(fmt::format("chips 0 and {} disagree on '{}', which every chip should compute the same", c, name));
    out.emplace(name, first);
  }
  return out;
}

TensorMap run_split(const std::vector<Executable*>& chips, const TensorMap& unsplit_inputs) {
  std::vector<const Program*> programs;
  for (const Executable* e : chips) programs.push_back(&e->program());
  return gather_outputs(run_chips(chips, shard_inputs(unsplit_inputs, programs)), unsplit_inputs);
}

SplitRunner::SplitRunner(ModelSpec spec, TensorMap weights, int64_t tp, ProgramEdit edit)
    : spec_(std::move(spec)), tp_(tp), edit_(std::move(edit)) {
  if (auto why = widths_unsplittable(spec_, tp_)) throw NotYet(fmt::format("cannot split {}: {}", spec_.name, *why));
  for (int64_t c = 0; c < tp_; ++c) shards_.push_back(shard_weights(weights, spec_, tp_, c));
}

SplitRunner::SplitRunner(ModelSpec spec, std::vector<TensorMap> shards, ProgramEdit edit)
    : spec_(std::move(spec)), tp_(int64_t(shards.size())), edit_(std::move(edit)), shards_(std::move(shards)) {
  if (auto why = widths_unsplittable(spec_, tp_)) throw NotYet(fmt::format("cannot split {}: {}", spec_.name, *why));
}

TensorMap SplitRunner::run(const Cut& cut, const TensorMap& inputs) {
  auto it = plans_.find(cut);
  if (it == plans_.end()) {
    std::vector<std::unique_ptr<Executable>> chips;
    std::vector<const Program*> programs;
    for (int64_t c = 0; c < tp_; ++c) {
      std::string text = print(author_chip_program(cut, spec_, tp_, c));
      Program program = parse_and_verify(text, fmt::format("{} chip {}", cut.str(), c));
      if (edit_) program = edit_(program, cut, tp_);
      chips.push_back(std::make_unique<Executable>(std::move(program), shards_[size_t(c)]));
      programs.push_back(&chips.back()->program());
    }
    verify_split(programs, cut.str());
    it = plans_.emplace(cut, std::move(chips)).first;
  }
  std::vector<Executable*> chips;
  for (auto& e : it->second) chips.push_back(e.get());
  return run_split(chips, inputs);
}

}  // namespace cutcheck
