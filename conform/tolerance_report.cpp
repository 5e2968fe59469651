#include "conform/tolerance_report.h"

#include <fmt/format.h>
#include <rapidcheck.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "conform/case_files.h"
#include "conform/case_generation.h"
#include "core/random.h"
#include "core/temp_folder.h"
#include "harness/folder.h"
#include "harness/runner.h"
#include "harness/variants.h"
#include "oracle/oracle.h"

namespace cutcheck {
namespace {

// A backend of the report: a legitimate variant or a fault, run in process on the
// case's program folder, or the oracle (no variant, no fault), run on the cut.
struct Judged {
  std::string name;
  const Variant* variant = nullptr;
  const Fault* fault = nullptr;
  TensorMap run(const Case& c, const TensorMap& weights, const fs::path& folder, const TensorMap& in) const {
    if (!variant && !fault) return Oracle(c.spec, weights).run(c.cut, in);
    FolderRun r = variant ? FolderRun::open(folder, variant->run) : FolderRun::open_with_fault(folder, *fault);
    return r.run(in);
  }
};

// The fault that is a precision, not a bug: legitimate where that precision is declared.
bool legitimate_fault(const Fault& f, Precision p) { return f.precision_only && p == Precision::bf16; }

bool legitimate_anywhere(const Fault& f, const std::vector<Precision>& precisions) {
  for (Precision p : precisions)
    if (legitimate_fault(f, p)) return true;
  return false;
}

// The policies judged: the bound of each precision asked for, and the fixed preset that
// stood for it before (f32's, and bf16's for the narrower precisions).
std::vector<Tolerance> policies(const std::vector<Precision>& precisions) {
  std::vector<Tolerance> out;
  for (Precision p : precisions) out.push_back(Tolerance::bound(p));
  for (Precision p : precisions)
    if (p == Precision::f32) out.push_back(Tolerance::fixed_f32());
    else if (p == Precision::bf16) out.push_back(Tolerance::fixed_bf16());
  return out;
}

// The smallest d for which the logits times (1 + d) fail the policy: an element fails
// once |x| d exceeds what it is allowed, and a fixed policy's NMSE once d^2 does.
double logit_threshold(const Expected& want, const Tolerance& t) {
  auto it = want.values.find("logits");
  if (it == want.values.end()) return NAN;
  auto x = it->second.as<float>();
  const Tensor* b = t.bounded() ? &want.bounds.at("logits") : nullptr;
  double d = t.bounded() ? INFINITY : std::sqrt(t.nmse);
  for (size_t i = 0; i < x.size(); ++i)
    if (std::isfinite(x[i]) && x[i] != 0)
      d = std::min(d, t.allowed(x[i], b ? double(b->as<float>()[i]) : 0) / std::abs(double(x[i])));
  return d;
}

// The program with the value `name` multiplied by `factor` for every later use.
Program scaled(Program p, ValueId v, double factor) {
  auto at = std::find_if(p.ops.begin(), p.ops.end(), [&](const Operation& op) { return op.result == v; });
  const TensorType type = p.type(v);
  const ValueId c = ValueId(p.values.size()), y = c + 1;
  p.values.push_back({p.name(v) + ".factor", type});
  p.values.push_back({p.name(v) + ".scaled", type});
  for (auto op = at + 1; op != p.ops.end(); ++op) std::replace(op->operands.begin(), op->operands.end(), v, y);
  for (OutputDecl& o : p.outputs)
    if (o.value == v) o.value = y;
  Operation constant{OpKind::constant, c, {}, {number(factor)}, "", {}};
  Operation multiply{OpKind::multiply, y, {v, c}, {}, "", {}};
  p.ops.insert(at + 1, {constant, multiply});
  return p;
}

// The smallest d, to a factor of about 1.02, for which layer 0's output times (1 + d)
// fails the policy; infinity when d = 1 passes.
double layer_threshold(const Case& c, const TensorMap& weights, const TensorMap& in, const Expected& want,
                       const Tolerance& t) {
  const std::string name = fmt::format("l{}.x", c.cut.part() == Part::layer ? c.cut.layer : 0);
  const Program base = authored_program(c.cut, c.spec);
  auto v = base.find(name);
  if (!v) return NAN;
  auto fails = [&](double d) {
    Executable e(scaled(base, *v, 1 + d), weights);
    return !compare(want, blank_unattended(e.run(in), c), t).ok;
  };
  double lo = 1e-10, hi = 1;
  if (!fails(hi)) return INFINITY;
  if (fails(lo)) return lo;
  for (int i = 0; i < 20; ++i) {
    const double mid = std::sqrt(lo * hi);
    (fails(mid) ? hi : lo) = mid;
  }
  return hi;
}

double percentile(std::vector<double> v, double q) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1) + 0.5)];
}

}  // namespace

ToleranceReport tolerance_report(const ToleranceReportOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const ConformOptions& o = options.campaign;
  ToleranceReport report;
  for (const Tolerance& t : policies(options.precisions)) report.policies.push_back({t});

  std::vector<Judged> subjects{{"oracle (double)"}};
  for (const Variant& v : variants()) subjects.push_back({v.name, &v, nullptr});
  for (const Fault& f : fault_catalog()) subjects.push_back({f.name, nullptr, &f});
  auto legitimate = [](const Judged& s, const Tolerance& t) {
    if (!s.variant && !s.fault) return true;  // the oracle: nearer exact than any precision
    return s.variant ? s.variant->precision == t.precision : legitimate_fault(*s.fault, t.precision);
  };
  for (PolicyFigures& p : report.policies)
    for (const Judged& s : subjects) {
      if (legitimate(s, p.tolerance)) p.false_failures[s.name] = 0, p.headroom[s.name] = 0, p.worst_abs[s.name] = 0;
      else if (s.fault) p.detected[s.name] = 0;
    }

  TempFolder temp("tolerance");
  const rc::Gen<Case> gen = gen_conform_case(o);
  int layer_cases = 0;
  for (int i = 0; i < o.cases; ++i) {
    const Case c = gen(rc::Random(mix64(o.seed, uint64_t(i))), 100).value();
    const fs::path work = temp.path() / "case";
    fs::remove_all(work);
    fs::create_directories(work);
    auto [weights, dir] = case_weights(c, o, work);
    write_program(c.cut, c.spec, c.tp, dir, work / "program");
    const TensorMap in = case_inputs(c);
    ReferenceRunner reference(c.spec, weights);
    std::map<Precision, Expected> expected;  // blanked past the attended cache rows, as conformance compares
    for (Precision p : options.precisions) {
      Expected e = reference.expect(c.cut, in, Tolerance::bound(p));
      expected[p] = {blank_unattended(e.values, c), blank_unattended(e.bounds, c)};
    }
    const bool measure_layer = layer_cases < options.layer_cases && c.tp == 1 &&
                               (c.cut.part() == Part::whole || c.cut.part() == Part::layer);
    layer_cases += measure_layer;

    const bool faults = i < options.fault_cases;
    report.fault_cases += faults;
    std::map<std::string, TensorMap> got;
    std::map<std::string, std::string> threw;
    for (const Judged& s : subjects) {
      if (s.fault && !faults && !legitimate_anywhere(*s.fault, options.precisions)) continue;
      if (s.variant && std::find(options.precisions.begin(), options.precisions.end(), s.variant->precision) ==
                           options.precisions.end())
        continue;  // judged by no policy asked for
      try {
        got[s.name] = blank_unattended(s.run(c, weights, work / "program", in), c);
      } catch (const std::exception& e) {
        threw[s.name] = e.what();
      }
    }
    for (PolicyFigures& p : report.policies) {
      const Expected& want = expected.at(p.tolerance.precision);
      for (const Judged& s : subjects) {
        const bool legit = legitimate(s, p.tolerance);
        if (!legit && !s.fault) continue;  // a variant of another precision
        if (!got.count(s.name) && !threw.count(s.name)) continue;  // a fault past the fault cases
        if (!legit && !faults) continue;  // legitimate under another policy, judged there only
        std::string failure;
        if (threw.count(s.name)) {
          failure = "threw: " + threw.at(s.name);
        } else {
          const Comparison cmp = compare(want, got.at(s.name), p.tolerance);
          if (!cmp.ok) failure = cmp.failure;
          if (legit)
            for (const OutputError& e : cmp.outputs) {
              p.headroom[s.name] = std::max(p.headroom[s.name], e.headroom);
              p.worst_abs[s.name] = std::max(p.worst_abs[s.name], e.max_abs);
            }
        }
        if (failure.empty()) continue;
        if (!legit) {
          ++p.detected[s.name];
        } else if (p.false_failures[s.name]++ == 0 && p.first_false_failure.empty()) {
          p.first_false_failure = fmt::format("{} on case {}: {}: {}", s.name, i, c.str(), failure);
        }
      }
      p.logit_thresholds.push_back(logit_threshold(want, p.tolerance));
      if (measure_layer) p.layer_thresholds.push_back(layer_threshold(c, weights, in, want, p.tolerance));
    }
    report.cases = i + 1;
    if (options.progress) options.progress(i + 1, o.cases);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::string tolerance_report_text(const ToleranceReport& r) {
  std::string out = fmt::format("{} cases, in {:.1f} s\n", r.cases, r.seconds);
  for (const PolicyFigures& p : r.policies) {
    out += fmt::format("\n{}\n  false failures (cases a correct backend fails; headroom = worst |got - want| / allowed):\n",
                       p.tolerance.str());
    for (const auto& [name, n] : p.false_failures)
      out += fmt::format("    {:<24} {:>6} of {}   headroom {:.3g}   worst abs {:.3g}\n", name, n, r.cases,
                         p.headroom.at(name), p.worst_abs.at(name));
    out += "  detections (cases a wrong backend fails):\n";
    for (const auto& [name, n] : p.detected) out += fmt::format("    {:<24} {:>6} of {}\n", name, n, r.fault_cases);
    out += fmt::format("  smallest detected perturbation d of outputs * (1 + d), median and worst over cases:\n"
                       "    logits           {:.3g}  {:.3g}\n    layer 0 output   {:.3g}  {:.3g}  ({} cases)\n",
                       percentile(p.logit_thresholds, 0.5), percentile(p.logit_thresholds, 1.0),
                       percentile(p.layer_thresholds, 0.5), percentile(p.layer_thresholds, 1.0),
                       p.layer_thresholds.size());
    if (!p.first_false_failure.empty()) out += "  first false failure: " + p.first_false_failure + "\n";
  }
  return out;
}

Json tolerance_report_json(const ToleranceReport& r) {
  Json policies = Json::array();
  for (const PolicyFigures& p : r.policies) {
    auto finite = [](double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); };
    policies.push_back({{"tolerance", p.tolerance.str()},
                        {"false_failures", p.false_failures},
                        {"headroom", p.headroom},
                        {"worst_abs", p.worst_abs},
                        {"detected", p.detected},
                        {"first_false_failure", p.first_false_failure},
                        {"logit_threshold", {{"median", finite(percentile(p.logit_thresholds, 0.5))},
                                             {"worst", finite(percentile(p.logit_thresholds, 1.0))}}},
                        {"layer_threshold", {{"median", finite(percentile(p.layer_thresholds, 0.5))},
                                             {"worst", finite(percentile(p.layer_thresholds, 1.0))},
                                             {"cases", p.layer_thresholds.size()}}}});
  }
  return {{"format", "cutcheck-tolerance-report-1"},
          {"cases", r.cases},
          {"fault_cases", r.fault_cases},
          {"seconds", r.seconds},
          {"policies", policies}};
}

}  // namespace cutcheck
