#include "backend/backend_subject.h"

#include <fmt/format.h>

#include "backend/backend_runner.h"
#include "backend/process_failure_stop.h"
#include "core/files.h"
#include "core/safetensors.h"
#include "core/temp_folder.h"
#include "model/sharding.h"
#include "model/weights.h"
#include "properties/choice.h"
#include "properties/generators.h"

namespace cutcheck {
namespace {

// A BackendRunner in a folder of its own, holding the weights it reads.
class FolderRunner : public CutRunner {
 public:
  FolderRunner(Backend& backend, const ModelSpec& spec, const TensorMap& weights, int64_t tp,
               const BackendSubjectOptions& o, std::shared_ptr<ProcessFailureGate> gate)
      : folder_(unique_folder(o.work, "runner.")), keep_(o.keep), gate_(std::move(gate)) {
    write_weights(folder_ / "weights", weights, spec);
    if (tp > 1) write_shards(folder_ / "weights", weights, spec, tp);
    runner_ = std::make_unique<BackendRunner>(backend, spec, folder_ / "weights", folder_, tp);
  }
  ~FolderRunner() override {
    runner_.reset();
    std::error_code ec;
    if (!keep_) fs::remove_all(folder_, ec);
  }
  // A kept runner (a reproducer's) keeps each run's inputs and outputs beside the programs.
  TensorMap run(const Cut& cut, const TensorMap& inputs) override {
    const fs::path run = folder_ / fmt::format("run-{}", runs_++);
    if (keep_) write_safetensors(run.string() + ".inputs.safetensors", inputs);
    TensorMap out = gate_->run([&] { return runner_->run(cut, inputs); });
    if (keep_) {
      write_safetensors(run.string() + ".outputs.safetensors", out);
      write_file_atomic(run.string() + ".cut", cut.str() + "\n");
    }
    return out;
  }

 private:
  fs::path folder_;
  bool keep_;
  std::shared_ptr<ProcessFailureGate> gate_;
  int runs_ = 0;
  std::unique_ptr<BackendRunner> runner_;
};

}  // namespace

Subject backend_subject(Backend& backend, const BackendSubjectOptions& o, std::shared_ptr<ProcessFailureGate>* gate_out) {
  Subject s = Subject::reference();
  s.tolerance = o.tolerance;
  s.agreement = std::make_shared<Agreement>(o.tolerance);
  s.agreement->backend_failure = [](const std::exception& e) { return dynamic_cast<const BackendFailed*>(&e) != nullptr; };
  fs::create_directories(o.work);
  auto gate = std::make_shared<ProcessFailureGate>(backend.name(), o.same_failure_limit);
  if (gate_out) *gate_out = gate;
  s.runner = [&backend, o, gate](const ModelSpec& spec, const TensorMap& weights) -> std::unique_ptr<CutRunner> {
    return std::make_unique<FolderRunner>(backend, spec, weights, 1, o, gate);
  };
  s.split_runner = [&backend, o, gate](const ModelSpec& spec, const TensorMap& weights,
                                       int64_t tp) -> std::unique_ptr<CutRunner> {
    return std::make_unique<FolderRunner>(backend, spec, weights, tp, o, gate);
  };
  std::vector<int64_t> widths;  // tp 1 splits nothing
  for (int64_t tp : o.tp)
    if (tp > 1 && !(o.spec && widths_unsplittable(*o.spec, tp))) widths.push_back(tp);
  if (o.spec) {
    const ModelSpec spec = *o.spec;
    if (widths.empty() && std::any_of(o.tp.begin(), o.tp.end(), [](int64_t tp) { return tp > 1; }))
      throw Error(fmt::format("--tp: no width given splits the spec ({})", spec.summary()));
    s.cases = [spec](std::vector<CutKind> kinds) { return gen_case_for(spec, std::move(kinds)); };
    s.split_cases = [spec, widths] {
      return rc::gen::exec([spec, widths] {
        Case c = *gen_case_for(spec, splitting_kinds());
        c.tp = *choice(widths);
        return c;
      });
    };
  } else {
    s.split_cases = [widths] {
      return rc::gen::exec([widths] {
        Case c = *gen_case(splitting_kinds(), 4);
        c.tp = *choice(widths);
        widen_for_tp(c.spec, c.tp);
        return c;
      });
    };
  }
  if (!o.weights.empty()) {
    auto given = std::make_shared<const TensorMap>(read_weights(fs::absolute(o.weights), *o.spec));
    s.weights = [given](const Case&) { return *given; };
  }
  return s;
}

}  // namespace cutcheck
