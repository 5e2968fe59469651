// Runs catalog properties with RapidCheck and reports each as a value: cases, result,
// time, and on failure the shrunk counterexample and the string that reproduces it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "properties/catalog.h"
#include "properties/rc_engine.h"

namespace cutcheck {

struct CheckOptions {
  int cases = 100;
  uint64_t seed = 0;       // RapidCheck's seed; the same seed generates the same cases
  bool shrink = true;
  std::string reproduce = {};  // RapidCheck's "reproduce=..." string of an earlier failure
};

struct CheckResult {
  std::string property;
  int cases = 0;           // cases that passed
  bool passed = false;
  double seconds = 0;
  std::string failure;         // what failed, after shrinking
  std::string counterexample;  // the shrunk case, printed
  std::string reproduce;       // RC_PARAMS value that replays this failure
  // With a backend as the subject (Subject::agreement), how its runs agreed when the
  // property passed: tolerant comparisons, the worst headroom among them and where; and
  // the cases the backend refused (exit 77), with the first reason.
  bool backend = false;
  int tolerant = 0;
  double headroom = 0;
  std::string worst;
  int unsupported = 0;
  std::string refusal;
  // "bitwise", "within tolerance", "unsupported" (every case refused) or "fails"; the
  // reference's properties pass bitwise or fail.
  std::string verdict() const;
};

CheckResult check(const Property& property, const Subject& subject, const CheckOptions& options);

}  // namespace cutcheck
