#include "conform/backend_runner.h"

#include <fmt/format.h>

#include "author/author.h"
#include "program/folder.h"

namespace cutcheck {

BackendRunner::BackendRunner(Backend& backend, ModelSpec spec, fs::path weights, fs::path work)
    : backend_(backend), spec_(std::move(spec)), weights_(fs::absolute(weights)), work_(std::move(work)) {}

TensorMap BackendRunner::run(const Cut& cut, const TensorMap& inputs) {
  auto it = lowered_.find(cut);
  if (it == lowered_.end()) {
    const fs::path folder = work_ / fmt::format("cut{}", lowered_.size());
    Authored a = write(cut, spec_, weights_.string());
    ProgramFolder{a.program, a.manifest, a.text}.write(folder);
    it = lowered_.emplace(cut, backend_.lower(folder)).first;
  }
  return it->second->run(inputs);
}

}  // namespace cutcheck
