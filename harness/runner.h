// The reference interpreter as a CutRunner.
#pragma once

#include <memory>
#include <unordered_map>

#include "author/author.h"
#include "core/tensor.h"
#include "harness/cut_runner.h"
#include "model/cut.h"
#include "model/spec.h"
#include "reference/interpreter.h"

namespace cutcheck {

// Authors each cut once, parses its text back, plans it, and reuses the plan.
class ReferenceRunner : public CutRunner {
 public:
  ReferenceRunner(ModelSpec spec, TensorMap weights, AuthorOptions author = {}, RunOptions run = {});
  TensorMap run(const Cut& cut, const TensorMap& inputs) override;
  const ModelSpec& spec() const { return spec_; }

 private:
  ModelSpec spec_;
  TensorMap weights_;
  AuthorOptions author_;
  RunOptions options_;
  std::unordered_map<Cut, std::unique_ptr<Executable>, CutHash> plans_;
};

// The program of a cut as the interpreter runs it: authored, printed, parsed and verified.
Program authored_program(const Cut& cut, const ModelSpec& spec, const AuthorOptions& options = {});

}  // namespace cutcheck
