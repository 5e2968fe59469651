#include "properties/check.h"

#include <chrono>

namespace cutcheck {

CheckResult check(const Property& property, const Subject& subject, const CheckOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  RcOutcome outcome = run_property({property.name, property.description, options.cases, options.seed, options.shrink,
                                    options.reproduce},
                                   [&] { property.body(subject); });
  CheckResult out;
  out.property = property.name;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.cases = outcome.cases;
  switch (outcome.kind) {
    case RcOutcome::Kind::passed: out.passed = true; break;
    case RcOutcome::Kind::failed: {
      out.failure = outcome.message;
      const std::string thrown = "Exception thrown with message:\n";
      if (out.failure.starts_with(thrown)) out.failure = "threw: " + out.failure.substr(thrown.size());
      out.counterexample = outcome.counterexample;
      out.reproduce = outcome.reproduce;
      break;
    }
    case RcOutcome::Kind::gave_up: out.failure = "gave up: " + outcome.message; break;
    case RcOutcome::Kind::error: out.failure = "error: " + outcome.message; break;
  }
  if (out.passed && out.cases == 0) {  // a property that ran no case proves nothing
    out.passed = false;
    out.failure = "no case ran";
  }
  return out;
}

}  // namespace cutcheck
