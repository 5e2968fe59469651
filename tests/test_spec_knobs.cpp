// The table of spec knobs (model/spec_knobs.h) against itself and its readers: every row's
// JSON, text, draw and `--fix` value agree with one another and with the spec, the spec
// space, the engine protocol and docs/spec-knobs.md. A knob added with a row that
// contradicts itself, or without its docs, fails here.
#include <gmock/gmock.h>

#include <random>
#include <set>

#include "core/files.h"
#include "engine/engine_case.h"
#include "engine/engine_protocol.h"
#include "model/spec_knobs.h"
#include "properties/spec_space.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;

const PickIndex first = [](size_t) { return size_t(0); };
const PickIndex last = [](size_t count) { return count - 1; };

// `knob` drawn on the tiny spec with the picks of a seeded sequence.
ModelSpec drawn(const SpecKnob& knob, const PickIndex& pick) {
  ModelSpec s = builtin_spec("tiny");
  knob.draw(pick, s);
  return s;
}

// The specs a knob's draws give: off (the shrunk draw), its last choices, and seeded mixes.
std::vector<ModelSpec> draws(const SpecKnob& knob) {
  std::vector<ModelSpec> out = {drawn(knob, first), drawn(knob, last)};
  for (uint32_t seed = 0; seed < 64; ++seed) {
    std::mt19937 rng(seed);
    out.push_back(drawn(knob, [&rng](size_t count) { return size_t(rng() % count); }));
  }
  return out;
}

TEST(SpecKnobTable, NamesAreUniqueAndNoneIsAPlainSpecField) {
  const Json plain = builtin_spec("tiny").to_json();
  std::set<std::string> seen;
  for (const SpecKnob& knob : spec_knobs()) {
    EXPECT_TRUE(seen.insert(knob.name).second) << knob.name << " is in the table twice";
    EXPECT_FALSE(plain.contains(knob.name)) << knob.name << " is a field of every spec";
    EXPECT_EQ(find_spec_knob(knob.name), &knob) << knob.name;
    EXPECT_FALSE(knob.is_set(ModelSpec{})) << knob.name << " is set in the default spec";
  }
  EXPECT_EQ(spec_knob_names().size(), spec_knobs().size());
  EXPECT_EQ(find_spec_knob("dim"), nullptr);
}

TEST(SpecKnobTable, EveryDrawRoundTripsThroughJsonTextAndFix) {
  for (const SpecKnob& knob : spec_knobs()) {
    SCOPED_TRACE(knob.name);
    EXPECT_FALSE(knob.is_set(drawn(knob, first))) << "a shrunk draw leaves the knob off";
    EXPECT_TRUE(knob.is_set(drawn(knob, last))) << "some draw sets the knob";
    for (const ModelSpec& s : draws(knob)) {
      SCOPED_TRACE(s.summary());
      ASSERT_NO_THROW(s.validate());
      const bool set = knob.is_set(s);
      for (const SpecKnob& other : spec_knobs()) {
        if (&other == &knob) continue;
        EXPECT_FALSE(other.is_set(s)) << "drawing " << knob.name << " set " << other.name;
      }
      // JSON: the key is there exactly when the knob is set, and reads back as the spec.
      const Json json = s.to_json();
      EXPECT_EQ(json.contains(knob.name), set);
      EXPECT_EQ(ModelSpec::from_json(json, "drawn"), s);
      // Text: the summary names the knob exactly when it is set.
      EXPECT_EQ(s.summary().find(" " + knob.name + "=") != std::string::npos, set);
      if (set) {
        EXPECT_EQ(json.at(knob.name), knob.write(s));
        EXPECT_THAT(s.summary(), HasSubstr(knob.summary(s)));
        // --fix: the knob's JSON value is a fixable value, and the spec space reads it back.
        SpecSpace space;
        ASSERT_NO_THROW(space.fix(knob.name + "=" + knob.write(s).dump()));
        ModelSpec fixed = builtin_spec("tiny");
        knob.read(space.fixed, "--fix", fixed);
        EXPECT_EQ(fixed, s) << fixed.summary();
      }
    }
  }
}

TEST(SpecKnobTable, TheOffValueHoldsEachKnobAtItsDefault) {
  for (const SpecKnob& knob : spec_knobs()) {
    SCOPED_TRACE(knob.name);
    ModelSpec s = drawn(knob, last);
    knob.read(Json{{knob.name, knob.off}}, "off", s);
    EXPECT_EQ(s, builtin_spec("tiny"));
    SpecSpace space;
    EXPECT_NO_THROW(space.fix(knob.name + "=" + knob.off.dump()));
  }
  // A space with every knob held off draws none of them.
  SpecSpace off;
  for (const SpecKnob& knob : spec_knobs()) off.fix(knob.name + "=" + knob.off.dump());
  for (int seed = 0; seed < 200; ++seed) {
    const ModelSpec s = gen_spec(off)(rc::Random(uint64_t(seed)), 100).value();
    for (const SpecKnob& knob : spec_knobs()) EXPECT_FALSE(knob.is_set(s)) << knob.name << " in " << s.summary();
  }
}

TEST(SpecKnobTable, EnginesDeclareEachKnobByItsName) {
  Json describe = Json::parse(R"({"format": "cutcheck-engine-1", "name": "e", "model_formats": ["gguf"],
                                  "precisions": ["f32"], "max_context": 64})");
  describe["knobs"] = spec_knob_names();
  const EngineDescription every = EngineDescription::from_json(describe, "describe");
  describe.erase("knobs");
  const EngineDescription none = EngineDescription::from_json(describe, "describe");
  for (const SpecKnob& knob : spec_knobs()) {
    SCOPED_TRACE(knob.name);
    const ModelSpec s = drawn(knob, last);
    EXPECT_EQ(every.refuses(s), "");
    EXPECT_EQ(none.refuses(s), "the engine does not declare the knob " + knob.name);
    EngineDescription one = none;
    one.knobs = {knob.name};
    EXPECT_EQ(one.refuses(s), "");
  }
  // An engine's cases carry no knob it did not declare.
  for (int seed = 0; seed < 100; ++seed) {
    const EngineCase c = gen_engine_case(none, {})(rc::Random(uint64_t(seed)), 100).value();
    EXPECT_EQ(none.refuses(c.spec), "") << c.str();
  }
}

TEST(SpecKnobTable, EveryKnobHasItsRowInTheDocs) {
  const std::string docs = test::read_whole(fs::path(CUTCHECK_TEST_SOURCE) / ".." / "docs" / "spec-knobs.md");
  for (const SpecKnob& knob : spec_knobs()) EXPECT_THAT(docs, HasSubstr("| `" + knob.name + "` |")) << knob.name;
}

}  // namespace
}  // namespace cutcheck
