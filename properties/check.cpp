#include "properties/check.h"

#include <chrono>

#include "core/error.h"
#include "core/interrupt.h"

namespace cutcheck {

CheckResult check(const Property& property, const Subject& subject, const CheckOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Agreement* agreement = subject.agreement.get();
  if (agreement) agreement->clear();
  std::exception_ptr own_error;
  RcOutcome outcome = run_property({property.name, property.description, options.cases, options.seed, options.shrink,
                                    options.reproduce},
                                   [&] {
                                     throw_if_interrupted();  // RapidCheck would take Interrupted for a failure
                                     if (!agreement) return property.body(subject);
                                     try {
                                       property.body(subject);
                                     } catch (const NotYet& e) {  // the backend refused a cut this case needs
                                       agreement->refused(e.what());
                                     } catch (const Error& e) {
                                       if (!own_error && !agreement->backend_failure(e)) own_error = std::current_exception();
                                       throw;
                                     }
                                   });
  if (own_error) std::rethrow_exception(own_error);  // cutcheck's, not the property's
  throw_if_interrupted();  // a signal stopped the run, not the property
  CheckResult out;
  out.property = property.name;
  if (agreement) {
    out.backend = true;
    out.tolerant = agreement->tolerant();
    out.headroom = agreement->headroom();
    out.worst = agreement->worst();
    out.unsupported = agreement->refusals();
    out.refusal = agreement->refusal();
  }
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

std::string CheckResult::verdict() const {
  if (!passed) return "fails";
  if (backend && unsupported >= cases) return "unsupported";
  return tolerant > 0 ? "within tolerance" : "bitwise";
}

}  // namespace cutcheck
