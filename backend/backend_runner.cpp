#include "backend/backend_runner.h"

#include <fmt/format.h>

#include "author/author.h"
#include "model/signature.h"
#include "program/folder.h"

namespace cutcheck {

BackendRunner::BackendRunner(Backend& backend, ModelSpec spec, fs::path weights, fs::path work, int64_t tp)
    : backend_(backend), spec_(std::move(spec)), weights_(fs::absolute(weights)), work_(std::move(work)), tp_(tp) {}

TensorMap BackendRunner::run(const Cut& cut, const TensorMap& inputs) {
  auto it = lowered_.find(cut);
  if (it == lowered_.end()) {
    const fs::path folder = work_ / fmt::format("cut{}", lowered_.size());
    write_cut_folder(cut, spec_, tp_, weights_, folder, false);
    it = lowered_.emplace(cut, backend_.lower(folder)).first;
  }
  TensorMap out = it->second->run(inputs);
  // The properties slice rows out of what comes back: outputs of another name or shape are
  // the backend's failure, said here, before anything reads past them.
  const CutSignature sig = signature(cut, spec_);
  for (const Port& port : sig.outputs) {
    auto got = out.find(port.name);
    if (got == out.end())
      throw BackendFailed(fmt::format("{}: the backend's outputs lack '{}'", cut.str(), port.name), "");
    if (got->second.type() != port.type)
      throw BackendFailed(fmt::format("{}: the backend's '{}' is {}, expected {}", cut.str(), port.name,
                                      got->second.type().str(), port.type.str()),
                          "");
  }
  if (out.size() != sig.outputs.size()) {
    for (const auto& [name, t] : out)
      if (!sig.output(name)) throw BackendFailed(fmt::format("{}: the backend wrote an unexpected '{}'", cut.str(), name), "");
  }
  return out;
}

}  // namespace cutcheck
