#include <fmt/format.h>

#include <optional>
#include <utility>

#include "backend/backend_runner.h"
#include "backend/serve_backend.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/temp_folder.h"
#include "harness/generate.h"
#include "harness/split.h"
#include "model/weights.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace cutcheck::cli {
namespace {

// "7 (3.2154), 12 (3.0011)": the two largest logits, the lower index first on ties.
std::string top_two(const std::vector<float>& logits) {
  size_t first = 0, second = logits.size() > 1 ? 1 : 0;
  if (logits.size() > 1 && logits[1] > logits[0]) std::swap(first, second);
  for (size_t i = 2; i < logits.size(); ++i) {
    if (logits[i] > logits[first]) second = first, first = i;
    else if (logits[i] > logits[second]) second = i;
  }
  if (logits.size() < 2) return fmt::format("{} ({:.6g})", first, logits[first]);
  return fmt::format("{} ({:.6g}), {} ({:.6g})", first, logits[first], second, logits[second]);
}

// Throws CheckFailed at the first generated token where the backend and the reference
// differ, with both sides' top-2 logits; says so when all agree.
void compare_generations(const Generation& reference, const Generation& backend, int64_t prompt) {
  for (size_t k = 0; k < reference.tokens.size(); ++k) {
    if (backend.tokens[k] == reference.tokens[k]) continue;
    fmt::print("step {} (position {}): the backend chose token {}, the reference {}\n"
               "  reference top-2: {}\n  backend   top-2: {}\n",
               k, prompt - 1 + int64_t(k), backend.tokens[k], reference.tokens[k], top_two(reference.logits[k]),
               top_two(backend.logits[k]));
    throw CheckFailed(fmt::format("the backend's generation differs from the reference's at step {}", k));
  }
  fmt::print("all {} tokens match the reference's\n", reference.tokens.size());
}

}  // namespace

void add_generate(CLI::App& app) {
  struct Args {
    std::string spec, weights, prompt = "1", via = "auto", backend;
    int64_t steps = 16, ctx = 0, tp = 1;
    int threads = 1;
    uint64_t seed = 0;
    bool compare = false, serve = false;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("generate", "greedy generation through the reference interpreter");
  cmd->add_option("--spec", args->spec, "a built-in spec or a spec JSON file (default: WEIGHTS/spec.json)");
  cmd->add_option("--weights", args->weights, "a weights folder (default: synthetic weights from --seed)");
  add_number(cmd, "--seed", args->seed, "seed of the synthetic weights when --weights is not given", seeds)
      ->capture_default_str();
  cmd->add_option("--prompt", args->prompt, "comma-separated prompt token ids")->capture_default_str();
  add_number(cmd, "--steps", args->steps, "tokens to generate", {0, INT32_MAX})->capture_default_str();
  add_number(cmd, "--ctx", args->ctx, "cache capacity (0: prompt + steps)", {0, INT32_MAX})->capture_default_str();
  cmd->add_option("--via", args->via, "cut path: auto (prefill, then decode), decode, prefill, batch or pieces")
      ->capture_default_str();
  add_number(cmd, "--tp", args->tp, "split every step over this many chips (through Decode, or Batch with --via batch)",
             tp_widths)
      ->capture_default_str();
  add_number(cmd, "--threads", args->threads, "threads for large contractions (the same tokens whatever the count)",
             threads)
      ->capture_default_str();
  cmd->add_option("--backend", args->backend,
                  "generate through a backend command instead (the conformance protocol), e.g. 'cutcheck-mlir run'; "
                  "needs --weights, and runs unsplit");
  cmd->add_flag("--serve", args->serve,
                "with --backend: start it once as `BACKEND --serve` for the whole generation (the persistent protocol)");
  cmd->add_flag("--compare", args->compare,
                "with --backend: generate through the reference too and report the first step whose token differs");
  cmd->callback([args] {
    if (args->compare && args->backend.empty()) throw Error("--compare needs --backend: it compares a backend's tokens");
    if (args->serve && args->backend.empty()) throw Error("--serve needs --backend: it is how the backend is run");
    ModelSpec spec = resolve_spec(args->spec, args->weights);
    TensorMap weights = args->weights.empty() ? synthetic_weights(spec, args->seed) : read_weights(args->weights, spec);
    GenerateOptions options{parse_token_list(args->prompt), args->steps, args->ctx, parse_via(args->via)};
    options.keep_logits = args->compare;  // the comparison's report shows each side's top logits
    // A backend lowers a program per capacity: through one, it keeps the one capacity
    // of prompt + steps rather than growing its caches (harness/generate.h).
    if (!args->backend.empty() && options.ctx == 0)
      options.ctx = checked_add(int64_t(options.prompt.size()), options.steps, "prompt + steps");
    // In this order, so that the runner goes before its backend, and a backend's servers
    // are shut down before their folder is removed and while signals are still caught.
    std::optional<InterruptScope> interrupts;  // a backend runs: a signal stops it and cleans up
    std::optional<TempFolder> work;
    std::unique_ptr<Backend> backend;
    std::unique_ptr<CutRunner> runner;
    if (!args->backend.empty()) {
      if (args->weights.empty()) throw Error("--backend needs --weights: the backend reads weights from files");
      if (args->tp != 1) throw NotYet("--backend with --tp: split programs go to the backend as chip folders; not yet");
      interrupts.emplace();
      work.emplace("generate");
      if (args->serve) backend = std::make_unique<ServeBackend>(args->backend, 600);
      else backend = std::make_unique<CommandBackend>(args->backend, 600);
      runner = std::make_unique<BackendRunner>(*backend, spec, args->weights, work->path());
    } else if (args->tp == 1) {
      RunOptions run;
      run.threads = args->threads;
      run.keep_values = false;  // generation reads outputs only
      runner = std::make_unique<ReferenceRunner>(spec, std::move(weights), ProgramEdit{}, run);
    } else {
      if (options.via == Via::automatic) options.via = Via::decode;
      if (options.via != Via::decode && options.via != Via::batch)
        throw NotYet(fmt::format("--tp {} generates through Decode or Batch; the {} path does not split yet", args->tp,
                                 via_name(options.via)));
      runner = std::make_unique<SplitRunner>(spec, std::move(weights), args->tp);
    }
    Generation g;
    try {
      g = generate(*runner, spec, options);
    } catch (const BackendFailed& e) {  // the backend's failure, not a usage error
      throw CheckFailed(fmt::format("{}{}", e.what(), e.stderr_tail.empty() ? "" : "\nbackend stderr (tail):\n" + e.stderr_tail));
    }
    fmt::print("{}\n", fmt::join(g.tokens, " "));
    if (args->compare) {
      ReferenceRunner reference(spec, std::move(weights));
      compare_generations(generate(reference, spec, options), g, int64_t(options.prompt.size()));
    }
  });
}

}  // namespace cutcheck::cli
