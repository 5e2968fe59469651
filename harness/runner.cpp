#include "harness/runner.h"

#include "program/text.h"

namespace cutcheck {

Program authored_program(const Cut& cut, const ModelSpec& spec, const AuthorOptions& options) {
  return parse_and_verify(print(author_program(cut, spec, options)), cut.str());
}

ReferenceRunner::ReferenceRunner(ModelSpec spec, TensorMap weights, AuthorOptions author, RunOptions run)
    : spec_(std::move(spec)), weights_(std::move(weights)), author_(author), options_(run) {}

Executable& ReferenceRunner::plan(const Cut& cut) {
  auto it = plans_.find(cut);
  if (it == plans_.end())
    it = plans_.emplace(cut, std::make_unique<Executable>(authored_program(cut, spec_, author_), weights_, options_)).first;
  return *it->second;
}

TensorMap ReferenceRunner::run(const Cut& cut, const TensorMap& inputs) { return plan(cut).run(inputs); }

Expected ReferenceRunner::expect(const Cut& cut, const TensorMap& inputs, const Tolerance& tolerance) {
  Executable& e = plan(cut);
  Expected out{e.run(inputs), {}};
  if (tolerance.bounded())
    out.bounds = ErrorBounds(e.program(), [&](ValueId v) -> const Tensor& { return e.value(v); }, tolerance.model()).outputs();
  return out;
}

}  // namespace cutcheck
