#include "campaign/judge.h"

#include "core/safetensors.h"
#include "core/text.h"

namespace cutcheck {

void judge(Backend& backend, const Case& c, const Cut& cut, int64_t tp, const fs::path& folder, const TensorMap& in,
           const Expected& want, const Tolerance& tol, CaseResult& r, const fs::path& actual) {
  if (!backend.supports(cut, tp)) {
    r.verdict = Verdict::unsupported;
    r.failure = "the backend does not support this cut";
    return;
  }
  try {
    TensorMap got = backend.lower(folder)->run(in);
    if (!actual.empty()) write_safetensors(actual, got);
    const Expected blanked{blank_unattended(want.values, c), blank_unattended(want.bounds, c), want.spans};
    Comparison cmp = compare(blanked, blank_unattended(got, c), tol);
    r.errors = cmp.outputs;
    if (!cmp.ok) {
      r.verdict = Verdict::failed;
      r.failure = cmp.failure;
      // Values out of tolerance, or outputs that could not be compared at all.
      const bool comparable = got.size() == want.values.size() && cmp.outputs.size() == want.values.size();
      r.failure_type = comparable ? "mismatch" : "protocol";
    }
  } catch (const NotYet& e) {
    r.verdict = Verdict::unsupported;
    r.failure = clean_text(e.what());
  } catch (const BackendFailed& e) {
    r.verdict = Verdict::failed;
    r.failure = clean_text(e.what());  // it may quote what the backend wrote (tensor names, bytes)
    r.stderr_tail = e.stderr_tail;     // clean already (core/process)
    r.process_failure = e.process_failure;
    r.failure_type = e.type;
  } catch (const std::exception& e) {
    r.verdict = Verdict::failed;
    r.failure = clean_text(e.what());
    r.failure_type = "protocol";
  }
}

}  // namespace cutcheck
