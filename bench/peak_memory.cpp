// Peak memory of decode steps on the reference, against the bytes it cannot do without:
// the weights plus the kv caches. Run it in a process of its own (the peak is the
// process's): first with --prepare to write the seeded weights, then to measure.
//   peak_memory [--prepare] MODEL [CTX] [STEPS]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "bench/workloads.h"
#include "harness/runner.h"
#include "model/signature.h"

using namespace cutcheck;

int main(int argc, char** argv) {
  bool prepare = argc > 1 && std::strcmp(argv[1], "--prepare") == 0;
  int arg = prepare ? 2 : 1;
  if (argc <= arg) {
    std::fprintf(stderr, "usage: peak_memory [--prepare] MODEL [CTX] [STEPS]\n");
    return 2;
  }
  const std::string model = argv[arg];
  const int64_t ctx = argc > arg + 1 ? std::stoll(argv[arg + 1]) : 256;
  const int steps = argc > arg + 2 ? std::stoi(argv[arg + 2]) : 4;
  const bench::Workload& w = bench::workload(model, bench::Placement::mapped);  // writes the weights the first time
  if (prepare) return 0;

  const Cut cut = Cut::decode(ctx);
  TensorMap caches;
  uint64_t cache_bytes = 0;
  for (const Port& p : signature(cut, w.spec).inputs)
    if (p.name.starts_with("k.") || p.name.starts_with("v.")) {
      caches.emplace(p.name, Tensor(p.type));
      cache_bytes += p.type.bytes();
    }
  RunOptions run;
  run.keep_values = false;  // as cutcheck generate and run do: only the live values are held
  ReferenceRunner runner(w.spec, w.weights, ProgramEdit{}, run);
  int32_t token = 1;
  const auto start = std::chrono::steady_clock::now();
  for (int pos = 0; pos < steps; ++pos) {
    // The caches given up, as cutcheck generate gives them (harness/generate.cpp): the
    // runner may update them in place rather than write new ones beside them.
    TensorMap in = std::move(caches);
    in["token"] = Tensor::scalar_i32(token);
    in["pos"] = Tensor::scalar_i32(pos);
    TensorMap out = runner.run_giving(cut, std::move(in));
    token = out.at("next").as<int32_t>()[0];
    caches.clear();
    for (auto& [name, t] : out)
      if (name.starts_with("k.") || name.starts_with("v.")) caches.emplace(name, std::move(t));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double peak = double(usage.ru_maxrss) * 1024, weights = double(bench::weight_bytes(w.weights));
  std::printf("{\"model\": \"%s\", \"ctx\": %lld, \"steps\": %d, \"seconds_per_token\": %.4f, \"peak_bytes\": %.0f, "
              "\"weight_bytes\": %.0f, \"cache_bytes\": %llu, \"ratio\": %.4f}\n",
              model.c_str(), static_cast<long long>(ctx), steps, seconds / steps, peak, weights,
              static_cast<unsigned long long>(cache_bytes), peak / (weights + double(cache_bytes)));
  return 0;
}
