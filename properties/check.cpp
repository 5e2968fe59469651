#include "properties/check.h"

#include <rapidcheck.h>
#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/TestListener.h>

#include <fmt/format.h>

#include <chrono>
#include <sstream>

#include "core/error.h"

namespace cutcheck {
namespace {

class Silent : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

}  // namespace

std::unordered_map<std::string, rc::detail::Reproduce> read_reproduce(const std::string& text, int max_size) {
  std::unordered_map<std::string, rc::detail::Reproduce> replay;
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

CheckResult check(const Property& property, const Subject& subject, const CheckOptions& options) {
  rc::detail::TestMetadata metadata;
  metadata.id = property.name;
  metadata.description = property.description;
  rc::detail::TestParams params;
  params.maxSuccess = options.cases;
  params.seed = options.seed;
  params.disableShrinking = !options.shrink;
  std::unordered_map<std::string, rc::detail::Reproduce> replay;
  if (!options.reproduce.empty()) replay = read_reproduce(options.reproduce, params.maxSize);
  Silent listener;
  auto start = std::chrono::steady_clock::now();
  auto result = rc::detail::checkProperty(rc::detail::toProperty([&] { property.body(subject); }), metadata, params,
                                          listener, replay);
  CheckResult out;
  out.property = property.name;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result.is<rc::detail::SuccessResult>()) {
    out.passed = true;
    out.cases = result.get<rc::detail::SuccessResult>().numSuccess;
  } else if (result.is<rc::detail::FailureResult>()) {
    const auto& failure = result.get<rc::detail::FailureResult>();
    out.cases = failure.numSuccess;
    // RapidCheck prefixes "file:line:\nRC_FAIL(...)\n\n"; keep the message itself.
    out.failure = failure.description;
    if (size_t at = out.failure.rfind("\n\n"); at != std::string::npos) out.failure = out.failure.substr(at + 2);
    const std::string thrown = "Exception thrown with message:\n";
    if (out.failure.starts_with(thrown)) out.failure = "threw: " + out.failure.substr(thrown.size());
    std::ostringstream example;
    for (const auto& [type, value] : failure.counterExample) example << value << "\n";
    out.counterexample = example.str();
    rc::detail::Configuration config;
    config.reproduce[property.name] = failure.reproduce;
    out.reproduce = rc::detail::configToMinimalString(config);
  } else if (result.is<rc::detail::GaveUpResult>()) {
    out.cases = result.get<rc::detail::GaveUpResult>().numSuccess;
    out.failure = "gave up: " + result.get<rc::detail::GaveUpResult>().description;
  } else {
    out.failure = "error: " + result.get<rc::detail::Error>().description;
  }
  if (out.passed && out.cases == 0) {  // a property that ran no case proves nothing
    out.passed = false;
    out.failure = "no case ran";
  }
  return out;
}

}  // namespace cutcheck
