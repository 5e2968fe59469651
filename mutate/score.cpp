#include "mutate/score.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>

#include "author/author.h"
#include "campaign/campaign.h"
#include "core/interrupt.h"
#include "core/random.h"
#include "core/temp_folder.h"
#include "harness/split.h"
#include "model/sharding.h"
#include "model/weights.h"
#include "program/folder.h"
#include "properties/catalog.h"
#include "properties/check.h"
#include "properties/subject.h"
#include "reference/interpreter.h"

namespace cutcheck {
namespace {

using Clock = std::chrono::steady_clock;

// The reference with the mutant's edit made to the programs of its cut kind.
ProgramEdit edit_of(const Mutant& m) {
  return [&m](const Program& p, const Cut& cut, int64_t) { return cut.kind == m.kind ? m.apply(p) : p; };
}

// The mutant as a backend: it reads the folder's programs and runs them, edited where the
// cut the manifest records is of the mutant's kind.
class MutantBackend : public Backend {
 public:
  explicit MutantBackend(const Mutant& m) : m_(m) {}
  std::string name() const override { return m_.str(); }
  bool supports(const Cut&, int64_t) const override { return true; }
  std::unique_ptr<Lowered> lower(const fs::path& folder) override {
    std::vector<fs::path> folders = chip_folders(folder);
    if (folders.empty()) folders.push_back(folder);
    auto run = std::make_unique<Run>();
    for (const fs::path& f : folders) {
      ProgramFolder pf = ProgramFolder::read(f);
      const Cut cut = Cut::parse(pf.manifest.about.at("cut").get<std::string>());
      Program p = cut.kind == m_.kind ? m_.apply(pf.program) : pf.program;
      run->chips.push_back(std::make_unique<Executable>(std::move(p), load_weights(pf.manifest, f)));
    }
    return run;
  }

 private:
  struct Run : Lowered {
    std::vector<std::unique_ptr<Executable>> chips;
    TensorMap run(const TensorMap& in) override {
      if (chips.size() == 1 && !chips[0]->program().replica) return chips[0]->run(in);
      std::vector<Executable*> raw;
      for (auto& c : chips) raw.push_back(c.get());
      return run_split(raw, in);
    }
  };
  const Mutant& m_;
};

bool same_values(const TensorMap& a, const TensorMap& b) {
  for (const auto& [name, t] : a) {
    const Tensor& u = b.at(name);
    if (t.same_bits(u)) continue;
    if (t.dtype() != DType::f32) return false;
    auto x = t.as<float>(), y = u.as<float>();
    for (size_t i = 0; i < x.size(); ++i)
      if (std::memcmp(&x[i], &y[i], 4) != 0 && !(std::isnan(x[i]) && std::isnan(y[i]))) return false;
  }
  return true;
}

// A case of `cut` with random tokens and positions (every valid one reachable).
Case random_case(const ModelSpec& spec, const Cut& cut, uint64_t seed) {
  SplitMix64 rng{seed};
  Case c;
  c.spec = spec;
  c.cut = cut;
  c.weight_seed = rng.next() % 1000;
  c.data_seed = rng.next() % 1000;
  const int64_t rows = cut.row_count(), ctx = cut.ctx;
  const auto params = cut_params(cut.kind);
  if (cut.part() == Part::whole || cut.part() == Part::embed)
    for (int64_t r = 0; r < rows; ++r) c.tokens.push_back(int32_t(rng.next() % uint64_t(spec.vocab)));
  if (params.ctx) {
    if (cut.family() == Family::batch)
      for (int64_t r = 0; r < rows; ++r) c.positions.push_back(int32_t(rng.next() % uint64_t(ctx)));
    else
      c.positions.push_back(int32_t(rng.next() % uint64_t(ctx - rows + 1)));
  }
  return c;
}

// Whether the mutant changes any output of its cut kind, over random cases of a few specs
// and shapes (rows 1, 3 and 9; ctx up to 40), unsplit and split; the don't-care rows left out.
std::string screen(const Mutant& m, int inputs, uint64_t seed) {
  ModelSpec tiny = builtin_spec("tiny"), half = tiny, wide = builtin_spec("tiny");
  half.rope_style = RopeStyle::half;
  wide.kv_heads = 1, wide.norm_eps = 1e-6, wide.tied = false;  // 4 query heads per kv head, an untied head
  int tried = 0;
  for (const ModelSpec& spec : {tiny, half, wide}) {
    for (auto [rows, ctx] : {std::pair<int64_t, int64_t>{1, 9}, {3, 20}, {9, 40}}) {
      for (int64_t layer : {int64_t(0), spec.layers - 1}) {
        const Cut cut{m.kind, layer, rows, ctx};
        if (cut.impossible_for(spec)) continue;
        for (int64_t tp : {int64_t(1), int64_t(2)}) {
          if (tp > 1 && split_unsupported(cut, spec, tp)) continue;
          std::vector<std::unique_ptr<Executable>> clean, mutated;
          const TensorMap w = synthetic_weights(spec, seed);
          for (int64_t c = 0; c < tp; ++c) {
            Program p = tp == 1 ? author_program(cut, spec) : author_chip_program(cut, spec, tp, c);
            const TensorMap chip_w = tp == 1 ? w : shard_weights(w, spec, tp, c);
            clean.push_back(std::make_unique<Executable>(p, chip_w));
            mutated.push_back(std::make_unique<Executable>(m.apply(p), chip_w));
          }
          auto run = [&](std::vector<std::unique_ptr<Executable>>& chips, const TensorMap& in) {
            std::vector<Executable*> raw;
            for (auto& e : chips) raw.push_back(e.get());
            return tp == 1 ? raw[0]->run(in) : run_split(raw, in);
          };
          for (int i = 0; i < inputs; ++i) {
            Case c = random_case(spec, cut, mix64(seed, uint64_t(i)));
            c.k_scale = i % 4 == 3 ? 1000.0f : 1.0f;  // large keys now and then, as campaigns have
            const TensorMap in = case_inputs(c);
            ++tried;
            if (!same_values(blank_unattended(run(clean, in), c), blank_unattended(run(mutated, in), c)))
              return fmt::format("a hole: it changes the outputs of {} tp={} on {}", cut.str(), tp, c.str());
          }
        }
      }
    }
  }
  return fmt::format("not distinguished: the outputs are bitwise the reference's on {} random cases of 3 specs, "
                     "rows 1 to 9, ctx to 40, tp 1 and 2",
                     tried);
}

}  // namespace

int MutationReport::count(MutantVerdict v) const {
  int n = 0;
  for (const MutantResult& r : results) n += r.verdict == v;
  return n;
}

double MutationReport::score() const {
  const int considered = int(results.size()) - count(MutantVerdict::equivalent);
  return considered > 0 ? double(count(MutantVerdict::killed)) / considered : 0;
}

std::string MutationReport::table() const {
  std::string out;
  for (const MutantResult& r : results)
    if (r.verdict != MutantVerdict::killed)
      out += fmt::format("{:<10} {}\n           {}\n", r.verdict == MutantVerdict::survived ? "SURVIVED" : "equivalent",
                         r.mutant, r.by);
  out += fmt::format("{} mutants (of {}): {} killed, {} survived, {} not distinguished from the reference; "
                     "mutation score {:.1f}% (killed / (total - not distinguished))\n",
                     results.size(), population, count(MutantVerdict::killed), count(MutantVerdict::survived),
                     count(MutantVerdict::equivalent), 100 * score());
  return out;
}

Json MutationReport::json() const {
  Json list = Json::array();
  for (const MutantResult& r : results)
    list.push_back({{"mutant", r.mutant},
                    {"kind", r.kind},
                    {"verdict", r.verdict == MutantVerdict::killed     ? "killed"
                                : r.verdict == MutantVerdict::survived ? "survived"
                                                                       : "not distinguished"},
                    {"by", r.by},
                    {"seconds", r.seconds}});
  return {{"format", "cutcheck-mutate-1"},
          {"population", population},
          {"mutants", results.size()},
          {"killed", count(MutantVerdict::killed)},
          {"survived", count(MutantVerdict::survived)},
          {"not_distinguished", count(MutantVerdict::equivalent)},
          {"score", score()},
          {"results", list}};
}

MutationReport run_mutants(const std::vector<Mutant>& mutants, const MutateOptions& o) {
  MutationReport report;
  TempFolder temp("mutate");
  for (size_t i = 0; i < mutants.size(); ++i) {
    throw_if_interrupted();
    const Mutant& m = mutants[i];
    const auto start = Clock::now();
    MutantResult r{m.str(), cut_kind_name(m.kind), MutantVerdict::survived, "", 0};
    // A short campaign of the mutant's own cut kind.
    MutantBackend backend(m);
    ConformOptions co;
    co.kinds = {m.kind};
    co.tp = {1, 2};
    co.cases = o.conform_cases;
    co.seed = mix64(o.seed, i);
    co.shapes = {128, 16, 0.2};
    co.shrink = false;
    co.same_failure_limit = 0;
    co.keep = temp.path() / "kept";
    ConformReport cr = conform(backend, co);
    if (cr.interrupted) throw Interrupted{cr.interrupted};
    if (cr.count(Verdict::failed) > 0) {
      r.verdict = MutantVerdict::killed;
      for (const CaseResult& c : cr.results)
        if (c.verdict == Verdict::failed) {
          r.by = "conform: " + c.c.cut.str() + ": " + c.failure;
          break;
        }
    }
    // Then the property catalog, the mutant in the runner and the split runner.
    if (r.verdict != MutantVerdict::killed) {
      Subject s = Subject::reference();
      s.runner = [&m](const ModelSpec& spec, const TensorMap& w) { return std::make_unique<ReferenceRunner>(spec, w, edit_of(m)); };
      s.split_runner = [&m](const ModelSpec& spec, const TensorMap& w, int64_t tp) {
        return std::make_unique<SplitRunner>(spec, w, tp, edit_of(m));
      };
      for (const Property& p : catalog()) {
        CheckResult cr2 = check(p, s, {o.property_cases, mix64(o.seed, i), false, ""});
        if (!cr2.passed) {
          r.verdict = MutantVerdict::killed;
          r.by = "property " + p.name + ": " + cr2.failure;
          break;
        }
      }
    }
    if (r.verdict != MutantVerdict::killed) {
      r.by = screen(m, o.probe_inputs, mix64(o.seed, i));
      if (r.by.starts_with("not distinguished")) r.verdict = MutantVerdict::equivalent;
    }
    fs::remove_all(temp.path() / "kept");
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    report.results.push_back(std::move(r));
    if (o.progress) o.progress(i + 1, mutants.size());
  }
  return report;
}

}  // namespace cutcheck
