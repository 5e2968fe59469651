// Parallel and sharded campaigns: the report is the same for any --jobs, shards merged
// give the unsharded report, and the reports say what failed how.
#include <fmt/format.h>
#include <gmock/gmock.h>

#include "core/error.h"
#include "report/merge.h"
#include "report/report.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;

const std::string cutcheck_binary = CUTCHECK_BINARY;

// A campaign that fails on some cut kinds and passes on others, with shrinking bounded by
// runs only (a time budget would make the shrunk case depend on the machine's load).
ConformOptions mixed_campaign(const std::string& name) {
  ConformOptions o;
  o.kinds = {CutKind::decode_layer, CutKind::batch_embed, CutKind::decode_head, CutKind::decode};
  o.tp = {1, 2};
  o.cases = 16;
  o.seed = 5;
  o.shrink_seconds = test::generous_seconds;
  o.shrink_budget = 40;
  o.keep = test::temp_dir("sharding-" + name);
  o.replay_prefix = "cutcheck conform --backend X";
  return o;
}

// The report without what differs between runs of one campaign: timings, host, start,
// jobs and shard.
Json without_timings(Json j) {
  if (j.is_object()) {
    j.erase("seconds");
    j.erase("run");
    for (auto& [key, value] : j.items()) value = without_timings(value);
  } else if (j.is_array()) {
    for (Json& value : j) value = without_timings(value);
  }
  return j;
}

TEST(ShardedCampaigns, JobsAndShardsGiveTheSameReport) {
  CommandBackend faulty(cutcheck_binary + " run --fault kv-write-wrong-row", test::generous_seconds);
  ConformOptions o = mixed_campaign("one");
  const Json one = report_json(conform(faulty, o));
  ASSERT_FALSE(one["failures"].empty()) << "the campaign must fail, so that shrinking is compared too";
  ASSERT_GT(one["counts"]["passed"].get<int>(), 0);
  for (const Json& f : one["failures"]) {
    EXPECT_GT(f["shrink_runs"].get<int>(), 0);
    // Reproducers are named by case and seed: shards and workers never share one.
    EXPECT_EQ(fs::path(f["reproducer"].get<std::string>()).filename(),
              fmt::format("case-{}-seed-{}", f["index"].get<int>(), o.seed));
  }

  o.jobs = 3;
  const Json three = report_json(conform(faulty, o));
  EXPECT_EQ(without_timings(three).dump(1), without_timings(one).dump(1));

  o.jobs = 2;
  std::vector<ShardReport> shards;
  for (int i = 1; i <= 3; ++i) {
    o.shard = {i, 3};
    shards.push_back({report_json(conform(faulty, o)), fmt::format("shard {}", i)});
    EXPECT_EQ(shards.back().report["planned"], i == 1 ? 6 : 5);
  }
  const Json merged = merge_reports(shards);
  EXPECT_EQ(without_timings(merged).dump(1), without_timings(one).dump(1));
  EXPECT_EQ(summary_table(merged).substr(0, 200), summary_table(one).substr(0, 200));

  // Not the shards of one campaign: refused, naming what is wrong.
  std::vector<ShardReport> missing(shards.begin(), shards.begin() + 2);
  EXPECT_THAT([&] { merge_reports(missing); }, ::testing::ThrowsMessage<Error>(HasSubstr("shard 3/3 is missing")));
  std::vector<ShardReport> twice = {shards[0], shards[0], shards[1]};
  EXPECT_THAT([&] { merge_reports(twice); }, ::testing::ThrowsMessage<Error>(HasSubstr("given twice")));
  std::vector<ShardReport> other = shards;
  other[1].report["seed"] = 6;
  EXPECT_THAT([&] { merge_reports(other); }, ::testing::ThrowsMessage<Error>(HasSubstr("not shards of one campaign")));
}

TEST(ShardedCampaigns, AnInProcessBackendRunsOnSeveralThreads) {
  ReferenceBackend reference;  // lower() and run() called from three threads at once
  ConformOptions o = mixed_campaign("in-process");
  o.kinds = all_cut_kinds();
  o.cases = 30;
  const Json one = report_json(conform(reference, o));
  EXPECT_TRUE(one["passed"].get<bool>());
  o.jobs = 3;
  EXPECT_EQ(without_timings(report_json(conform(reference, o))).dump(1), without_timings(one).dump(1));
}

TEST(ShardedCampaigns, ShardsAreRefusedWhenEmptyOrMalformed) {
  for (const char* bad : {"0/2", "3/2", "1/0", "1", "a/b", "1/2/3", "-1/2", ""})
    EXPECT_THROW(Shard::parse(bad), Error) << bad;
  EXPECT_EQ(Shard::parse("2/4").str(), "2/4");
  ReferenceBackend reference;
  ConformOptions o = mixed_campaign("empty");
  o.cases = 2;
  o.shard = {3, 3};
  EXPECT_THAT([&] { conform(reference, o); }, ::testing::ThrowsMessage<Error>(HasSubstr("is empty")));
}

TEST(ShardedCampaigns, JUnitTellsErrorsFromMismatches) {
  // A crash is a JUnit <error type="crash">; a wrong value a <failure type="mismatch">.
  CommandBackend crashing(std::string(CUTCHECK_TEST_BACKENDS) + "/segfault.sh", test::generous_seconds);
  ConformOptions o = mixed_campaign("crash");
  o.cases = 3;
  o.shrink = false;
  const std::string crashed = junit_xml(conform(crashing, o));
  EXPECT_THAT(crashed, HasSubstr("<error type=\"crash\""));
  EXPECT_THAT(crashed, ::testing::Not(HasSubstr("<failure")));
  EXPECT_THAT(crashed, HasSubstr("<property name=\"seed\" value=\"5\"/>"));
  EXPECT_THAT(crashed, HasSubstr("hostname=\""));

  CommandBackend faulty(cutcheck_binary + " run --fault kv-write-wrong-row", test::generous_seconds);
  o.kinds = {CutKind::decode_layer};
  o.cases = 2;
  const std::string wrong = junit_xml(conform(faulty, o));
  EXPECT_THAT(wrong, HasSubstr("<failure type=\"mismatch\""));
  EXPECT_THAT(wrong, ::testing::Not(HasSubstr("<error ")));
}

}  // namespace
}  // namespace cutcheck
