// The MLIR backend: every cut exports, verifies and compiles with Debian's MLIR 22, and
// passes conformance; in spec precision bit for bit, in f32 within the tolerance; and
// stories260K generates llama2.c's tokens through it.
#include <fmt/format.h>
#include <gmock/gmock.h>

#include <cstdlib>

#include "author/author.h"
#include "backend/backend_runner.h"
#include "backend/serve_backend.h"
#include "campaign/campaign.h"
#include "campaign/op_suite.h"
#include "core/error.h"
#include "core/process.h"
#include "core/safetensors.h"
#include "core/serve_protocol.h"
#include "harness/generate.h"
#include "mlir/compile.h"
#include "model/llama2c.h"
#include "model/weights.h"
#include "program/fingerprint.h"
#include "program/folder.h"
#include "program/inputs.h"
#include "report/report.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

const std::string mlir_backend = CUTCHECK_MLIR_BACKEND;

// Skips (saying why) where MLIR 22 is not installed, unless CUTCHECK_REQUIRE_MLIR is set,
// as CI sets it: there a missing toolchain fails.
#define REQUIRE_TOOLCHAIN()                                                                    \
  std::string why_missing;                                                                     \
  if (!Toolchain::find(&why_missing)) {                                                        \
    if (std::getenv("CUTCHECK_REQUIRE_MLIR")) FAIL() << why_missing;                           \
    GTEST_SKIP() << "MLIR 22 is not installed here: " << why_missing;                          \
  }                                                                                            \
  setenv("CUTCHECK_MLIR_CACHE", CUTCHECK_TEST_MLIR_CACHE, 1)

ConformOptions campaign(int cases, const std::string& name) {
  ConformOptions o;
  o.cases = cases;
  o.keep = test::temp_dir("mlir-" + name);
  o.replay_prefix = "cutcheck conform --backend '" + mlir_backend + " run'";
  return o;
}

double worst_abs(const ConformReport& r) {
  double worst = 0;
  for (const CaseResult& c : r.results)
    for (const OutputError& e : c.errors) worst = std::max(worst, e.max_abs);
  return worst;
}

TEST(Mlir, EveryCutOfTinyExportsAndVerifies) {
  REQUIRE_TOOLCHAIN();
  std::string why;
  Toolchain tools = *Toolchain::find(&why);
  fs::path dir = test::temp_dir("mlir-export");
  for (CutKind kind : all_cut_kinds()) {
    Cut cut{kind, 1, 3, 8};
    Authored a = write(cut, builtin_spec("tiny"), "w");
    for (MlirPrecision precision : {MlirPrecision::spec, MlirPrecision::f32}) {
      MlirExport e = export_mlir(a.program, a.manifest, precision);
      EXPECT_EQ(e.arguments, a.manifest.weights.size() + a.program.inputs.size());
      write_file_atomic(dir / "p.mlir", e.text);
      ProcessResult r = run_process(shell_quote(tools.mlir_opt.string()) + " " + shell_quote((dir / "p.mlir").string()),
                                      test::generous_seconds);
      EXPECT_TRUE(r.ok()) << cut.str() << ": " << r.stderr_tail;
    }
  }
}

// `cases` cases of every cut kind of `spec` pass, bit for bit.
void expect_every_kind_bitwise(const std::string& spec, int cases) {
  CommandBackend backend(mlir_backend + " run", test::generous_seconds);
  for (CutKind kind : all_cut_kinds()) {
    ConformOptions o = campaign(cases, spec);
    o.spec = builtin_spec(spec);
    o.kinds = {kind};
    ConformReport r = conform(backend, o);
    EXPECT_TRUE(r.passed()) << summary_table(r);
    EXPECT_EQ(worst_abs(r), 0.0) << cut_kind_name(kind) << " of " << spec << " differs from the reference";
  }
}

TEST(Mlir, EveryCutKindOfTinyConformsBitwise) {
  REQUIRE_TOOLCHAIN();
  expect_every_kind_bitwise("tiny", 2);
}

TEST(Mlir, EveryCutKindOfStoriesConformsBitwise) {
  REQUIRE_TOOLCHAIN();
  expect_every_kind_bitwise("stories260K", 1);
}

// bf16 and f16 weights reach the backend as stored; arith.extf widens them, exactly.
TEST(Mlir, HalfWeightsConformBitwise) {
  REQUIRE_TOOLCHAIN();
  CommandBackend backend(mlir_backend + " run", test::generous_seconds);
  test::expect_half_weights_bitwise(backend, campaign(1, "half"));
}

TEST(Mlir, RandomSpecsConformBitwiseInSpecPrecisionAndWithinToleranceInF32) {
  REQUIRE_TOOLCHAIN();
  CommandBackend spec(mlir_backend + " run", test::generous_seconds), f32(mlir_backend + " run --precision f32", test::generous_seconds);
  ConformReport exact = conform(spec, campaign(12, "random"));
  EXPECT_TRUE(exact.passed()) << summary_table(exact);
  EXPECT_EQ(worst_abs(exact), 0.0);
  ConformReport loose = conform(f32, campaign(12, "random-f32"));
  EXPECT_TRUE(loose.passed()) << summary_table(loose);
  std::printf("f32 lowering, worst abs error over 12 cases: %.3g\n", worst_abs(loose));
}

TEST(Mlir, SplitsAreNotSupported) {
  REQUIRE_TOOLCHAIN();
  CommandBackend backend(mlir_backend + " run", test::generous_seconds);
  ConformOptions o = campaign(3, "split");
  o.tp = {2};
  o.kinds = {CutKind::decode_layer};
  ConformReport r = conform(backend, o);
  EXPECT_EQ(r.count(Verdict::unsupported), 3);
  EXPECT_THAT(r.results[0].failure, ::testing::HasSubstr("tp splits are not lowered"));
}

// Every op, dtype and edge case of the language, one op per program: bitwise in spec
// precision (collectives and quantized weights are reported unsupported, never passed).
TEST(Mlir, PassesTheOpSuiteBitwiseInSpecPrecision) {
  REQUIRE_TOOLCHAIN();
  CommandBackend backend(mlir_backend + " run --precision spec", test::generous_seconds);
  const std::vector<OpCase> cases = op_cases();
  OpReport r = conform_ops(backend, cases, {}, Tolerance::fixed_f32(), test::temp_dir("mlir-ops"));
  int unexported = 0;
  for (const OpCase& c : cases)
    unexported += c.kind == OpKind::all_reduce || c.kind == OpKind::all_gather || !c.weights.empty();
  EXPECT_EQ(r.count(OpVerdict::unsupported), unexported) << r.table();
  EXPECT_EQ(r.count(OpVerdict::bitwise), int(cases.size()) - unexported) << r.table();
  EXPECT_TRUE(r.passed());
}

// The persistent protocol (`cutcheck-mlir run --serve`): the same verdicts as process per run.
TEST(Mlir, ServesCasesBitwiseAndSaysSplitsAreUnsupported) {
  REQUIRE_TOOLCHAIN();
  ServeBackend backend(mlir_backend + " run", test::generous_seconds);
  ConformReport exact = conform(backend, campaign(6, "serve"));
  EXPECT_TRUE(exact.passed()) << summary_table(exact);
  EXPECT_EQ(worst_abs(exact), 0.0);
  ConformOptions o = campaign(2, "serve-split");
  o.tp = {2};
  o.kinds = {CutKind::decode_layer};
  ConformReport split = conform(backend, o);
  EXPECT_EQ(split.count(Verdict::unsupported), 2) << summary_table(split);
}

// A server keeps what it compiled and loaded: a second request for the same folder
// reuses it, and gives the same bits.
TEST(Mlir, AServerKeepsCompiledProgramsBetweenRequests) {
  REQUIRE_TOOLCHAIN();
  const fs::path dir = test::temp_dir("mlir-keep");
  const ModelSpec spec = builtin_spec("tiny");
  write_weights(dir / "w", synthetic_weights(spec, 1), spec);
  write_cut_folder(Cut{CutKind::decode, 1, 3, 8}, spec, 1, dir / "w", dir / "p", false);
  write_safetensors(dir / "in.safetensors", random_inputs(ProgramFolder::read(dir / "p").program, 5));
  std::string requests;
  for (int64_t id : {1, 2})
    requests += request_line({id, (dir / "p").string(), (dir / "in.safetensors").string(),
                              (dir / fmt::format("out{}.safetensors", id)).string()});
  write_file_atomic(dir / "requests.txt", requests);
  ProcessResult r = run_process(fmt::format("{} run --serve --verbose < {}", shell_quote(mlir_backend),
                                            shell_quote((dir / "requests.txt").string())),
                                test::generous_seconds);
  ASSERT_TRUE(r.ok()) << r.describe() << r.stderr_tail;
  EXPECT_EQ(r.stdout_tail, answer_line({1, ServeStatus::ok, ""}) + answer_line({2, ServeStatus::ok, ""}));
  EXPECT_THAT(r.stderr_tail, ::testing::HasSubstr("kept from an earlier request"));
  EXPECT_EQ(test::read_whole(dir / "out1.safetensors"), test::read_whole(dir / "out2.safetensors"));
}

// What a server keys kept programs on: the folder's content, wherever it is; an edit of
// the program, or weights written again, is another program.
TEST(ProgramFingerprint, FollowsTheContentNotThePath) {
  const fs::path dir = test::temp_dir("fingerprint");
  const ModelSpec spec = builtin_spec("tiny");
  write_weights(dir / "w", synthetic_weights(spec, 1), spec);
  const Cut cut{CutKind::decode, 1, 3, 8};
  write_cut_folder(cut, spec, 1, dir / "w", dir / "a", false);
  write_cut_folder(cut, spec, 1, dir / "w", dir / "b", false);
  const std::string a = program_fingerprint(dir / "a");
  EXPECT_EQ(program_fingerprint(dir / "b"), a);
  write_cut_folder(Cut{CutKind::decode, 1, 3, 9}, spec, 1, dir / "w", dir / "b", false);
  EXPECT_NE(program_fingerprint(dir / "b"), a);
  write_file_atomic(dir / "a" / "program.txt", test::read_whole(dir / "a" / "program.txt") + "\n");
  const std::string edited = program_fingerprint(dir / "a");
  EXPECT_NE(edited, a);
  const fs::path weights = dir / "w" / "model.safetensors";
  fs::last_write_time(weights, fs::last_write_time(weights) + std::chrono::seconds(1));  // written again
  EXPECT_NE(program_fingerprint(dir / "a"), edited);
}

TEST(Mlir, CollectivesHaveNoExportAndSaySo) {
  std::vector<Authored> chips = write_split(Cut::decode_layer(0, 4), builtin_spec("tiny"), "w", 2);
  Program p = chips[0].program;
  p.replica.reset();  // even without the chip line, the all_reduce has no MLIR form
  try {
    export_mlir(p, chips[0].manifest, MlirPrecision::spec);
    FAIL();
  } catch (const NotYet& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("%l0.attn_sum = all_reduce: collectives have no MLIR form"));
  }
}

// Through a process per step, and through one server for the whole generation.
TEST(Mlir, StoriesGeneratesLlama2cTokensThroughMlir) {
  REQUIRE_TOOLCHAIN();
  SKIP_WITHOUT_SHARED(shared);
  Json fixture = parse_json(test::read_whole(shared / "fixtures" / "stories260K-greedy.json"), "fixture");
  fs::path dir = test::temp_dir("mlir-stories");
  Llama2cModel m = read_llama2c(shared / "models" / "stories260K.bin");
  write_weights(dir / "weights", m.weights, m.spec);
  CommandBackend each_step(mlir_backend + " run", test::generous_seconds);
  ServeBackend one_server(mlir_backend + " run", test::generous_seconds);
  for (Backend* backend : std::initializer_list<Backend*>{&each_step, &one_server}) {
    BackendRunner runner(*backend, m.spec, dir / "weights", dir / ("programs-" + std::to_string(backend == &one_server)));
    Generation g = generate(runner, m.spec, {{1}, 64, 65, Via::decode});  // one capacity: one program to lower
    EXPECT_EQ(g.tokens, fixture.at("tokens").get<std::vector<int32_t>>()) << backend->name();
  }
}

}  // namespace
}  // namespace cutcheck
