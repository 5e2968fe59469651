#include "campaign/campaign.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>

#include "backend/process_failure_stop.h"
#include "campaign/bisect.h"
#include "campaign/campaign_engine.h"
#include "campaign/case_files.h"
#include "campaign/case_generation.h"
#include "campaign/judge.h"
#include "campaign/reproducer.h"
#include "core/error.h"
#include "core/provenance.h"
#include "core/temp_folder.h"
#include "core/safetensors.h"
#include "harness/runner.h"
#include "model/weights.h"

namespace cutcheck {

int ConformReport::count(Verdict v) const {
  int n = 0;
  for (const CaseResult& r : results) n += r.verdict == v;
  return n;
}

bool ConformReport::passed() const { return count(Verdict::failed) == 0 && count(Verdict::passed) > 0; }

CaseResult run_case(Backend& backend, const Case& c, const ConformOptions& o, const fs::path& work) {
  const auto start = std::chrono::steady_clock::now();
  CaseResult r{c};
  // Preparing the case is cutcheck's work: an error there (weights that cannot be read, a
  // full disk) is the user's or cutcheck's and propagates; only the backend is judged.
  fs::create_directories(work);
  auto [weights, dir] = case_weights(c, o, work);
  write_program(c.cut, c.spec, c.tp, dir, work / "program");
  const TensorMap in = case_inputs(c);
  const Expected want = ReferenceRunner(c.spec, weights).expect(c.cut, in, o.tolerance, c.tp);
  write_safetensors(work / "inputs.safetensors", in);
  write_safetensors(work / "expected.safetensors", want.values);
  if (!want.bounds.empty()) write_safetensors(work / "bounds.safetensors", want.bounds);
  judge(backend, c, c.cut, c.tp, work / "program", in, want, o.tolerance, r, work / "actual.safetensors");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::string Shard::str() const { return fmt::format("{}/{}", index, count); }

Shard Shard::parse(const std::string& text) {
  Shard s;
  const size_t slash = text.find('/');
  auto number = [&](const std::string& part, int& out) {
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    return !part.empty() && ec == std::errc() && end == part.data() + part.size();
  };
  if (slash == std::string::npos || !number(text.substr(0, slash), s.index) || !number(text.substr(slash + 1), s.count) ||
      s.count < 1 || s.index < 1 || s.index > s.count)
    throw Error(fmt::format("--shard '{}': expected I/N, the I-th of N shards, 1 <= I <= N (1/4 ... 4/4)", text));
  return s;
}

fs::path reproducer_folder(const ConformOptions& o, int index) {
  // Absolute, so that the printed command works from anywhere.
  return fs::absolute(o.keep) / fmt::format("case-{}-seed-{}", index, o.seed);
}

ConformReport conform(Backend& backend, const ConformOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  ConformReport report;
  report.backend = backend.name();
  report.options = o;
  report.started = utc_now();
  report.host = host_name();
  TempFolder temp("conform");
  const fs::path& root = temp.path();
  CampaignPlan<Case, CaseResult> plan(gen_conform_case(o));
  plan.seed = o.seed;
  for (int i = 0; i < o.cases; ++i)
    if (o.shard.takes(i)) plan.cases.push_back(i);
  report.planned = int(plan.cases.size());
  if (plan.cases.empty())
    throw Error(fmt::format("shard {} of {} cases is empty: use at most as many shards as cases", o.shard.str(), o.cases));
  // Weights given with --weights are read once before any backend runs: a file cutcheck
  // cannot read (a dtype other than f32, a shape the spec does not have) is the user's error.
  if (!o.weights.empty()) {
    if (!o.spec) throw Error("--weights needs --spec");
    read_weights(fs::absolute(o.weights), *o.spec);
  }
  plan.jobs = o.jobs;
  plan.run = [&](const Case& c, const fs::path& work) { return run_case(backend, c, o, work); };
  plan.same_failure_limit = o.same_failure_limit;
  plan.who = backend_named(backend.name());
  plan.shrink = o.shrink;
  plan.shrink_budget = o.shrink_budget;
  plan.shrink_seconds = [&](const CaseResult& first) {
    return o.shrink_seconds > 0 ? o.shrink_seconds : std::max(10.0, 10 * first.seconds);
  };
  // The first failure of each cut kind is shrunk, bisected and kept.
  plan.group = [](const CaseResult& r) { return cut_kind_name(r.c.cut.kind); };
  plan.keep = [&](Failure& f, const fs::path& work, bool out_of_time) {
    if (!report.stopped.empty()) f.piece = "";  // not bisected either: it would only repeat the process failure
    else if (!o.shrink) f.piece = "not bisected: with --no-shrink the backend runs the cases only";
    else if (out_of_time) f.piece = "not bisected: the shrink time (--shrink-time) ran out";
    else {
      Bisection b = bisect(backend, f.shrunk.c, o, root / fmt::format("bisect-{}", f.index));
      f.piece = b.piece;
      f.value = b.value;
    }
    f.reproducer = reproducer_folder(o, f.index);
    f.command = fmt::format("{} --replay {}", o.replay_prefix, f.reproducer.string());
    write_reproducer(f, o, work, backend.command());
  };
  if (o.on_case) plan.on_case = [&] { o.on_case(report); };
  plan.on_shrink = o.on_shrink;
  run_campaign(plan, root, report);
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

}  // namespace cutcheck
