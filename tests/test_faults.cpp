// The fault catalog as rewrites: each fault finds its anchors in every cut kind it claims
// and changes nothing elsewhere; any program folder takes a fault, a hand-written one
// included, and one without the anchors is refused with the anchor named.
#include <fmt/format.h>
#include <gmock/gmock.h>

#include <cstring>

#include "author/author.h"
#include "core/safetensors.h"
#include "faults/catalog.h"
#include "harness/folder.h"
#include "model/sharding.h"
#include "program/folder.h"
#include "program/text.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;

// Each chip's program text, with the fault applied where `faulty`.
std::vector<std::string> texts(const Cut& cut, const ModelSpec& spec, int64_t tp, const Fault* fault) {
  std::vector<std::string> out;
  for (int64_t c = 0; c < tp; ++c) {
    Program p = tp == 1 ? author_program(cut, spec) : author_chip_program(cut, spec, tp, c);
    out.push_back(print(fault ? fault->apply(p) : p));
  }
  return out;
}

class EveryFault : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryFault, FindsItsAnchorsWhereItClaimsAndNowhereElseChangesAnything) {
  const Fault& fault = find_fault(GetParam());
  ModelSpec interleaved = builtin_spec("tiny");  // 4 heads over 2 kv heads: a real grouping
  ModelSpec half = interleaved;
  half.rope_style = RopeStyle::half;
  ModelSpec knobs = half;  // every knob on: the knobs' faults act here alone, the others here too
  knobs.rope_scaling = {RopeScalingType::llama3, 8, 1, 4, 64};
  knobs.attention_bias = knobs.qk_norm = true;
  knobs.sliding_window = 4;
  const ModelSpec quantized = test::blocks_spec(DType::q4_K);  // the quantized weights' faults act here
  int claimed = 0;
  for (const ModelSpec& spec : {interleaved, half, knobs, quantized}) {
    for (CutKind kind : all_cut_kinds()) {
      const Cut cut{kind, 1, 10, 20};  // more than 8 rows, a cache longer than 16
      for (int64_t tp : {int64_t(1), int64_t(2)}) {
        if (tp > 1 && split_unsupported(cut, spec, tp)) continue;
        const std::string where = fmt::format("{} on {} tp={} ({} rope{})", fault.name, cut.str(), tp,
                                              spec.rope_style == RopeStyle::half ? "half" : "interleaved",
                                              spec.knob_summary());
        const std::vector<std::string> clean = texts(cut, spec, tp, nullptr);
        if (fault.acts_on(cut, tp, spec)) {
          ++claimed;
          std::vector<std::string> faulty;
          ASSERT_NO_THROW(faulty = texts(cut, spec, tp, &fault)) << where;
          for (size_t c = 0; c < clean.size(); ++c) EXPECT_NE(faulty[c], clean[c]) << where << ": changed nothing";
        } else {
          try {
            EXPECT_EQ(texts(cut, spec, tp, &fault), clean) << where << ": changed a cut it does not claim";
          } catch (const AnchorMissing&) {  // nothing to act on: as good as unchanged
          }
        }
      }
    }
  }
  EXPECT_GT(claimed, 0);
}

INSTANTIATE_TEST_SUITE_P(Faults, EveryFault, ::testing::ValuesIn(test::fault_names()),
                         [](const auto& info) { return test::param_name(info.param); });

TEST(Faults, TheCatalogKeepsItsShape) {
  EXPECT_EQ(fault_catalog().size(), 26u);
  int precision_only = 0;
  for (const Fault& f : fault_catalog()) {
    EXPECT_FALSE(f.description.empty()) << f.name;
    precision_only += f.precision_only;
  }
  EXPECT_EQ(precision_only, 1);  // bf16-activations
  EXPECT_THROW(find_fault("no-such-fault"), Error);
}

// A softmax written by hand (tests/programs/softmax_by_hand), with the author's names
// where the faults look for them.
TEST(Faults, ActOnAHandWrittenFolderThroughItsAnchors) {
  const fs::path dir = fs::path(CUTCHECK_TEST_SOURCE) / "programs" / "softmax_by_hand";
  const TensorMap in{{"s", Tensor::of_f32({4}, {100, 101, 102, 103})}};
  const std::vector<float> clean = test::floats(FolderRun::open(dir).run(in).at("probs"));
  const std::vector<float> faulty =
      test::floats(FolderRun::open_with_fault(dir, find_fault("softmax-without-max")).run(in).at("probs"));
  EXPECT_NE(clean, faulty);  // e^100 overflows f32: inf / inf
  // bf16 acts on any f32 op: every probability is a bf16 value.
  for (float p : test::floats(FolderRun::open_with_fault(dir, find_fault("bf16-activations")).run(in).at("probs"))) {
    uint32_t bits;
    std::memcpy(&bits, &p, 4);
    EXPECT_EQ(bits & 0xffffu, 0u) << p;
  }
  // A fault whose anchor the folder lacks is refused, naming the anchor and the file.
  try {
    FolderRun::open_with_fault(dir, find_fault("rope-position-off-by-one"));
    FAIL() << "a fault without its anchor ran";
  } catch (const AnchorMissing& e) {
    EXPECT_THAT(e.what(), HasSubstr("%rope.pos"));
    EXPECT_THAT(e.what(), HasSubstr("program.txt"));
    EXPECT_THAT(e.what(), HasSubstr("rope-position-off-by-one"));
  }
}

}  // namespace
}  // namespace cutcheck
