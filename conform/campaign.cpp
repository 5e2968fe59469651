#include "conform/campaign.h"

#include <fmt/format.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "conform/bisect.h"
#include "conform/case_files.h"
#include "conform/case_pool.h"
#include "conform/process_failure_stop.h"
#include "conform/case_generation.h"
#include "conform/judge.h"
#include "conform/report.h"
#include "conform/reproducer.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/temp_folder.h"
#include "core/random.h"
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
  const Expected want = ReferenceRunner(c.spec, weights).expect(c.cut, in, o.tolerance);
  write_safetensors(work / "inputs.safetensors", in);
  write_safetensors(work / "expected.safetensors", want.values);
  if (!want.bounds.empty()) write_safetensors(work / "bounds.safetensors", want.bounds);
  judge(backend, c, c.cut, c.tp, work / "program", in, want, o.tolerance, r, work / "actual.safetensors");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

namespace {

using Clock = std::chrono::steady_clock;

// Case i of the campaign, as RapidCheck's Shrinkable: its value is the case, its shrinks
// smaller cases. A pure function of the seed and i (the same case run_property would draw
// from that seed), so every shard and worker sees the same case list, and a failure is
// shrunk from the case generated again. The campaign walks the shrinks itself, with the
// public API, rather than through run_property (properties/rc_engine.h), because it runs
// several candidates at once. RapidCheck is not thread-safe: only the thread that called
// conform() calls this.
rc::Shrinkable<Case> campaign_case(const rc::Gen<Case>& gen, const ConformOptions& o, int i) {
  rc::Random random(mix64(o.seed, uint64_t(i)));
  return rc::gen::exec([gen] { return *gen; })(random.split(), 0);  // gen sets its own size
}

// A case's result and the folder it ran in (kept while it may become a reproducer).
struct Evaluation {
  CaseResult result;
  fs::path work;
};

// Shrinks the failure of case `index` within the run and time budgets, in RapidCheck's
// order: the first failing shrink of the smallest failing case so far is taken, until no
// shrink fails. Up to `jobs` candidates run at once; runs are counted as if they ran one
// at a time, and a candidate run ahead of the one taken is forgotten, so the shrunk case
// and the count do not depend on jobs. A case is never run twice.
class Shrinker {
 public:
  Shrinker(CasePool& pool, const rc::Gen<Case>& gen, const ConformOptions& o, fs::path root)
      : pool_(pool), gen_(gen), o_(o), root_(std::move(root)) {}

  struct Outcome {
    Evaluation smallest;
    int runs = 0;
    bool out_of_time = false;
  };

  Outcome shrink(int index, const Evaluation& original, Clock::time_point deadline) {
    std::map<std::string, Evaluation> seen;  // every case run, by its JSON
    rc::Shrinkable<Case> best = campaign_case(gen_, o_, index);
    seen[key(original.result.c)] = original;
    Outcome out{original};
    rc::Seq<rc::Shrinkable<Case>> shrinks = best.shrinks();
    struct Candidate {
      rc::Shrinkable<Case> shrinkable;
      std::string key;
      bool known;
      std::optional<CasePool::Done> done = {};
    };
    while (true) {
      throw_if_interrupted();
      if (Clock::now() >= deadline) {
        out.out_of_time = true;
        break;
      }
      const int room = std::min(std::max(1, o_.jobs), o_.shrink_budget - out.runs);
      if (room <= 0) break;
      // The next candidates in order, as many needing a run as may run now; a known
      // failure ends the batch (nothing after it would be looked at).
      std::vector<Candidate> batch;
      int to_run = 0;
      bool last = false;
      while (to_run < room) {
        rc::Maybe<rc::Shrinkable<Case>> next = shrinks.next();
        if (!next) {
          last = true;
          break;
        }
        const Case c = next->value();
        auto it = seen.find(key(c));
        // A case met earlier in this batch runs once, as it would one at a time.
        const bool in_batch = std::any_of(batch.begin(), batch.end(), [&](const Candidate& b) { return b.key == key(c); });
        batch.push_back({*next, key(c), it != seen.end() || in_batch});
        if (!batch.back().known) {
          pool_.submit(int(batch.size() - 1), c, root_ / fmt::format("shrink-{}", count_++));
          ++to_run;
        } else if (it != seen.end() && it->second.result.verdict == Verdict::failed) {
          break;
        }
      }
      if (to_run > 0 && o_.on_shrink) o_.on_shrink({index, out.runs, o_.shrink_budget, out.smallest.result.c});
      for (int i = 0; i < to_run; ++i) {
        CasePool::Done d = pool_.next();
        if (d.interrupted || d.error) {  // the others stop as well; take them, then stop
          while (pool_.pending() > 0) pool_.next();
          if (d.error) std::rethrow_exception(d.error);
          throw Interrupted{d.interrupted};
        }
        batch[size_t(d.ticket)].done = std::move(d);
      }
      // Taken in order, as one run at a time would have taken them.
      int taken = -1;
      for (size_t i = 0; i < batch.size(); ++i) {
        Candidate& cand = batch[i];
        if (!cand.known) {
          ++out.runs;
          seen[cand.key] = {cand.done->result, cand.done->work};
        }
        if (seen.at(cand.key).result.verdict == Verdict::failed) {
          taken = int(i);
          break;
        }
      }
      for (size_t i = size_t(taken + 1); taken >= 0 && i < batch.size(); ++i)
        if (!batch[i].known) fs::remove_all(batch[i].done->work);  // ran ahead: forgotten
      if (taken >= 0) {
        best = batch[size_t(taken)].shrinkable;
        out.smallest = seen.at(batch[size_t(taken)].key);
        shrinks = best.shrinks();
      } else if (last) {
        break;
      }
    }
    for (auto& [k, e] : seen)
      if (e.work != out.smallest.work && e.work != original.work) fs::remove_all(e.work);
    return out;
  }

 private:
  static std::string key(const Case& c) { return c.to_json().dump(); }

  CasePool& pool_;
  const rc::Gen<Case>& gen_;
  const ConformOptions& o_;
  fs::path root_;
  int count_ = 0;
};

// Puts `r` into `results` in case order.
void insert_in_order(std::vector<CaseResult>& results, CaseResult r) {
  auto at = std::upper_bound(results.begin(), results.end(), r.index,
                             [](int index, const CaseResult& e) { return index < e.index; });
  results.insert(at, std::move(r));
}

}  // namespace

std::string same_process_failure(const std::vector<CaseResult>& results, int limit, const std::string& backend) {
  std::vector<RunFailure> first;
  for (const CaseResult& r : results)
    first.push_back({r.verdict == Verdict::failed ? r.process_failure : "", r.stderr_tail});
  return same_process_failure(first, limit, backend, "cases", "stopped without shrinking");
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
  const auto start = Clock::now();
  ConformReport report{backend.name(), o, utc_now(), host_name()};
  TempFolder temp("conform");
  const fs::path& root = temp.path();
  const rc::Gen<Case> gen = gen_conform_case(o);
  std::vector<int> mine;  // the cases this shard runs, in order
  for (int i = 0; i < o.cases; ++i)
    if (o.shard.takes(i)) mine.push_back(i);
  report.planned = int(mine.size());
  if (mine.empty())
    throw Error(fmt::format("shard {} of {} cases is empty: use at most as many shards as cases", o.shard.str(), o.cases));
  // Weights given with --weights are read once before any backend runs: a file cutcheck
  // cannot read (a dtype other than f32, a shape the spec does not have) is the user's error.
  if (!o.weights.empty()) {
    if (!o.spec) throw Error("--weights needs --spec");
    read_weights(fs::absolute(o.weights), *o.spec);
  }
  CasePool pool(backend, o, o.jobs);
  for (int i : mine) pool.submit(i, campaign_case(gen, o, i).value(), root / fmt::format("case-{}", i));

  // Every case runs before any failure is shrunk, so that a backend that fails everything
  // is found out first.
  std::map<int, fs::path> failed_folders;
  bool prefix_judged = false;
  while (pool.pending() > 0) {
    CasePool::Done d = pool.next();
    if (d.error) {  // cutcheck could not prepare a case: stop, and say why (never the backend's failure)
      pool.cancel();
      while (pool.pending() > 0) pool.next();
      std::rethrow_exception(d.error);
    }
    if (d.interrupted) {
      report.interrupted = d.interrupted;
      pool.cancel();
    }
    if (d.interrupted || !report.stopped.empty()) continue;  // past a stop: not reported (as with one job)
    d.result.index = d.ticket;
    if (d.result.verdict == Verdict::failed) failed_folders[d.ticket] = d.work;
    insert_in_order(report.results, std::move(d.result));
    // The stop rule looks at this shard's first cases once they are all in.
    const size_t limit = size_t(std::max(0, o.same_failure_limit));
    if (!prefix_judged && limit > 0 && report.results.size() >= std::min(limit, mine.size()) &&
        report.results[std::min(limit, mine.size()) - 1].index == mine[std::min(limit, mine.size()) - 1]) {
      prefix_judged = true;
      std::vector<CaseResult> first(report.results.begin(), report.results.begin() + std::min(limit, mine.size()));
      report.stopped = same_process_failure(first, o.same_failure_limit, backend.name());
      if (!report.stopped.empty()) {
        pool.cancel();
        report.results = first;
      }
    }
    if (o.on_case) o.on_case(report);
  }

  try {
    throw_if_interrupted();
    if (report.interrupted) throw Interrupted{report.interrupted};
    // The first failure of each cut kind is shrunk, bisected and kept.
    std::set<CutKind> kinds_failed;
    std::vector<const CaseResult*> firsts;
    for (const CaseResult& r : report.results)
      if (r.verdict == Verdict::failed && kinds_failed.insert(r.c.cut.kind).second) firsts.push_back(&r);
    Shrinker shrinker(pool, gen, o, root);
    for (const CaseResult* first : firsts) {
      const Evaluation original{*first, failed_folders.at(first->index)};
      Failure f{first->index, *first, *first};
      const double budget = o.shrink_seconds > 0 ? o.shrink_seconds : std::max(10.0, 10 * first->seconds);
      const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget));
      fs::path kept = original.work;
      bool out_of_time = false;
      if (o.shrink && report.stopped.empty()) {
        Shrinker::Outcome s = shrinker.shrink(first->index, original, deadline);
        f.shrunk = s.smallest.result;
        f.shrunk.index = first->index;
        f.shrink_runs = s.runs;
        kept = s.smallest.work;
        out_of_time = s.out_of_time || Clock::now() >= deadline;
      }
      if (!report.stopped.empty()) f.piece = "";  // not bisected either: it would only repeat the process failure
      else if (!o.shrink) f.piece = "not bisected: with --no-shrink the backend runs the cases only";
      else if (out_of_time) f.piece = "not bisected: the shrink time (--shrink-time) ran out";
      else {
        Bisection b = bisect(backend, f.shrunk.c, o, root / fmt::format("bisect-{}", first->index));
        f.piece = b.piece;
        f.value = b.value;
      }
      f.reproducer = reproducer_folder(o, first->index);
      f.command = fmt::format("{} --replay {}", o.replay_prefix, f.reproducer.string());
      write_reproducer(f, o, kept, backend.command());
      report.failures.push_back(std::move(f));
    }
    report.finished = true;
  } catch (const Interrupted& e) {
    report.interrupted = e.signal;  // the report keeps the cases that finished
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

}  // namespace cutcheck
