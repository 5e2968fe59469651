// How `check --backend` judges two runs (properties/agreement.h), and the backend subject
// in process: equal bits, within the sum of the bounds (with the worst headroom), past
// it; a refused cut makes a property unsupported, not failed.
#include <gtest/gtest.h>

#include "backend/backend_subject.h"
#include "core/error.h"
#include "core/files.h"
#include "harness/folder.h"
#include "properties/catalog.h"
#include "properties/check.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

Side side(float value, float bound) {
  return {{{"x", Tensor::of_f32({1}, {value})}}, {{"x", Tensor::of_f32({1}, {bound})}}};
}

TEST(Agreement, EqualBitsNeedNoTolerance) {
  Agreement a(Tolerance::bound(Precision::f32));
  a.judge(side(1.0f, 0), side(1.0f, 0), "same");
  EXPECT_EQ(a.tolerant(), 0);
  EXPECT_EQ(a.headroom(), 0);
}

TEST(Agreement, AllowsTheSumOfBothBoundsAndNoMore) {
  Agreement a(Tolerance::bound(Precision::f32));
  // 1.5 apart: past either bound (1), within their sum (2).
  a.judge(side(1.0f, 1), side(2.5f, 1), "near");
  EXPECT_EQ(a.tolerant(), 1);
  EXPECT_DOUBLE_EQ(a.headroom(), 0.75);
  EXPECT_NE(a.worst().find("near, 'x'"), std::string::npos) << a.worst();
  EXPECT_ANY_THROW(a.judge(side(1.0f, 1), side(3.5f, 1), "far"));
  a.clear();
  EXPECT_EQ(a.tolerant(), 0);
}

// The reference in process, refusing batch cuts as a backend answering exit 77 would.
class NoBatch : public Backend {
 public:
  std::string name() const override { return "no batch"; }
  bool supports(const Cut&, int64_t) const override { return true; }
  std::unique_ptr<Lowered> lower(const fs::path& folder) override {
    if (test::read_whole(folder / "manifest.json").find("\"batch") != std::string::npos) throw NotYet("no batches");
    return reference_.lower(folder);
  }

 private:
  ReferenceBackend reference_;
};

TEST(BackendSubject, RefusedCutsAreUnsupportedAndTheRestBitwise) {
  NoBatch backend;
  const fs::path work = test::temp_dir("backend-subject");
  const Subject s = backend_subject(backend, {.spec = std::nullopt, .weights = {}, .tp = {1}, .work = work});
  const CheckOptions o{4, 1, true, ""};
  const CheckResult batch = check(find_property("batch_invariance"), s, o);
  EXPECT_TRUE(batch.passed) << batch.failure;
  EXPECT_EQ(batch.verdict(), "unsupported");
  EXPECT_EQ(batch.refusal, "no batches");
  const CheckResult decode = check(find_property("composition.decode"), s, o);
  EXPECT_EQ(decode.verdict(), "bitwise") << decode.failure;
  EXPECT_TRUE(fs::is_empty(work)) << "a runner's folder outlived it";
}

}  // namespace
}  // namespace cutcheck
