#include "harness/runner.h"

#include "program/text.h"

namespace cutcheck {

Program authored_program(const Cut& cut, const ModelSpec& spec) {
  return parse_and_verify(print(author_program(cut, spec)), cut.str());
}

ProgramEdit with_fault(const Fault& fault, const ModelSpec& spec) {
  return [&fault, spec](const Program& p, const Cut& cut, int64_t tp) {
    return fault.acts_on(cut, tp, spec) ? fault.apply(p) : p;
  };
}

ReferenceRunner::ReferenceRunner(ModelSpec spec, TensorMap weights, ProgramEdit edit, RunOptions run)
    : spec_(std::move(spec)), weights_(std::move(weights)), edit_(std::move(edit)), options_(run) {
  // The programs of one runner read the same weights: their transposed copies are shared.
  if (!options_.transposed) options_.transposed = std::make_shared<TransposedWeights>();
}

Executable& ReferenceRunner::plan(const Cut& cut) {
  auto it = plans_.find(cut);
  if (it == plans_.end()) {
    Program program = authored_program(cut, spec_);
    if (edit_) program = edit_(program, cut, 1);
    it = plans_.emplace(cut, std::make_unique<Executable>(std::move(program), weights_, options_)).first;
  }
  return *it->second;
}

TensorMap ReferenceRunner::run(const Cut& cut, const TensorMap& inputs) { return plan(cut).run(inputs); }
TensorMap ReferenceRunner::run_giving(const Cut& cut, TensorMap&& inputs) { return plan(cut).run(std::move(inputs)); }

Expected expect(Executable& e, const TensorMap& inputs, const Tolerance& tolerance, int64_t chips) {
  Expected out{e.run(inputs), {}};
  if (tolerance.bounded()) {
    BoundModel model = tolerance.model();
    model.chips = chips;
    const ErrorBounds bounds(e.program(), [&](ValueId v) -> const Tensor& { return e.value(v); }, model);
    out.bounds = bounds.outputs();
    out.spans = bounds.spans();
  }
  return out;
}

Expected ReferenceRunner::expect(const Cut& cut, const TensorMap& inputs, const Tolerance& tolerance, int64_t chips) {
  return cutcheck::expect(plan(cut), inputs, tolerance, chips);
}

const Executable& ReferenceRunner::run_kept(const Cut& cut, const TensorMap& inputs) {
  Executable& e = plan(cut);
  e.run(inputs);
  return e;
}

}  // namespace cutcheck
