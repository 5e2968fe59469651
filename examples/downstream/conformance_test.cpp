// The team's own test: a conformance campaign of its backend against cutcheck's reference,
// run from GoogleTest like any other test of the project.
#include <gtest/gtest.h>

#include <campaign/campaign.h>
#include <core/temp_folder.h>
#include <core/version.h>
#include <report/report.h>

#include "embed_backend.h"

namespace {

cutcheck::ConformOptions campaign(const cutcheck::fs::path& keep) {
  cutcheck::ConformOptions o;
  o.kinds = {cutcheck::CutKind::decode_embed, cutcheck::CutKind::batch_embed};  // what the backend lowers
  o.cases = 40;
  o.seed = 7;
  o.keep = keep;  // reproducers of failures
  return o;
}

TEST(EmbedBackend, ConformsToTheReference) {
  cutcheck::TempFolder keep("downstream");
  EmbedBackend backend;
  const cutcheck::ConformReport report = cutcheck::conform(backend, campaign(keep.path()));
  EXPECT_TRUE(report.passed()) << cutcheck::summary_table(report);
  EXPECT_EQ(report.count(cutcheck::Verdict::passed), 40);
  std::printf("checked with %s\n", cutcheck::version_line().c_str());
}

TEST(EmbedBackend, APlantedBugIsCaughtAndShrunk) {
  cutcheck::TempFolder keep("downstream");
  EmbedBackend backend(/*plant_bug=*/true);
  const cutcheck::ConformReport report = cutcheck::conform(backend, campaign(keep.path()));
  ASSERT_FALSE(report.passed());
  ASSERT_FALSE(report.failures.empty());
  for (const cutcheck::Failure& f : report.failures) {
    EXPECT_LE(f.shrunk.c.cut.row_count(), f.original.c.cut.row_count());
    EXPECT_TRUE(cutcheck::fs::exists(f.reproducer / "case.json")) << f.reproducer;
  }
}

}  // namespace
