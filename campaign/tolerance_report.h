// Judging a tolerance as a classifier. Legitimate variants (harness/variants.h) and the
// oracle (Eigen, double) are correct backends: every case one of them fails is a false
// failure. The fault catalog's backends are wrong: every case one of them fails, of those
// it changes an output in, is a detection. Both run on the same generated cases, and
// each policy (the bound of a precision, a fixed preset) judges the same outputs.
//
// Sharpness: per row of an output at a known position (a logits row, a layer's x row, a
// cache row a case writes), the bound divided by the largest error of the legitimate
// variants of the policy's precision, at the element where that is smallest (the inverse
// of their worst headroom): how much further a correct backend's error could go before
// it fails. Sensitivity: the smallest relative perturbation x * (1 + d) of the logits, and
// of layer 0's output, that the policy catches in a case.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "campaign/campaign.h"
#include "core/json.h"

namespace cutcheck {

struct ToleranceReportOptions {
  ConformOptions campaign;  // cases, seed, cut kinds, tp, spec and weights, shapes (its tolerance is unused)
  std::vector<Precision> precisions{Precision::f32, Precision::bf16, Precision::f16};
  int layer_cases = 40;  // cases whose layer-0 perturbation threshold is measured (each costs ~25 runs)
  // Cases the faults run on (the first ones), for detection rates; false failures need
  // many more cases than detection rates do.
  int fault_cases = 1 << 30;
  // The faults run (by name, faults/catalog.h); empty: the whole catalog.
  std::vector<std::string> faults;
  std::function<void(int done, int total)> progress;
};

// What a fault did, over the cases it changed an output in.
struct FaultFigures {
  int acted = 0, caught = 0;
  // Of the cases with logits: caught by the logits and `next` alone (not by caches or x).
  int with_logits = 0, caught_by_logits = 0;
  // Of those, the ones with ordinary keys (not scaled up).
  int ordinary = 0, ordinary_caught_by_logits = 0;
  // Cases where it moved an output more than 10 times as far as the largest error of any
  // legitimate variant of the policy's precision, and of those, the ones caught.
  int far = 0, far_caught = 0;
  std::set<int64_t> far_missed = {};  // those not caught (re-run one with --shard)
};

// Ratios by output ("logits", "x", "kv") and position bucket (position_buckets()).
using Sharpness = std::map<std::string, std::map<int, std::vector<double>>>;
// The buckets' lower ends: 0, 1, 16, 64, 256, 1024, 4096.
const std::vector<int64_t>& position_buckets();

struct PolicyFigures {
  Tolerance tolerance;
  // Backends correct under the policy's precision: cases failed, and the worst headroom
  // (|got - want| / allowed; above 1 fails).
  std::map<std::string, int> false_failures = {};
  std::map<std::string, double> headroom = {};
  std::map<std::string, std::string> headroom_at = {};  // where: "case 4956, 'x'" (re-run it with --shard)
  std::map<std::string, double> worst_abs = {};  // the largest |got - want| of any output element
  std::string first_false_failure = {};  // the case and the failure, for a look
  std::set<int64_t> false_failure_cases = {};  // the cases some correct backend fails (re-run one with --shard)
  std::string first_unchecked = {};      // the first case whose logits have no finite bound
  // Wrong backends.
  std::map<std::string, FaultFigures> faults = {};
  // Outputs held to nothing: elements without a finite bound, and cases whose logits had
  // none (not checked at all).
  size_t unbounded_elements = 0, elements = 0;
  int unchecked_logit_cases = 0, logit_cases = 0;
  Sharpness sharpness = {};
  // Per case, the smallest d for which outputs * (1 + d) fail (infinity: none up to 1).
  std::vector<double> logit_thresholds = {}, layer_thresholds = {};
};

struct ToleranceReport {
  int cases = 0, fault_cases = 0;
  std::vector<PolicyFigures> policies;
  double seconds = 0;
};

ToleranceReport tolerance_report(const ToleranceReportOptions& options);
std::string tolerance_report_text(const ToleranceReport& report);
Json tolerance_report_json(const ToleranceReport& report);

}  // namespace cutcheck
