// The property catalog holds for the reference, and each property catches the bugs
// planted for it: a property no planted bug can fail would prove nothing.
#include <gmock/gmock.h>

#include <cmath>
#include <cstring>
#include <regex>

#include <fmt/format.h>

#include "core/error.h"
#include "core/safetensors.h"
#include "harness/compose.h"
#include "harness/split.h"
#include "model/sharding.h"
#include "model/signature.h"
#include "program/text.h"
#include "properties/check.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

constexpr int catalog_cases = 100;  // per property; `cutcheck check` defaults to the same
constexpr int planted_cases = 300;  // a planted bug must show within this many

class Catalog : public ::testing::TestWithParam<std::string> {};

TEST_P(Catalog, HoldsForTheReference) {
  CheckResult r = check(find_property(GetParam()), Subject::reference(), {catalog_cases, 1});
  EXPECT_TRUE(r.passed) << r.failure << "\n" << r.counterexample << "\n" << r.reproduce;
  EXPECT_EQ(r.cases, catalog_cases);
}

std::vector<std::string> catalog_names() {
  std::vector<std::string> names;
  for (const Property& p : catalog()) names.push_back(p.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Properties, Catalog, ::testing::ValuesIn(catalog_names()), [](const auto& info) {
  std::string n = info.param;
  std::replace(n.begin(), n.end(), '.', '_');
  return n;
});

// --- planting bugs --------------------------------------------------------------------

// The reference with the fault `name` written into the cuts `where` picks.
Subject planted(const std::string& name, std::function<bool(const Cut&)> where) {
  Subject s = Subject::reference();
  const Fault& fault = find_fault(name);
  s.runner = [&fault, where](const ModelSpec& spec, const TensorMap& weights) -> std::unique_ptr<CutRunner> {
    return std::make_unique<RoutedRunner>(where, std::make_unique<ReferenceRunner>(spec, weights),
                                          std::make_unique<ReferenceRunner>(spec, weights, with_fault(fault, spec)));
  };
  return s;
}

bool is_piece(const Cut& c) { return c.part() != Part::whole; }
bool is_kind(const Cut& c, CutKind k) { return c.kind == k; }

// A runner that edits what another runner returns.
class EditingRunner : public CutRunner {
 public:
  EditingRunner(std::unique_ptr<CutRunner> inner, std::function<void(const Cut&, TensorMap&)> edit)
      : inner_(std::move(inner)), edit_(std::move(edit)) {}
  TensorMap run(const Cut& cut, const TensorMap& inputs) override {
    TensorMap out = inner_->run(cut, inputs);
    edit_(cut, out);
    return out;
  }

 private:
  std::unique_ptr<CutRunner> inner_;
  std::function<void(const Cut&, TensorMap&)> edit_;
};

Subject with_edit(std::function<void(const Cut&, TensorMap&)> edit) {
  Subject s = Subject::reference();
  s.runner = [edit](const ModelSpec& spec, const TensorMap& weights) -> std::unique_ptr<CutRunner> {
    return std::make_unique<EditingRunner>(std::make_unique<ReferenceRunner>(spec, weights), edit);
  };
  return s;
}

void expect_caught(const std::string& property, const Subject& planted) {
  CheckResult r = check(find_property(property), planted, {planted_cases, 1});
  EXPECT_FALSE(r.passed) << property << " did not catch the planted bug in " << planted_cases << " cases";
  if (!r.passed) {
    EXPECT_THAT(r.failure, ::testing::Not(::testing::IsEmpty()));
    std::printf("%s caught it after %d passing cases: %s\n", property.c_str(), r.cases, r.failure.c_str());
  }
}

TEST(Planted, CompositionCatchesFaultyPieces) {
  expect_caught("composition.decode", planted("rope-position-off-by-one", is_piece));
  expect_caught("composition.batch", planted("kv-write-wrong-row", is_piece));
  expect_caught("composition.prefill", planted("causal-mask-off-by-one", is_piece));
  expect_caught("composition.forward", planted("swiglu-gate-up-swapped", is_piece));
}

TEST(Planted, CompositionCatchesADroppedLayer) {
  Subject s = Subject::reference();
  s.pieces = [](const Cut& whole, const ModelSpec& spec) {
    std::vector<Cut> p = pieces_of(whole, spec);
    p.erase(p.begin() + 1);  // the first layer
    return p;
  };
  for (const char* name : {"composition.decode", "composition.batch", "composition.prefill", "composition.forward"})
    expect_caught(name, s);
}

TEST(Planted, OracleCatchesEveryKnobsFault) {
  // Each acts only on the random specs that have its knob, about a quarter of them.
  for (const char* fault : {"rope-scaling-ignored", "attention-bias-dropped", "qk-norm-skipped", "sliding-window-off-by-one"})
    expect_caught("oracle", planted(fault, [](const Cut&) { return true; }));
}

TEST(Planted, OracleCatchesWrongRotaryGqaAndEpsilon) {
  auto everywhere = [](const Cut&) { return true; };
  expect_caught("oracle", planted("rope-style-swapped", everywhere));
  expect_caught("oracle", planted("gqa-mapping-wrong", everywhere));
  expect_caught("oracle", planted("norm-eps-wrong", everywhere));
  expect_caught("oracle", planted("rope-position-off-by-one", everywhere));
}

TEST(Planted, BatchInvarianceCatchesMixedRowsAndSwappedCacheRows) {
  expect_caught("batch_invariance", planted("batch-rows-mixed", [](const Cut& c) { return is_kind(c, CutKind::batch); }));
  // A backend that writes row 0's cache where row 1's belongs, and the reverse.
  expect_caught("batch_invariance", with_edit([](const Cut& cut, TensorMap& out) {
                  if (cut.kind != CutKind::batch || cut.rows < 2) return;
                  for (auto& [name, t] : out) {
                    if (!name.starts_with("k.")) continue;
                    Tensor swapped = t.clone();
                    size_t row = t.bytes() / size_t(cut.rows);
                    std::memcpy(swapped.raw_mut().data(), t.raw().data() + row, row);
                    std::memcpy(swapped.raw_mut().data() + row, t.raw().data(), row);
                    t = swapped;
                  }
                }));
}

TEST(Planted, ChunkingCatchesPrefillBugs) {
  expect_caught("chunking", planted("prefill-head-first-row", [](const Cut& c) { return c.rows > 1; }));
  expect_caught("chunking", planted("causal-mask-off-by-one", [](const Cut& c) { return is_kind(c, CutKind::prefill); }));
}

TEST(Planted, ForwardIsDecodeCatchesAWrongNormEpsilon) {
  // (Shifting Forward's rotary position would not do: a lone token's score with itself
  // depends only on the relative position, which stays 0.)
  expect_caught("forward_is_decode_at_0",
                planted("norm-eps-wrong", [](const Cut& c) { return is_kind(c, CutKind::forward); }));
}

TEST(Planted, DontCareRowsCatchesAMaskThatReadsOneRowTooFar) {
  expect_caught("dont_care_rows", planted("causal-mask-off-by-one", [](const Cut&) { return true; }));
}

TEST(Planted, DeterminismCatchesStateLeakingBetweenRuns) {
  // A backend whose results depend on what it ran before: every other run differs.
  auto runs = std::make_shared<int>(0);
  expect_caught("determinism", with_edit([runs](const Cut&, TensorMap& out) {
                  if (++*runs % 2 == 0) return;
                  for (auto& [name, t] : out)
                    if (t.dtype() == DType::f32 && t.elements() > 0) {
                      t = t.clone();
                      t.as_mut<float>()[0] = std::nextafter(t.as<float>()[0], INFINITY);
                    }
                }));
}

TEST(Planted, DefinitionsCatchAFastKernelOffInItsLastElement) {
  // A contraction kernel whose last result element is one ulp high, as a tail tile summed
  // in another order would leave it.
  RunOptions faulty;
  faulty.kernels = [](OpKind kind) -> Kernel {
    if (kind != OpKind::dot_general) return kernel_for(kind);
    return [](const Operation& op, Operands in, Tensor& out) {
      eval_dot_general(op, in, out);
      auto y = out.as_mut<float>();
      if (!y.empty()) y.back() = std::nextafter(y.back(), INFINITY);
    };
  };
  Subject s = Subject::reference();
  s.runner = [faulty](const ModelSpec& spec, const TensorMap& weights) -> std::unique_ptr<CutRunner> {
    return std::make_unique<ReferenceRunner>(spec, weights, ProgramEdit{}, faulty);
  };
  expect_caught("definitions", s);
}

TEST(Planted, DirIndependenceCatchesTextThatNamesTheFolder) {
  Subject s = Subject::reference();
  s.write = [](const Cut& cut, const ModelSpec& spec, const std::string& dir) {
    Authored a = write(cut, spec, dir);
    a.program.label += " weights from " + dir;
    a.text = print(a.program);
    return a;
  };
  expect_caught("dir_independence", s);
  Subject outside = Subject::reference();
  outside.write = [](const Cut& cut, const ModelSpec& spec, const std::string& dir) {
    Authored a = write(cut, spec, dir);
    for (ManifestWeight& w : a.manifest.weights) w.file = "../" + w.file;
    return a;
  };
  expect_caught("dir_independence", outside);
}

TEST(Planted, RoundTripsCatchLossyCodecs) {
  Subject lossy_text = Subject::reference();
  lossy_text.print = [](const Program& p) {  // six significant digits, as a careless printer would
    Program q = p;
    for (Operation& op : q.ops)
      if (op.kind == OpKind::constant) op.attrs[0] = std::stod(fmt::format("{:.6g}", op.number("value")));
    return print(q);
  };
  lossy_text.parse = [](const std::string& text) {
    Program p = parse_and_verify(text);
    for (Operation& op : p.ops)
      if (op.kind == OpKind::constant) op.attrs[0] = std::stod(fmt::format("{:.6g}", op.number("value")));
    return p;
  };
  expect_caught("roundtrip.program", lossy_text);

  Subject cut_text = Subject::reference();
  cut_text.cut_text = [](const Cut& c) {  // writes ctx where rows belongs
    Cut d = c;
    if (cut_params(c.kind).rows && cut_params(c.kind).ctx) d.rows = c.ctx;
    return d.str();
  };
  expect_caught("roundtrip.cut", cut_text);

  Subject spec_text = Subject::reference();
  spec_text.spec_text = [](const ModelSpec& spec) {
    Json j = spec.to_json();
    j["norm_eps"] = std::stod(fmt::format("{:.1g}", spec.norm_eps * 3));
    return j.dump();
  };
  expect_caught("roundtrip.spec", spec_text);

  Subject tensors = Subject::reference();
  tensors.encode = [](const TensorMap& t) {  // writes every shape reversed
    TensorMap r;
    for (const auto& [name, x] : t) {
      Shape s = x.shape();
      std::reverse(s.begin(), s.end());
      r.emplace(name, x.reshaped(s));
    }
    return encode_safetensors(r);
  };
  expect_caught("roundtrip.safetensors", tensors);
}

TEST(Planted, RefusalsCatchAcceptingTooMuchAndTooLittle) {
  Subject lenient = Subject::reference();
  lenient.write = [](const Cut& cut, const ModelSpec& spec, const std::string& dir) {
    Cut c = cut;
    if (cut_params(c.kind).layer && c.layer == spec.layers) c.layer -= 1;  // off by one: authors the last layer
    return write(c, spec, dir);
  };
  expect_caught("refusals", lenient);
  Subject strict = Subject::reference();
  strict.write = [](const Cut& cut, const ModelSpec& spec, const std::string& dir) {
    if (cut.kind == CutKind::batch && cut.rows > cut.ctx) throw Refused("batch rows beyond ctx");
    return write(cut, spec, dir);
  };
  expect_caught("refusals", strict);
}

// The reference split with `make` building the split runner from the unsplit weights.
Subject with_split(std::function<std::unique_ptr<CutRunner>(const ModelSpec&, const TensorMap&, int64_t)> make) {
  Subject s = Subject::reference();
  s.split_runner = std::move(make);
  return s;
}

TEST(Planted, SplitCatchesAMissingAllReduce) {
  expect_caught("tp.split_equals_unsplit", with_split([](const ModelSpec& spec, const TensorMap& w, int64_t tp) {
                  return std::make_unique<SplitRunner>(spec, w, tp, with_fault(find_fault("all-reduce-dropped"), spec));
                }));
}

TEST(Planted, SplitCatchesAWrongHeadToChipMapping) {
  // Chip c gets the query heads (wq rows and wo columns) of chip c + 1.
  expect_caught("tp.split_equals_unsplit", with_split([](const ModelSpec& spec, const TensorMap& w, int64_t tp) {
                  std::vector<TensorMap> shards;
                  for (int64_t c = 0; c < tp; ++c) shards.push_back(shard_weights(w, spec, tp, c));
                  for (int64_t c = 0; c < tp; ++c) {
                    TensorMap next = shard_weights(w, spec, tp, (c + 1) % tp);
                    for (auto& [name, t] : shards[size_t(c)])
                      if (name.ends_with(".wq") || name.ends_with(".wo")) t = next.at(name);
                  }
                  return std::make_unique<SplitRunner>(spec, std::move(shards));
                }));
}

// Hands a split runner caches whose kv-head slices are rotated by one chip, as a backend
// that gives chip c the cache of chip c + 1 would.
class WrongKvSlice : public CutRunner {
 public:
  WrongKvSlice(std::unique_ptr<CutRunner> inner, int64_t tp) : inner_(std::move(inner)), tp_(tp) {}
  TensorMap run(const Cut& cut, const TensorMap& inputs) override {
    TensorMap in = inputs;
    for (auto& [name, t] : in) {
      if (!name.starts_with("k.") && !name.starts_with("v.")) continue;
      std::vector<Tensor> slices;
      for (int64_t c = 0; c < tp_; ++c) slices.push_back(shard_cache(t, tp_, (c + 1) % tp_));
      t = gather_cache(slices);
    }
    return inner_->run(cut, in);
  }

 private:
  std::unique_ptr<CutRunner> inner_;
  int64_t tp_;
};

TEST(Planted, SplitCatchesAWrongKvHeadSlice) {
  expect_caught("tp.split_equals_unsplit", with_split([](const ModelSpec& spec, const TensorMap& w, int64_t tp) {
                  return std::make_unique<WrongKvSlice>(std::make_unique<SplitRunner>(spec, w, tp), tp);
                }));
}

TEST(Planted, SplitRefusalsCatchSplittingTooMuch) {
  Subject s = Subject::reference();
  s.write_split = [](const Cut& cut, const ModelSpec& spec, const std::string& dir, int64_t tp) {
    if (cut.kind == CutKind::prefill) {  // "splits" a prefill by handing every chip the unsplit program
      Authored a = write(cut, spec, dir);
      return std::vector<Authored>(size_t(tp), a);
    }
    return write_split(cut, spec, dir, tp);
  };
  expect_caught("tp.refusals", s);
}

TEST(Planted, CounterexamplesShrinkAndSayHowToReproduce) {
  CheckResult r = check(find_property("composition.decode"), planted("rope-position-off-by-one", is_piece),
                        {planted_cases, 1});
  ASSERT_FALSE(r.passed);
  EXPECT_THAT(r.counterexample, ::testing::HasSubstr("cut decode{ctx="));
  EXPECT_THAT(r.counterexample, ::testing::HasSubstr("seed"));
  // Shrunk towards the smallest spec: one layer, and vocab and dim near their least (the
  // exact values are RapidCheck's to choose).
  auto field = [&](const std::string& name) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(r.counterexample, m, std::regex(" " + name + "=([0-9]+)"))) << name;
    return m.empty() ? -1 : std::stoll(m[1]);
  };
  EXPECT_EQ(field("layers"), 1);
  EXPECT_THAT(field("vocab"), ::testing::AllOf(::testing::Ge(2), ::testing::Le(4)));
  EXPECT_THAT(field("dim"), ::testing::AllOf(::testing::Ge(1), ::testing::Le(4)));
  EXPECT_THAT(r.reproduce, ::testing::HasSubstr("reproduce="));
  std::printf("shrunk: %s", r.counterexample.c_str());
  // The reproduce string replays exactly that case.
  CheckOptions replay{planted_cases, 1, true, r.reproduce};
  CheckResult again = check(find_property("composition.decode"), planted("rope-position-off-by-one", is_piece), replay);
  EXPECT_FALSE(again.passed);
  EXPECT_EQ(again.counterexample, r.counterexample);
}

}  // namespace
}  // namespace cutcheck
