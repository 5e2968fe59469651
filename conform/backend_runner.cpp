#include "conform/backend_runner.h"

#include <fmt/format.h>

#include "author/author.h"
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
  return it->second->run(inputs);
}

}  // namespace cutcheck
