// A tp split seen from outside: unsplit inputs go in and unsplit outputs come out, so a
// split run compares with an unsplit one directly. The kv caches are cut into each
// chip's kv heads on the way in and put back together on the way out; every other input
// goes to every chip, and every other output must come out of every chip the same.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "author/author.h"
#include "model/cut_runner.h"
#include "harness/runner.h"
#include "reference/interpreter.h"

namespace cutcheck {

// Per-chip inputs for the chips' programs: an input whose declared type is the unsplit
// one is given as it is; a cache whose kv-head dimension is 1/tp of the unsplit one gets
// the chip's slice. Throws InputError for anything else.
std::vector<TensorMap> shard_inputs(const TensorMap& unsplit, const std::vector<const Program*>& chips);

// The unsplit outputs: caches gathered from the chips, the rest from chip 0 after
// checking that every chip returned the same bits (an Error names the first that did not).
TensorMap gather_outputs(const std::vector<TensorMap>& chip_outputs, const TensorMap& unsplit_inputs);

// Runs cuts split over tp chips on the reference interpreter, authoring each chip's
// program once, with in-memory weight shards.
class SplitRunner : public CutRunner {
 public:
  SplitRunner(ModelSpec spec, TensorMap weights, int64_t tp, ProgramEdit edit = {});
  // With each chip's weights given (normally shard_weights of the unsplit ones).
  SplitRunner(ModelSpec spec, std::vector<TensorMap> shards, ProgramEdit edit = {});
  TensorMap run(const Cut& cut, const TensorMap& inputs) override;

 private:
  ModelSpec spec_;
  int64_t tp_;
  ProgramEdit edit_;
  std::vector<TensorMap> shards_;  // each chip's weights
  std::unordered_map<Cut, std::vector<std::unique_ptr<Executable>>, CutHash> plans_;
};

// Runs the chips of a split and returns the unsplit outputs.
TensorMap run_split(const std::vector<Executable*>& chips, const TensorMap& unsplit_inputs);

}  // namespace cutcheck
