// The ONNX exporter and the ONNX Runtime backend: every cut kind of tiny and stories260K,
// unsplit and split over 2 and 4 chips, exports and passes onnx::checker and strict shape
// inference (export_onnx runs both before writing); and cutcheck-ort conforms, bit for bit
// in spec precision, with ONNX Runtime's optimisations on and off.
#include <gmock/gmock.h>

#include <fmt/format.h>

#include <cstdlib>

#include "author/author.h"
#include "backend/backend_runner.h"
#include "campaign/campaign.h"
#include "harness/generate.h"
#include "model/llama2c.h"
#include "model/weights.h"
#include "core/process.h"
#include "model/sharding.h"
#include "onnx/export.h"
#include "report/report.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

const std::string ort_backend = CUTCHECK_ORT_BACKEND;

// Skips where node or onnxruntime-node is missing, unless CUTCHECK_REQUIRE_ORT is set (CI).
#define REQUIRE_ORT()                                                                            \
  if (!fs::exists(fs::path(CUTCHECK_ORT_DIR) / "node_modules" / "onnxruntime-node") ||           \
      !run_process("node --version", test::generous_seconds).ok()) {                             \
    if (std::getenv("CUTCHECK_REQUIRE_ORT")) FAIL() << "node or tools/ort/node_modules is missing"; \
    GTEST_SKIP() << "node or onnxruntime-node (npm ci --ignore-scripts in tools/ort) is missing";  \
  }                                                                                              \
  setenv("CUTCHECK_ORT_CACHE", CUTCHECK_TEST_ORT_CACHE, 1)

// Through the command line: weights, author (split or not), export-onnx, which exits 0
// only when onnx::checker and strict shape inference accept every graph.
void expect_every_kind_exports(const std::string& spec, int64_t tp) {
  if (tp > 1 && widths_unsplittable(builtin_spec(spec), tp)) return;  // e.g. tiny's 2 kv heads over 4 chips
  const fs::path dir = test::temp_dir(fmt::format("onnx-export-{}-tp{}", spec, tp));
  const std::string cutcheck = shell_quote(CUTCHECK_BINARY);
  const std::string w = shell_quote((dir / "w").string());
  ASSERT_TRUE(run_process(cutcheck + " weights --spec " + spec + " --dir " + w + (tp > 1 ? " --tp " + std::to_string(tp) : ""),
                          test::generous_seconds)
                  .ok());
  for (CutKind kind : all_cut_kinds()) {
    if (tp > 1 && !kind_splits(kind)) continue;
    const Cut cut{kind, 0, 2, 8};
    const fs::path p = dir / fmt::format("{}-tp{}", cut_kind_name(kind), tp);
    ProcessResult a = run_process(cutcheck + " author --spec " + spec + " --cut " + shell_quote(cut.str()) + " --dir " + w +
                                      " --out " + shell_quote(p.string()) + " --tp " + std::to_string(tp), test::generous_seconds);
    ASSERT_TRUE(a.ok()) << a.stderr_tail;
    ProcessResult e = run_process(cutcheck + " export-onnx " + shell_quote(p.string()) + " --out " +
                                      shell_quote((p / "onnx" / "model.onnx").string()), test::generous_seconds);
    EXPECT_TRUE(e.ok()) << cut.str() << " of " << spec << " tp " << tp << ": " << e.stderr_tail;
    EXPECT_TRUE(fs::exists(p / "onnx" / "model.plan.json"));
  }
}

TEST(Onnx, EveryCutKindOfTinyExportsAndChecks) {
  for (int64_t tp : {1, 2, 4}) expect_every_kind_exports("tiny", tp);
}

TEST(Onnx, EveryCutKindOfStoriesExportsAndChecks) {
  for (int64_t tp : {1, 2, 4}) expect_every_kind_exports("stories260K", tp);
}

double worst_abs(const ConformReport& r) {
  double worst = 0;
  for (const CaseResult& c : r.results)
    for (const OutputError& e : c.errors) worst = std::max(worst, e.max_abs);
  return worst;
}

ConformOptions campaign(int cases, const std::string& name) {
  ConformOptions o;
  o.cases = cases;
  o.keep = test::temp_dir("ort-" + name);
  o.replay_prefix = "cutcheck conform --backend '" + ort_backend + " run'";
  return o;
}

TEST(Ort, RandomSpecsConformBitwiseWithOptimisationsOnAndOff) {
  REQUIRE_ORT();
  for (const std::string optimize : {"on", "off"}) {
    CommandBackend backend(ort_backend + " run --optimize " + optimize, test::generous_seconds);
    ConformReport r = conform(backend, campaign(14, "random-" + optimize));
    EXPECT_TRUE(r.passed()) << summary_table(r);
    EXPECT_EQ(r.count(Verdict::passed), 14);
    EXPECT_EQ(worst_abs(r), 0.0) << "optimisations " << optimize;
  }
}

// bf16 and f16 weights become BFLOAT16 and FLOAT16 initializers; Cast widens them, exactly.
TEST(Ort, HalfWeightsConformBitwise) {
  REQUIRE_ORT();
  CommandBackend backend(ort_backend + " run", test::generous_seconds);
  test::expect_half_weights_bitwise(backend, campaign(1, "half"));
}

// Weights past --external-from go to MODEL.onnx.data (bench512's embedding table, 16 MiB,
// did by default, and the checker, run before that file existed, refused every export).
TEST(Ort, WeightsInExternalDataConformBitwise) {
  REQUIRE_ORT();
  CommandBackend backend(ort_backend + " run --external-from 1024", test::generous_seconds);
  ConformOptions o = campaign(6, "external");
  o.tp = {1, 2};
  ConformReport r = conform(backend, o);
  EXPECT_TRUE(r.passed()) << summary_table(r);
  EXPECT_EQ(r.count(Verdict::passed), 6);
}

TEST(Ort, SplitsConformThroughTheCollectiveSeams) {
  REQUIRE_ORT();
  CommandBackend backend(ort_backend + " run", test::generous_seconds);
  ConformOptions o = campaign(6, "split");
  o.tp = {2, 4};
  o.kinds = {CutKind::decode, CutKind::batch_layer};
  ConformReport r = conform(backend, o);
  EXPECT_TRUE(r.passed()) << summary_table(r);
  EXPECT_GT(r.count(Verdict::passed), 0);
}

// ORT made wrong through the export: the program is rewritten (rope at pos + 1) before
// cutcheck-ort exports it; the campaign catches it, shrinks it and bisects it to layer 0.
TEST(Ort, RopeOffByOneThroughTheExportIsCaughtShrunkAndBisected) {
  REQUIRE_ORT();
  const std::string faulty = "python3 " + shell_quote(std::string(CUTCHECK_TEST_SOURCE) + "/ort/rope_off_by_one.py") + " " +
                             shell_quote(ort_backend);
  CommandBackend backend(faulty, test::generous_seconds);
  ConformOptions o = campaign(6, "rope");
  o.kinds = {CutKind::decode};
  // Shrinking through node takes a second a run; on a loaded machine the default budget
  // (10 s) runs out before bisection, which is what this test is about. The run budget
  // (200) bounds it instead.
  o.shrink_seconds = test::generous_seconds;
  ConformReport r = conform(backend, o);
  ASSERT_FALSE(r.passed()) << "rope at pos + 1 went unnoticed";
  ASSERT_FALSE(r.failures.empty());
  const Failure& f = r.failures[0];
  EXPECT_LE(f.shrunk.c.spec.layers, f.original.c.spec.layers);
  EXPECT_THAT(f.piece, ::testing::StartsWith("layer 0")) << f.shrunk.c.str();
  EXPECT_TRUE(fs::exists(f.reproducer / "case.json"));
}

TEST(Ort, StoriesGeneratesLlama2cTokensThroughOrt) {
  REQUIRE_ORT();
  SKIP_WITHOUT_SHARED(shared);
  Json fixture = parse_json(test::read_whole(shared / "fixtures" / "stories260K-greedy.json"), "fixture");
  fs::path dir = test::temp_dir("ort-stories");
  Llama2cModel m = read_llama2c(shared / "models" / "stories260K.bin");
  write_weights(dir / "weights", m.weights, m.spec);
  CommandBackend backend(ort_backend + " run", test::generous_seconds);
  BackendRunner runner(backend, m.spec, dir / "weights", dir / "programs");
  Generation g = generate(runner, m.spec, {{1}, 64, 65, Via::decode});  // one capacity: one program to lower
  EXPECT_EQ(g.tokens, fixture.at("tokens").get<std::vector<int32_t>>());
}

}  // namespace
}  // namespace cutcheck
