// The campaign engine, shared by every campaign whatever its case (`conform`: a cut on a
// backend; `conform-engine`: a model on an engine; `check`: a property, on the reference
// or a backend). Cases are drawn from a RapidCheck
// generator, case i as a pure function of the seed and i, so that every shard and worker
// sees the same case list; they run on `jobs` threads, each in a folder of its own, and
// their results come back in case order, so that nothing reported depends on `jobs`. A
// process under test that fails its first cases all the same way stops the campaign
// unshrunk (the stop rule, backend/process_failure_stop.h). Otherwise the first failure of
// each group is shrunk to the smallest case that still fails, within a run and a time
// budget, and kept by the campaign's own hook (its reproducer folder).
//
// RapidCheck's generation context is one per process: cases (and shrink candidates) are
// generated on the thread that runs the campaign only, never in the worker threads.
#pragma once

#include <fmt/format.h>
#include <rapidcheck.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "campaign/campaign_record.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/random.h"

namespace cutcheck {

// What a campaign of cases C with results R runs, and how it keeps what it finds.
template <class C, class R>
struct CampaignPlan {
  explicit CampaignPlan(rc::Gen<C> cases_from) : gen(std::move(cases_from)) {}
  // Cases given outright (case i is at(i)) rather than drawn: the engine has nothing to
  // shrink them to, so shrinking is off (`check`: a case is a property, which RapidCheck
  // shrinks within its own run).
  static CampaignPlan given(std::function<C(int i)> at) {
    CampaignPlan plan(rc::gen::just(C{}));
    plan.case_at = std::move(at);
    plan.shrink = false;
    return plan;
  }
  rc::Gen<C> gen;
  std::function<C(int i)> case_at;
  uint64_t seed = 1;
  std::vector<int> cases;  // the case numbers this run takes, in order
  int jobs = 1;            // cases (and shrink candidates) run at once
  // Runs one case in `work` (created by it; removed after unless the case failed). Called
  // from the worker threads, several at once: it must not generate. Throws Interrupted on
  // a signal, and cutcheck's own errors, which stop the campaign.
  std::function<R(const C& c, const fs::path& work)> run;
  // The stop rule: after how many first cases, and who is named ("the backend 'CMD'").
  int same_failure_limit = 3;
  std::string who;
  // Why the campaign stops after those first cases, or "" to go on. Unset: when all of them
  // failed with the same process failure (same_process_failure in campaign_record.h).
  std::function<std::string(const std::vector<R>& first)> stop_rule;
  // Shrinking: off, or within `shrink_budget` runs and shrink_seconds(original) of wall
  // time per failure; a candidate counts as failing when still_fails(original, candidate).
  bool shrink = true;
  int shrink_budget = 200;
  std::function<double(const R& original)> shrink_seconds;
  std::function<bool(const R& original, const R& candidate)> still_fails = [](const R&, const R& r) {
    return r.verdict == Verdict::failed;
  };
  // Failures are shrunk and kept per group: the first of each group (a cut kind; one group
  // when unset).
  std::function<std::string(const R&)> group;
  // Keeps a failure (its shrunk case run in `work`, or the original's folder when not
  // shrunk): sets f.reproducer and f.command, and whatever else the campaign reports of it
  // (the piece a bisection finds). `out_of_time`: the shrink's time ran out.
  std::function<void(CampaignFailure<R>& f, const fs::path& work, bool out_of_time)> keep;
  // Called on the campaign's thread, never two at once: after each finished case (the
  // record holds the finished cases in case order), and before each round of runs while
  // shrinking a failure.
  std::function<void()> on_case;
  std::function<void(const ShrinkStep<C>&)> on_shrink;
};

namespace campaign_detail {

using Clock = std::chrono::steady_clock;

// Case i of the campaign, as RapidCheck's Shrinkable: its value is the case, its shrinks
// smaller cases (the case run_property would draw from that seed). The campaign walks the
// shrinks itself, with the public API, because it runs several candidates at once.
template <class C>
rc::Shrinkable<C> campaign_case(const rc::Gen<C>& gen, uint64_t seed, int i) {
  rc::Random random(mix64(seed, uint64_t(i)));
  return rc::gen::exec([gen] { return *gen; })(random.split(), 0);  // gen sets its own size
}

// Runs cases on several threads; the caller takes the results as they finish, in any order.
template <class C, class R>
class CasePool {
 public:
  CasePool(const std::function<R(const C&, const fs::path&)>& run, int jobs) : run_(run) {
    for (int i = 0; i < std::max(1, jobs); ++i) threads_.emplace_back([this] { work_loop(); });
  }
  ~CasePool() {  // drops what has not started, and waits for what has
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
      tasks_.clear();
    }
    task_ready_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  CasePool(const CasePool&) = delete;
  CasePool& operator=(const CasePool&) = delete;

  struct Done {
    int ticket;
    R result;
    fs::path work;                  // kept when the case failed, removed otherwise
    int interrupted = 0;            // the signal that stopped the run; the result is then empty
    std::exception_ptr error = {};  // cutcheck's own error running the case; the result is then empty
  };

  // Runs `c` in `work` once a thread is free.
  void submit(int ticket, const C& c, const fs::path& work) {
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back({ticket, c, work});
      ++pending_;
    }
    task_ready_.notify_one();
  }
  // Blocks until a submitted case finishes; call only while pending() > 0.
  Done next() {
    std::unique_lock lock(mutex_);
    done_ready_.wait(lock, [this] { return !done_.empty(); });
    Done d = std::move(done_.front());
    done_.pop_front();
    --pending_;
    return d;
  }
  // Submitted and not yet taken by next().
  int pending() const {
    std::lock_guard lock(mutex_);
    return pending_;
  }
  // Drops the cases not started yet; they are no longer pending.
  void cancel() {
    std::lock_guard lock(mutex_);
    pending_ -= int(tasks_.size());
    tasks_.clear();
  }
  // Takes what is still running, for a campaign that stops.
  void drain() {
    cancel();
    while (pending() > 0) next();
  }

 private:
  struct Task {
    int ticket;
    C c;
    fs::path work;
  };

  void work_loop() {
    while (true) {
      Task task;
      {
        std::unique_lock lock(mutex_);
        task_ready_.wait(lock, [this] { return closing_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // closing
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      Done d{task.ticket, R{}, task.work};
      d.result.c = task.c;
      try {
        d.result = run_(task.c, task.work);
      } catch (const Interrupted& e) {
        d.interrupted = e.signal;
      } catch (...) {
        d.error = std::current_exception();
      }
      if (d.interrupted || d.error || d.result.verdict != Verdict::failed) {
        std::error_code ec;
        fs::remove_all(task.work, ec);
      }
      {
        std::lock_guard lock(mutex_);
        done_.push_back(std::move(d));
      }
      done_ready_.notify_one();
    }
  }

  const std::function<R(const C&, const fs::path&)>& run_;
  mutable std::mutex mutex_;
  std::condition_variable task_ready_, done_ready_;
  std::deque<Task> tasks_;
  std::deque<Done> done_;
  int pending_ = 0;
  bool closing_ = false;
  std::vector<std::thread> threads_;
};

// A case's result and the folder it ran in (kept while it may become a reproducer).
template <class R>
struct Evaluation {
  R result;
  fs::path work;
};

// Shrinks the failure of case `index` within the run and time budgets, in RapidCheck's
// order: the first failing shrink of the smallest failing case so far is taken, until no
// shrink fails. Up to `jobs` candidates run at once; runs are counted as if they ran one
// at a time, and a candidate run ahead of the one taken is forgotten, so the shrunk case
// and the count do not depend on jobs. A case is never run twice; a shrink the case's own
// rules refuse (its generation throws Error) is passed over.
template <class C, class R>
class Shrinker {
 public:
  Shrinker(CasePool<C, R>& pool, const CampaignPlan<C, R>& plan, fs::path root)
      : pool_(pool), plan_(plan), root_(std::move(root)) {}

  struct Outcome {
    Evaluation<R> smallest;
    int runs = 0;
    bool out_of_time = false;
  };

  Outcome shrink(int index, const Evaluation<R>& original, Clock::time_point deadline) {
    std::map<std::string, Evaluation<R>> seen;  // every case run, by its JSON
    rc::Shrinkable<C> best = campaign_case(plan_.gen, plan_.seed, index);
    seen[key(original.result.c)] = original;
    Outcome out{original};
    auto fails = [&](const R& r) { return plan_.still_fails(original.result, r); };
    rc::Seq<rc::Shrinkable<C>> shrinks = best.shrinks();
    struct Candidate {
      rc::Shrinkable<C> shrinkable;
      std::string key;
      bool known;
      std::optional<typename CasePool<C, R>::Done> done = {};
    };
    while (true) {
      throw_if_interrupted();
      if (Clock::now() >= deadline) {
        out.out_of_time = true;
        break;
      }
      const int room = std::min(std::max(1, plan_.jobs), plan_.shrink_budget - out.runs);
      if (room <= 0) break;
      // The next candidates in order, as many needing a run as may run now; a known
      // failure ends the batch (nothing after it would be looked at).
      std::vector<Candidate> batch;
      int to_run = 0;
      bool last = false;
      while (to_run < room) {
        rc::Maybe<rc::Shrinkable<C>> next = shrinks.next();
        if (!next) {
          last = true;
          break;
        }
        std::optional<C> c;
        try {
          c = next->value();
        } catch (const Error&) {
          continue;  // a shrink the case's rules refuse
        }
        const std::string k = key(*c);
        auto it = seen.find(k);
        // A case met earlier in this batch runs once, as it would one at a time.
        const bool in_batch = std::any_of(batch.begin(), batch.end(), [&](const Candidate& b) { return b.key == k; });
        batch.push_back({*next, k, it != seen.end() || in_batch});
        if (!batch.back().known) {
          pool_.submit(int(batch.size() - 1), *c, root_ / fmt::format("shrink-{}", count_++));
          ++to_run;
        } else if (it != seen.end() && fails(it->second.result)) {
          break;
        }
      }
      if (to_run > 0 && plan_.on_shrink) plan_.on_shrink({index, out.runs, plan_.shrink_budget, out.smallest.result.c});
      for (int i = 0; i < to_run; ++i) {
        typename CasePool<C, R>::Done d = pool_.next();
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
        if (fails(seen.at(cand.key).result)) {
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
  static std::string key(const C& c) { return c.to_json().dump(); }

  CasePool<C, R>& pool_;
  const CampaignPlan<C, R>& plan_;
  fs::path root_;
  int count_ = 0;
};

// Puts `r` into `results` in case order.
template <class R>
void insert_in_order(std::vector<R>& results, R r) {
  auto at = std::upper_bound(results.begin(), results.end(), r.index,
                             [](int index, const R& e) { return index < e.index; });
  results.insert(at, std::move(r));
}

}  // namespace campaign_detail

// Runs the plan's cases, then shrinks and keeps the first failure of each group, working
// under `root`; fills `record` as it goes. A signal (Interrupted) ends it with the cases
// finished so far (record.interrupted); cutcheck's own errors propagate.
template <class C, class R>
void run_campaign(const CampaignPlan<C, R>& plan, const fs::path& root, CampaignRecord<R>& record) {
  using namespace campaign_detail;
  CasePool<C, R> pool(plan.run, plan.jobs);
  // The cases past the first `limit` start once the stop rule has judged those: a process
  // under test that cannot run costs `limit` runs, not one more per job.
  const size_t limit = std::min(size_t(std::max(0, plan.same_failure_limit)), plan.cases.size());
  size_t submitted = 0;
  auto submit_up_to = [&](size_t n) {
    for (; submitted < n; ++submitted) {
      const int i = plan.cases[submitted];
      pool.submit(i, plan.case_at ? plan.case_at(i) : campaign_case(plan.gen, plan.seed, i).value(),
                  root / fmt::format("case-{}", i));
    }
  };
  submit_up_to(limit > 0 ? limit : plan.cases.size());

  // Every case runs before any failure is shrunk, so that a process under test that fails
  // everything is found out first.
  std::map<int, fs::path> failed_folders;
  bool prefix_judged = false;
  while (pool.pending() > 0) {
    typename CasePool<C, R>::Done d = pool.next();
    if (d.error) {  // cutcheck could not prepare or judge a case: stop, and say why (never the subject's failure)
      pool.drain();
      std::rethrow_exception(d.error);
    }
    if (d.interrupted) {
      record.interrupted = d.interrupted;
      pool.cancel();
    }
    if (d.interrupted || !record.stopped.empty()) continue;  // past a stop: not reported (as with one job)
    d.result.index = d.ticket;
    if (d.result.verdict == Verdict::failed) failed_folders[d.ticket] = d.work;
    insert_in_order(record.results, std::move(d.result));
    // The stop rule looks at the first cases once they are all in.
    if (!prefix_judged && limit > 0 && record.results.size() >= limit &&
        record.results[limit - 1].index == plan.cases[limit - 1]) {
      prefix_judged = true;
      std::vector<R> first(record.results.begin(), record.results.begin() + ptrdiff_t(limit));
      record.stopped =
          plan.stop_rule ? plan.stop_rule(first) : same_process_failure(first, plan.same_failure_limit, plan.who);
      if (!record.stopped.empty()) {
        pool.cancel();
        record.results = first;
      } else {
        submit_up_to(plan.cases.size());
      }
    }
    if (plan.on_case) plan.on_case();
  }

  try {
    throw_if_interrupted();
    if (record.interrupted) throw Interrupted{record.interrupted};
    std::set<std::string> groups_failed;
    std::vector<const R*> firsts;
    for (const R& r : record.results)
      if (r.verdict == Verdict::failed && groups_failed.insert(plan.group ? plan.group(r) : "").second)
        firsts.push_back(&r);
    Shrinker<C, R> shrinker(pool, plan, root);
    for (const R* first : firsts) {
      const Evaluation<R> original{*first, failed_folders.at(first->index)};
      CampaignFailure<R> f{first->index, *first, *first};
      fs::path kept = original.work;
      bool out_of_time = false;
      if (plan.shrink && record.stopped.empty()) {
        const double budget = plan.shrink_seconds(*first);
        const auto deadline =
            Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget));
        typename Shrinker<C, R>::Outcome s = shrinker.shrink(first->index, original, deadline);
        f.shrunk = s.smallest.result;
        f.shrunk.index = first->index;
        f.shrink_runs = s.runs;
        kept = s.smallest.work;
        out_of_time = s.out_of_time || Clock::now() >= deadline;
      }
      plan.keep(f, kept, out_of_time);
      record.failures.push_back(std::move(f));
    }
    record.finished = true;
  } catch (const Interrupted& e) {
    record.interrupted = e.signal;  // the record keeps the cases that finished
  }
}

}  // namespace cutcheck
