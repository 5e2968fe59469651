// Judging a tolerance as a classifier. Legitimate variants (harness/variants.h) and the
// oracle (Eigen, double) are correct backends: every case one of them fails is a false
// failure. The fault catalog's backends are wrong: every case one of them fails is a detection. Both run on the same
// generated cases, and each policy (the bound of a precision, a fixed preset) judges the
// same outputs. Sensitivity: the smallest relative perturbation x * (1 + d) of the logits,
// and of layer 0's output, that the policy catches in a case.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "conform/campaign.h"
#include "core/json.h"

namespace cutcheck {

struct ToleranceReportOptions {
  ConformOptions campaign;  // cases, seed, cut kinds, tp, spec and weights, shapes (its tolerance is unused)
  std::vector<Precision> precisions{Precision::f32, Precision::bf16, Precision::f16};
  int layer_cases = 40;  // cases whose layer-0 perturbation threshold is measured (each costs ~25 runs)
  // Cases the faults run on (the first ones), for detection rates; false failures need
  // many more cases than detection rates do.
  int fault_cases = 1 << 30;
  std::function<void(int done, int total)> progress;
};

struct PolicyFigures {
  Tolerance tolerance;
  // Backends correct under the policy's precision: cases failed, and the worst headroom
  // (|got - want| / allowed; above 1 fails).
  std::map<std::string, int> false_failures = {};
  std::map<std::string, double> headroom = {};
  std::map<std::string, double> worst_abs = {};  // the largest |got - want| of any output element
  std::string first_false_failure = {};  // the case and the failure, for a look
  // Wrong backends: cases failed.
  std::map<std::string, int> detected = {};
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
