// Something that runs cuts: the reference interpreter, the oracle, or a backend under
// conformance. Generation, composition and the properties drive cuts through this one
// interface. (Only the model's types: the oracle implements it without linking the
// author or the interpreter.)
#pragma once

#include "core/tensor.h"
#include "model/cut.h"

namespace cutcheck {

class CutRunner {
 public:
  virtual ~CutRunner() = default;
  // Runs `cut` on named inputs (the cut's signature) and returns its named outputs.
  virtual TensorMap run(const Cut& cut, const TensorMap& inputs) = 0;
  // The same, on inputs the caller gives up: a runner may write outputs over them (the
  // reference updates kv caches in place). The same outputs as run().
  virtual TensorMap run_giving(const Cut& cut, TensorMap&& inputs) { return run(cut, inputs); }
  // The caller will not run `cut` again: a runner may free what it keeps for it (the
  // reference its plan). Generation calls it as its caches outgrow a capacity.
  virtual void forget(const Cut& /*cut*/) {}
};

}  // namespace cutcheck
