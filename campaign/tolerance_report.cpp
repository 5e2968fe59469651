#include "campaign/tolerance_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <rapidcheck.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "campaign/case_files.h"
#include "campaign/case_generation.h"
#include "core/random.h"
#include "core/temp_folder.h"
#include "harness/folder.h"
#include "harness/runner.h"
#include "harness/variants.h"
#include "model/signature.h"
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
    FolderRun r = variant ? FolderRun::open_as(folder, *variant) : FolderRun::open_with_fault(folder, *fault);
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

// The position of each row the cut computes (its x rows, the cache rows it writes): one
// for decode, one per row for batch, consecutive from pos for prefill, 0 for forward;
// none for the embed and head pieces, which see no position.
std::vector<int64_t> row_positions(const Case& c) {
  const Part part = c.cut.part();
  if (part == Part::embed || part == Part::head) return {};
  switch (cut_family(c.cut.kind)) {
    case Family::decode: return {c.positions.at(0)};
    case Family::batch: return {c.positions.begin(), c.positions.end()};
    case Family::prefill: {
      std::vector<int64_t> out;
      for (int64_t r = 0; r < c.cut.rows; ++r) out.push_back(c.positions.at(0) + r);
      return out;
    }
    case Family::forward: return {0};
  }
  return {};
}

int bucket_of(int64_t position) {
  const std::vector<int64_t>& b = position_buckets();
  return int(std::upper_bound(b.begin(), b.end(), position) - b.begin()) - 1;
}

std::string bucket_name(int i) {
  const std::vector<int64_t>& b = position_buckets();
  if (size_t(i + 1) == b.size()) return fmt::format("{}+", b[size_t(i)]);
  if (b[size_t(i + 1)] - b[size_t(i)] == 1) return fmt::format("{}", b[size_t(i)]);
  return fmt::format("{}-{}", b[size_t(i)], b[size_t(i + 1)] - 1);
}

// The largest |got - want| per element over the legitimate outputs (0 where they all
// match the reference's bits, NaN where one of them is not finite where want is).
Tensor largest_error(const Tensor& want, const std::vector<const Tensor*>& got) {
  Tensor out({DType::f32, want.shape()});
  auto w = want.as<float>();
  auto e = out.as_mut<float>();
  for (const Tensor* g : got) {
    auto gv = g->as<float>();
    for (size_t i = 0; i < e.size(); ++i) {
      if (gv[i] == w[i] || (std::isnan(gv[i]) && std::isnan(w[i]))) continue;
      const double d = std::abs(double(gv[i]) - double(w[i]));  // NaN where one is NaN: as far as can be
      e[i] = std::isnan(d) ? INFINITY : std::max(e[i], float(d));
    }
  }
  return out;
}

// Sharpness of one output: per row at a known position, the smallest bound / error over
// the row's elements with an error (rows without one say nothing and are left out).
void add_sharpness(Sharpness& s, const std::string& output, const Tensor& bound, const Tensor& error,
                   const std::vector<std::pair<int64_t, int64_t>>& rows /* (first element, position) */, int64_t width) {
  auto b = bound.as<float>(), e = error.as<float>();
  for (const auto& [first, position] : rows) {
    double ratio = INFINITY;
    bool any = false;
    for (int64_t i = first; i < first + width; ++i) {
      if (!(e[size_t(i)] > 0)) continue;
      any = true;
      ratio = std::min(ratio, double(b[size_t(i)]) / e[size_t(i)]);
    }
    if (any) s[output][bucket_of(position)].push_back(ratio);
  }
}

// The rows of an output at known positions: logits and x by row (the prefill's logits
// are its last row), caches by the rows the case writes.
std::vector<std::pair<int64_t, int64_t>> output_rows(const Case& c, const std::string& name, const Shape& shape,
                                                     int64_t& width) {
  const std::vector<int64_t> at = row_positions(c);
  std::vector<std::pair<int64_t, int64_t>> out;
  if (at.empty()) return out;
  if (name == "logits" || name == "x") {
    width = shape.back();
    const int64_t rows = element_count(shape) / width;
    if (rows == 1) out.push_back({0, at.back()});
    else
      for (int64_t r = 0; r < rows && size_t(r) < at.size(); ++r) out.push_back({r * width, at[size_t(r)]});
    return out;
  }
  if (name.starts_with("k.") || name.starts_with("v.")) {
    const CacheShape cs = CacheShape::of(shape);
    width = cs.width;
    const bool per_row = cs.caches > 1 || cut_family(c.cut.kind) == Family::batch;
    for (size_t r = 0; r < at.size(); ++r) out.push_back({cs.at(per_row ? int64_t(r) : 0, at[r]), at[r]});
  }
  return out;
}

std::string output_class(const std::string& name) {
  if (name == "logits" || name == "x") return name;
  return name.starts_with("k.") || name.starts_with("v.") ? "kv" : "";
}

}  // namespace

const std::vector<int64_t>& position_buckets() {
  static const std::vector<int64_t> buckets{0, 1, 16, 64, 256, 1024, 4096};
  return buckets;
}

ToleranceReport tolerance_report(const ToleranceReportOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const ConformOptions& o = options.campaign;
  ToleranceReport report;
  for (const Tolerance& t : policies(options.precisions)) report.policies.push_back({t});

  std::vector<Judged> subjects{{"oracle (double)"}};
  for (const Variant& v : variants()) subjects.push_back({v.name, &v, nullptr});
  for (const std::string& name : options.faults) find_fault(name);  // an unknown name: an error naming the faults
  for (const Fault& f : fault_catalog())
    if (options.faults.empty() || std::ranges::count(options.faults, f.name)) subjects.push_back({f.name, nullptr, &f});
  auto legitimate = [](const Judged& s, const Tolerance& t) {
    if (!s.variant && !s.fault) return true;  // the oracle: nearer exact than any precision
    return s.variant ? s.variant->precision == t.precision : legitimate_fault(*s.fault, t.precision);
  };
  for (PolicyFigures& p : report.policies)
    for (const Judged& s : subjects) {
      if (legitimate(s, p.tolerance)) p.false_failures[s.name] = 0, p.headroom[s.name] = 0, p.worst_abs[s.name] = 0;
      else if (s.fault) p.faults[s.name] = {};
    }

  TempFolder temp("tolerance");
  const rc::Gen<Case> gen = gen_conform_case(o);
  int layer_cases = 0;
  for (int i = 0; i < o.cases; ++i) {
    if (!o.shard.takes(i)) continue;
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
      Expected e = reference.expect(c.cut, in, Tolerance::bound(p), c.tp);
      expected[p] = {blank_unattended(e.values, c), blank_unattended(e.bounds, c), e.spans};
    }
    const bool measure_layer = layer_cases < options.layer_cases && c.tp == 1 &&
                               (c.cut.part() == Part::whole || c.cut.part() == Part::layer);
    layer_cases += measure_layer;

    const bool faults = i < options.fault_cases;
    report.fault_cases += faults;
    std::map<std::string, TensorMap> got;
    std::map<std::string, std::string> threw;
    // The case's program as written, run as the faults run it (split over its chips): a
    // fault acted where its outputs differ from these, not merely from the unsplit reference's.
    std::optional<TensorMap> unfaulted;
    if (faults) unfaulted = blank_unattended(FolderRun::open(work / "program").run(in), c);
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
      // The legitimate variants of this precision (not the oracle): what a correct backend's
      // error is, per element, for the sharpness and for how far a fault moved an output.
      std::map<std::string, Tensor> legit_error;
      for (const auto& [name, w] : want.values) {
        if (w.dtype() != DType::f32) continue;
        std::vector<const Tensor*> outs;
        for (const Judged& s : subjects)
          if (s.variant && legitimate(s, p.tolerance) && got.count(s.name)) outs.push_back(&got.at(s.name).at(name));
        legit_error.emplace(name, largest_error(w, outs));
      }
      for (const Judged& s : subjects) {
        const bool legit = legitimate(s, p.tolerance);
        if (!legit && !s.fault) continue;  // a variant of another precision
        if (!got.count(s.name) && !threw.count(s.name)) continue;  // a fault past the fault cases
        if (!legit && !faults) continue;  // legitimate under another policy, judged there only
        std::string failure;
        Comparison cmp;
        if (threw.count(s.name)) {
          failure = "threw: " + threw.at(s.name);
        } else {
          cmp = compare(want, got.at(s.name), p.tolerance);
          if (!cmp.ok) failure = cmp.failure;
          if (legit)
            for (const OutputError& e : cmp.outputs) {
              if (e.headroom > p.headroom[s.name])
                p.headroom_at[s.name] = fmt::format("case {}, '{}'{}", i, e.name,
                                                    e.off_span_headroom == e.headroom ? " off its span" : "");
              p.headroom[s.name] = std::max(p.headroom[s.name], e.headroom);
              p.worst_abs[s.name] = std::max(p.worst_abs[s.name], e.max_abs);
            }
        }
        if (!legit) {
          FaultFigures& f = p.faults[s.name];
          const TensorMap* g = got.count(s.name) ? &got.at(s.name) : nullptr;
          bool acted = !g, far = false;
          for (const auto& [name, w] : want.values) {
            if (!g || g->at(name).same_bits(w)) continue;
            acted = acted || !g->at(name).same_bits(unfaulted->at(name));
            if (w.dtype() != DType::f32) continue;
            // How far the fault moved this output, against the farthest a correct backend did.
            const Tensor moved = largest_error(w, {&g->at(name)});
            auto fe = moved.as<float>(), le = legit_error.at(name).as<float>();
            double fault_max = 0, legit_max = 0;
            for (size_t k = 0; k < fe.size(); ++k) {
              fault_max = std::max(fault_max, double(fe[k]));
              legit_max = std::max(legit_max, double(le[k]));
            }
            far = far || fault_max > 10 * legit_max;
          }
          if (!acted) continue;
          ++f.acted;
          f.caught += !failure.empty();
          f.far += far;
          f.far_caught += far && !failure.empty();
          if (far && failure.empty()) f.far_missed.insert(int64_t(i));
          if (want.values.count("logits") && g) {
            Expected head;
            TensorMap head_got;
            for (const char* name : {"logits", "next"}) {
              head.values.insert_or_assign(name, want.values.at(name));
              if (want.bounds.count(name)) head.bounds.insert_or_assign(name, want.bounds.at(name));
              if (want.spans.count(name)) head.spans.insert_or_assign(name, want.spans.at(name));
              head_got.insert_or_assign(name, g->at(name));
            }
            const bool by_logits = !compare(head, head_got, p.tolerance).ok;
            ++f.with_logits;
            f.caught_by_logits += by_logits;
            if (c.k_scale == 1) {
              ++f.ordinary;
              f.ordinary_caught_by_logits += by_logits;
            }
          }
          continue;
        }
        if (failure.empty()) continue;
        p.false_failure_cases.insert(int64_t(i));
        if (p.false_failures[s.name]++ == 0 && p.first_false_failure.empty())
          p.first_false_failure = fmt::format("{} on case {}: {}: {}", s.name, i, c.str(), failure);
      }
      if (p.tolerance.bounded()) {
        for (const auto& [name, bound] : want.bounds) {
          size_t unbounded = 0;
          for (float b : bound.as<float>()) unbounded += !(b < INFINITY);
          p.unbounded_elements += unbounded;
          p.elements += size_t(bound.elements());
          if (name == "logits") {
            ++p.logit_cases;
            if (unbounded == size_t(bound.elements()) && p.unchecked_logit_cases++ == 0)
              p.first_unchecked = fmt::format("case {}: {}", i, c.str());
          }
          const std::string cls = output_class(name);
          if (cls.empty()) continue;
          int64_t width = 0;
          const auto rows = output_rows(c, name, bound.shape(), width);
          add_sharpness(p.sharpness, cls, bound, legit_error.at(name), rows, width);
          if (auto span = want.spans.find(name); span != want.spans.end()) {
            std::vector<Tensor> off;  // the legitimate variants' differences off the span
            for (const Judged& s : subjects)
              if (s.variant && legitimate(s, p.tolerance) && got.count(s.name))
                off.push_back(span->second.span->project_difference(got.at(s.name).at(name), want.values.at(name)));
            std::vector<const Tensor*> outs;
            for (const Tensor& t : off) outs.push_back(&t);
            const Tensor zero({DType::f32, bound.shape()});
            add_sharpness(p.sharpness, cls + " off span", span->second.bound, largest_error(zero, outs), rows, width);
          }
        }
      }
      p.logit_thresholds.push_back(logit_threshold(want, p.tolerance));
      if (measure_layer) p.layer_thresholds.push_back(layer_threshold(c, weights, in, want, p.tolerance));
    }
    ++report.cases;
    if (options.progress) options.progress(i + 1, o.cases);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

namespace {

std::string share(int n, int of) { return of ? fmt::format("{} of {} ({:.1f}%)", n, of, 100.0 * n / of) : "none"; }

Json sharpness_json(const Sharpness& s) {
  Json out = Json::object();
  for (const auto& [output, buckets] : s)
    for (const auto& [b, ratios] : buckets) {
      auto finite = [](double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); };
      out[output][bucket_name(b)] = {{"rows", ratios.size()},
                                     {"median", finite(percentile(ratios, 0.5))},
                                     {"p90", finite(percentile(ratios, 0.9))},
                                     {"least", finite(percentile(ratios, 0.0))}};
    }
  return out;
}

}  // namespace

std::string tolerance_report_text(const ToleranceReport& r) {
  std::string out = fmt::format("{} cases, in {:.1f} s\n", r.cases, r.seconds);
  for (const PolicyFigures& p : r.policies) {
    out += fmt::format("\n{}\n  false failures (cases a correct backend fails; headroom = worst |got - want| / allowed):\n",
                       p.tolerance.str());
    for (const auto& [name, n] : p.false_failures)
      out += fmt::format("    {:<24} {:>6} of {}   headroom {:.3g}{}   worst abs {:.3g}\n", name, n, r.cases,
                         p.headroom.at(name), p.headroom_at.count(name) ? " (" + p.headroom_at.at(name) + ")" : "",
                         p.worst_abs.at(name));
    out += fmt::format("  detections, of the cases a wrong backend changes an output in ({} cases ran the faults):\n"
                       "    {:<26} {:>22} {:>24} {:>24} {:>22}\n",
                       r.fault_cases, "fault", "caught", "by logits and next", "ordinary keys, so", "moved > 10x, caught");
    for (const auto& [name, f] : p.faults)
      out += fmt::format("    {:<26} {:>22} {:>24} {:>24} {:>22}\n", name, share(f.caught, f.acted),
                         share(f.caught_by_logits, f.with_logits), share(f.ordinary_caught_by_logits, f.ordinary),
                         share(f.far_caught, f.far));
    for (const auto& [name, f] : p.faults)
      if (!f.far_missed.empty())
        out += fmt::format("    {} moved an output > 10x and passed in case{} {}\n", name,
                           f.far_missed.size() > 1 ? "s" : "", fmt::join(f.far_missed, ", "));
    if (p.tolerance.bounded()) {
      out += fmt::format("  held: {} of {} elements have a finite bound; {} of {} cases with logits have none bounded "
                         "(not checked)\n",
                         p.elements - p.unbounded_elements, p.elements, p.unchecked_logit_cases, p.logit_cases);
      out += "  sharpness, bound / largest correct error at the tightest element of a row, by position: median, p90 (rows)\n";
      for (const auto& [output, buckets] : p.sharpness) {
        out += fmt::format("    {:<7}", output);
        for (const auto& [b, ratios] : buckets)
          out += fmt::format("  {}: {:.3g}, {:.3g} ({})", bucket_name(b), percentile(ratios, 0.5), percentile(ratios, 0.9),
                             ratios.size());
        out += "\n";
      }
    }
    out += fmt::format("  smallest detected perturbation d of outputs * (1 + d), median and worst over cases:\n"
                       "    logits           {:.3g}  {:.3g}\n    layer 0 output   {:.3g}  {:.3g}  ({} cases)\n",
                       percentile(p.logit_thresholds, 0.5), percentile(p.logit_thresholds, 1.0),
                       percentile(p.layer_thresholds, 0.5), percentile(p.layer_thresholds, 1.0),
                       p.layer_thresholds.size());
    if (!p.first_false_failure.empty()) {
      out += "  first false failure: " + p.first_false_failure + "\n";
      out += fmt::format("  cases with a false failure ({}): {}\n", p.false_failure_cases.size(),
                         fmt::join(p.false_failure_cases, ", "));
    }
    if (!p.first_unchecked.empty()) out += "  first case whose logits are not checked: " + p.first_unchecked + "\n";
  }
  return out;
}

Json tolerance_report_json(const ToleranceReport& r) {
  Json policies = Json::array();
  for (const PolicyFigures& p : r.policies) {
    auto finite = [](double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); };
    Json faults = Json::object();
    for (const auto& [name, f] : p.faults)
      faults[name] = {{"acted", f.acted},
                      {"caught", f.caught},
                      {"with_logits", f.with_logits},
                      {"caught_by_logits", f.caught_by_logits},
                      {"ordinary_keys", f.ordinary},
                      {"ordinary_caught_by_logits", f.ordinary_caught_by_logits},
                      {"moved_far", f.far},
                      {"moved_far_caught", f.far_caught},
                      {"moved_far_missed", f.far_missed}};
    policies.push_back({{"tolerance", p.tolerance.str()},
                        {"false_failures", p.false_failures},
                        {"headroom", p.headroom},
                        {"headroom_at", p.headroom_at},
                        {"worst_abs", p.worst_abs},
                        {"faults", faults},
                        {"first_false_failure", p.first_false_failure},
                        {"false_failure_cases", p.false_failure_cases},
                        {"first_unchecked", p.first_unchecked},
                        {"elements", p.elements},
                        {"unbounded_elements", p.unbounded_elements},
                        {"logit_cases", p.logit_cases},
                        {"unchecked_logit_cases", p.unchecked_logit_cases},
                        {"sharpness", sharpness_json(p.sharpness)},
                        {"logit_threshold", {{"median", finite(percentile(p.logit_thresholds, 0.5))},
                                             {"worst", finite(percentile(p.logit_thresholds, 1.0))}}},
                        {"layer_threshold", {{"median", finite(percentile(p.layer_thresholds, 0.5))},
                                             {"worst", finite(percentile(p.layer_thresholds, 1.0))},
                                             {"cases", p.layer_thresholds.size()}}}});
  }
  return {{"format", "cutcheck-tolerance-report-2"},
          {"cases", r.cases},
          {"fault_cases", r.fault_cases},
          {"seconds", r.seconds},
          {"policies", policies}};
}

}  // namespace cutcheck
