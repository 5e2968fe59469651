#include "properties/rc_engine.h"

#include <rapidcheck.h>
#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/TestListener.h>

#include <fmt/format.h>

#include <sstream>
#include <unordered_map>

#include "core/error.h"

namespace cutcheck {
namespace {

using Replay = std::unordered_map<std::string, rc::detail::Reproduce>;

class Silent : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

Replay decode(const std::string& text, int max_size) {
  Replay replay;
  try {
    replay = rc::detail::configFromString(text).reproduce;
  } catch (const std::exception& e) {
    throw Error(std::string("cannot read the reproduce string: ") + e.what());
  }
  // The string is input: a size outside what generation ever uses would build specs and
  // cuts no run could hold (or negative widths), so it is refused here, by name.
  for (const auto& [name, r] : replay)
    if (r.size < 0 || r.size > max_size)
      throw InputError(fmt::format("the reproduce string: property '{}': size {} is outside [0, {}]", name, r.size,
                                   max_size));
  return replay;
}

}  // namespace

std::vector<ReproduceEntry> read_reproduce(const std::string& text, int max_size) {
  std::vector<ReproduceEntry> out;
  for (const auto& [name, r] : decode(text, max_size)) out.push_back({name, r.size});
  return out;
}

RcOutcome run_property(const RcRun& run, const std::function<void()>& body) {
  rc::detail::TestMetadata metadata{run.name, run.description};
  rc::detail::TestParams params;
  params.maxSuccess = run.cases;
  params.seed = run.seed;
  params.disableShrinking = !run.shrink;
  const Replay replay = run.reproduce.empty() ? Replay{} : decode(run.reproduce, params.maxSize);
  Silent listener;
  auto result = rc::detail::checkProperty(rc::detail::toProperty(body), metadata, params, listener, replay);
  RcOutcome out;
  if (result.is<rc::detail::SuccessResult>()) {
    out.kind = RcOutcome::Kind::passed;
    out.cases = result.get<rc::detail::SuccessResult>().numSuccess;
  } else if (result.is<rc::detail::FailureResult>()) {
    const auto& failure = result.get<rc::detail::FailureResult>();
    out.kind = RcOutcome::Kind::failed;
    out.cases = failure.numSuccess;
    // RapidCheck prefixes "file:line:\nRC_FAIL(...)\n\n"; keep the message itself.
    out.message = failure.description;
    if (size_t at = out.message.rfind("\n\n"); at != std::string::npos) out.message = out.message.substr(at + 2);
    std::ostringstream example;
    for (const auto& [type, value] : failure.counterExample) example << value << "\n";
    out.counterexample = example.str();
    rc::detail::Configuration config;
    config.reproduce[run.name] = failure.reproduce;
    out.reproduce = rc::detail::configToMinimalString(config);
  } else if (result.is<rc::detail::GaveUpResult>()) {
    out.kind = RcOutcome::Kind::gave_up;
    out.cases = result.get<rc::detail::GaveUpResult>().numSuccess;
    out.message = result.get<rc::detail::GaveUpResult>().description;
  } else {
    out.message = result.get<rc::detail::Error>().description;
  }
  return out;
}

}  // namespace cutcheck
