// How two runs of a subject that should agree are judged, and what the judging found.
// The reference's properties demand equal bits. A backend's (`cutcheck check --backend`)
// may agree less tightly: each side of a comparison carries the reference's error bound
// of the cut it computes, and two runs that differ agree "within tolerance" when every
// element is within the sum of both sides' bounds (docs/properties.md says why the sum).
// Determinism stays exact (the catalog compares its runs bit for bit): the same run twice
// has no reason to differ at all.
#pragma once

#include <exception>
#include <functional>
#include <string>

#include "core/tensor.h"
#include "harness/tolerance.h"

namespace cutcheck {

// The outputs of one run, or a part of them (a row, some names), with the reference's
// bound of each f32 element beside them (empty where only bits are compared).
struct Side {
  TensorMap values;
  TensorMap bounds;
};

// The same part of a side's values and bounds: `pick` maps each tensor of both.
template <class Pick>
Side part_of(const Side& side, Pick pick) {
  Side out;
  for (const auto& [name, t] : side.values) out.values.emplace(name, pick(t));
  for (const auto& [name, t] : side.bounds) out.bounds.emplace(name, pick(t));
  return out;
}

class Agreement {
 public:
  explicit Agreement(Tolerance tolerance) : tolerance_(tolerance) {}
  const Tolerance& tolerance() const { return tolerance_; }

  // Equal bits pass; otherwise `a` and `b` within the sum of their bounds pass, and the
  // worst headroom is kept. Anything else fails the case (RC_FAIL), saying `what` differed.
  void judge(const Side& a, const Side& b, const std::string& what);
  // A case the backend refused (NotYet: exit 77, or "unsupported" from a server).
  void refused(const std::string& why);

  // What was found over the cases judged since the last clear().
  int tolerant() const { return tolerant_; }     // comparisons that needed the tolerance
  double headroom() const { return headroom_; }  // the worst |a - b| / allowed among them
  const std::string& worst() const { return worst_; }
  int refusals() const { return refusals_; }
  const std::string& refusal() const { return refusal_; }  // the first refusal's reason
  void clear() {
    tolerant_ = refusals_ = 0;
    headroom_ = 0;
    worst_.clear();
    refusal_.clear();
  }

  // Whether an error thrown by a case is the backend's failure (a crash, a timeout, a
  // broken protocol: the property fails) rather than cutcheck's own (a folder it cannot
  // write: the run stops, exit 2). Set by the backend subject.
  std::function<bool(const std::exception&)> backend_failure = [](const std::exception&) { return true; };

 private:
  Tolerance tolerance_;
  int tolerant_ = 0, refusals_ = 0;
  double headroom_ = 0;
  std::string worst_, refusal_;
};

}  // namespace cutcheck
