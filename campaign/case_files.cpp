#include "campaign/case_files.h"

#include <fmt/format.h>

#include "author/author.h"
#include "model/sharding.h"
#include "model/weights.h"
#include "program/folder.h"

namespace cutcheck {

void write_program(const Cut& cut, const ModelSpec& spec, int64_t tp, const fs::path& weights, const fs::path& folder) {
  write_cut_folder(cut, spec, tp, weights, folder);
}

std::pair<TensorMap, fs::path> case_weights(const Case& c, const ConformOptions& o, const fs::path& work) {
  if (!o.weights.empty()) {
    fs::path dir = fs::absolute(o.weights);
    TensorMap w = read_weights(dir, c.spec);
    if (c.tp > 1 && !fs::exists(dir / shard_file(c.tp, 0))) {
      // The user's folder is never written (it may be read-only, or shared): the split
      // reads a copy with its shards beside the case.
      dir = work / "weights";
      write_weights(dir, w, c.spec);
      write_shards(dir, w, c.spec, c.tp);
    }
    return {std::move(w), dir};
  }
  fs::path dir = work / "weights";
  TensorMap w = synthetic_weights(c.spec, c.weight_seed);
  write_weights(dir, w, c.spec);
  if (c.tp > 1) write_shards(dir, w, c.spec, c.tp);
  return {std::move(w), dir};
}

}  // namespace cutcheck
