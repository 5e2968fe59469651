// Mutants: every one is type-preserving and changes the program of its cut kind; a few
// run end to end (the full run, with its figures, is in docs/conformance.md).
#include <gmock/gmock.h>

#include <set>

#include "author/author.h"
#include "model/sharding.h"
#include "mutate/score.h"
#include "program/text.h"
#include "program/verifier.h"

namespace cutcheck {
namespace {

TEST(Mutate, EveryMutantIsTypePreservingAndChangesItsProgram) {
  const ModelSpec spec = builtin_spec("tiny");
  const std::vector<Mutant> all = all_mutants(spec, all_cut_kinds());
  EXPECT_GE(all.size(), 1000u);
  const std::vector<Mutant> drawn = sample_mutants(all, 48, 1);
  EXPECT_GE(drawn.size(), 500u);
  std::set<CutKind> kinds;
  for (const Mutant& m : all) {
    kinds.insert(m.kind);
    const Cut cut{m.kind, 0, 3, 20};
    Program p = author_program(cut, spec);
    std::string before = print(p), after = print(m.apply(p));  // apply() verifies what it returns
    if (before == after && !split_unsupported(cut, spec, 2)) {  // anchored in a chip's program only
      p = author_chip_program(cut, spec, 2, 0);
      before = print(p), after = print(m.apply(p));
    }
    EXPECT_NE(before, after) << m.str();
  }
  EXPECT_EQ(kinds.size(), all_cut_kinds().size());
  // The draw is a stable function of the mutants and the seed.
  EXPECT_EQ(sample_mutants(all, 48, 1).front().str(), drawn.front().str());
  EXPECT_NE(sample_mutants(all, 48, 2).front().str() + sample_mutants(all, 48, 2).back().str(),
            drawn.front().str() + drawn.back().str());
}

TEST(Mutate, AFewMutantsAreKilledOrShownIndistinguishable) {
  const std::vector<Mutant> all = all_mutants(builtin_spec("tiny"), all_cut_kinds());
  std::vector<Mutant> few;
  for (const Mutant& m : all) {
    const std::string s = m.str();
    if (s == "decode %l*.probs (divide): divide -> multiply" ||       // softmax broken: conformance
        s == "batch %l*.slot (compare): EQ -> LE" ||                  // writes k, v over every earlier row
        s == "decode_head %head.none (constant): constant +1")  // index V + 1 never wins a min: same outputs
      few.push_back(m);
  }
  ASSERT_EQ(few.size(), 3u);
  MutateOptions o;
  o.conform_cases = 8;
  o.property_cases = 5;
  o.probe_inputs = 3;
  MutationReport r = run_mutants(few, o);
  for (const MutantResult& m : r.results) {
    if (m.mutant.starts_with("decode_head")) {
      EXPECT_EQ(m.verdict, MutantVerdict::equivalent) << m.by;
    } else {
      EXPECT_EQ(m.verdict, MutantVerdict::killed) << m.mutant << ": " << m.by;
    }
  }
  EXPECT_DOUBLE_EQ(r.score(), 1.0);
  EXPECT_THAT(r.table(), ::testing::HasSubstr("3 mutants"));
  EXPECT_EQ(r.json()["killed"], 2);
}

}  // namespace
}  // namespace cutcheck
