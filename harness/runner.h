// The reference interpreter as a CutRunner.
#pragma once

#include <functional>
#include <memory>
#include <unordered_map>

#include "author/author.h"
#include "core/tensor.h"
#include "faults/catalog.h"
#include "model/cut_runner.h"
#include "harness/tolerance.h"
#include "model/cut.h"
#include "model/spec.h"
#include "reference/interpreter.h"

namespace cutcheck {

// A change made to each program of a cut (split `tp` ways) before it runs: a fault or a
// mutant, for testing the harness. An empty edit runs the programs as authored.
using ProgramEdit = std::function<Program(const Program& program, const Cut& cut, int64_t tp)>;

// The programs as `fault` leaves them: changed where it acts (Fault::acts_on), as
// authored elsewhere.
ProgramEdit with_fault(const Fault& fault, const ModelSpec& spec);

// Authors each cut once, parses its text back, plans it, and reuses the plan.
class ReferenceRunner : public CutRunner {
 public:
  ReferenceRunner(ModelSpec spec, TensorMap weights, ProgramEdit edit = {}, RunOptions run = {});
  TensorMap run(const Cut& cut, const TensorMap& inputs) override;
  TensorMap run_giving(const Cut& cut, TensorMap&& inputs) override;
  void forget(const Cut& cut) override { plans_.erase(cut); }
  // Runs `cut` and, under the bound policy, bounds every f32 output element: what a
  // backend running it over `chips` chips (tp) is judged against (harness/tolerance.h).
  Expected expect(const Cut& cut, const TensorMap& inputs, const Tolerance& tolerance, int64_t chips = 1);
  // Runs `cut` keeping every value until the cut runs again: what perturbed runs of its
  // program read (bound/perturbed_runs.h), for chains of cuts bounded together.
  const Executable& run_kept(const Cut& cut, const TensorMap& inputs);
  const ModelSpec& spec() const { return spec_; }

 private:
  ModelSpec spec_;
  TensorMap weights_;
  ProgramEdit edit_;
  RunOptions options_;
  std::unordered_map<Cut, std::unique_ptr<Executable>, CutHash> plans_;

  Executable& plan(const Cut& cut);
};

// Runs `program` (planned as `e`) on `inputs` and, under the bound policy, bounds every f32
// output element: what a backend running it over `chips` chips (tp) is judged against
// (harness/tolerance.h). The one place that runs the reference and then its bounds, for
// whole cuts, pieces and single ops alike.
Expected expect(Executable& e, const TensorMap& inputs, const Tolerance& tolerance, int64_t chips = 1);

// The program of a cut as the interpreter runs it: authored, printed, parsed and verified.
Program authored_program(const Cut& cut, const ModelSpec& spec);

}  // namespace cutcheck
