#include "properties/agreement.h"

#include <fmt/format.h>
#include <rapidcheck.h>

#include "core/error.h"
#include "properties/compare.h"

namespace cutcheck {
namespace {

// Element-wise a + b of two bound tensors of one shape.
Tensor sum_of(const Tensor& a, const Tensor& b) {
  Tensor out = a;
  auto o = out.as_mut<float>();
  auto y = b.as<float>();
  for (size_t i = 0; i < o.size(); ++i) o[i] += y[i];
  return out;
}

}  // namespace

void Agreement::judge(const Side& a, const Side& b, const std::string& what) {
  if (!bitwise_difference(a.values, b.values)) return;
  Expected want{a.values, {}};
  for (const auto& [name, bound] : a.bounds) {
    auto other = b.bounds.find(name);
    if (other == b.bounds.end() || other->second.type() != bound.type())
      throw Error(fmt::format("{}: no matching bound for '{}' on both sides", what, name));
    want.bounds.emplace(name, sum_of(bound, other->second));
  }
  const Comparison cmp = compare(want, b.values, tolerance_);
  if (!cmp.ok) RC_FAIL(fmt::format("{}: not within the tolerance ({}): {}", what, tolerance_.str(), cmp.failure));
  ++tolerant_;
  for (const OutputError& e : cmp.outputs)
    if (worst_.empty() || e.headroom > headroom_) {
      headroom_ = e.headroom;
      worst_ = fmt::format("{}, '{}' (max_abs {:.3g})", what, e.name, e.max_abs);
    }
}

void Agreement::refused(const std::string& why) {
  if (refusals_++ == 0) refusal_ = why;
}

}  // namespace cutcheck
