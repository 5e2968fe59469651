// Every cut authors, verifies and runs; the text never depends on the weights folder;
// bad run-time values are refused with a clear error.
#include <gmock/gmock.h>

#include <cmath>

#include "author/author.h"
#include "core/error.h"
#include "harness/runner.h"
#include "model/signature.h"
#include "model/weights.h"
#include "program/inputs.h"
#include "program/text.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;

class EveryCut : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryCut, AuthorsVerifiesAndRuns) {
  ModelSpec spec = builtin_spec(GetParam());
  TensorMap weights = synthetic_weights(spec, 3);
  for (CutKind kind : all_cut_kinds()) {
    Cut cut{kind, spec.layers - 1, 3, 8};
    SCOPED_TRACE(cut.str());
    Authored a = write(cut, spec, "weights");
    Program p = parse_and_verify(a.text, cut.str());
    EXPECT_NO_THROW(verify_manifest(p, a.manifest, "manifest"));
    CutSignature sig = signature(cut, spec);
    ASSERT_EQ(p.inputs.size(), sig.inputs.size());
    for (size_t i = 0; i < sig.inputs.size(); ++i) EXPECT_EQ(p.type(p.inputs[i].value), sig.inputs[i].type);
    Executable exe(std::move(p), weights);
    TensorMap out = exe.run(random_inputs(exe.program(), 11));
    ASSERT_EQ(out.size(), sig.outputs.size());
    for (const Port& port : sig.outputs) {
      ASSERT_TRUE(out.count(port.name)) << port.name;
      EXPECT_EQ(out.at(port.name).type(), port.type) << port.name;
      if (port.type.dtype == DType::f32) {
        for (float v : out.at(port.name).as<float>()) ASSERT_TRUE(std::isfinite(v)) << port.name;
      }
    }
    if (out.count("next")) {
      for (int32_t t : out.at("next").as<int32_t>()) EXPECT_TRUE(t >= 0 && t < spec.vocab);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, EveryCut, ::testing::Values("tiny", "stories260K"));

TEST(Run, ThreadsGiveTheSameBits) {
  ModelSpec spec = builtin_spec("stories260K");
  spec.vocab = 4096;  // a head large enough to be split between threads
  const TensorMap weights = synthetic_weights(spec, 2);
  const Cut cut = Cut::batch(3, 16);
  const Program program = authored_program(cut, spec);
  const TensorMap in = random_inputs(program, 4);
  // Against the naive dot_general on one thread: the tiled kernel's blocking and its
  // split between threads leave every sum as the definition writes it.
  RunOptions naive, two;
  naive.kernels = [](OpKind kind) -> Kernel { return kind == OpKind::dot_general ? dot_general_naive : kernel_for(kind); };
  two.threads = 2;
  TensorMap want = Executable(program, weights, naive).run(in), two_threads = Executable(program, weights, two).run(in);
  for (const auto& [name, t] : want) EXPECT_TRUE(t.same_bits(two_threads.at(name))) << name;
}

// The text does not depend on the weights folder: the property dir_independence (test_properties).

TEST(Author, ManifestNamesEveryDeclaredWeight) {
  ModelSpec spec = builtin_spec("tiny");
  spec.tied = false;
  Authored head = write(Cut::decode_head(), spec, "w");
  std::vector<std::string> names;
  for (const ManifestWeight& w : head.manifest.weights) names.push_back(w.name);
  EXPECT_THAT(names, ::testing::ElementsAre("norm", "output"));
  spec.tied = true;
  Authored tied = write(Cut::decode_head(), spec, "w");
  EXPECT_EQ(tied.manifest.weights.back().name, "tok_embeddings");
}

TEST(Author, RefusesImpossibleCutsWithAReason) {
  ModelSpec spec = builtin_spec("tiny");
  try {
    write(Cut::batch_layer(7, 2, 4), spec, "w");
    FAIL();
  } catch (const Refused& e) {
    EXPECT_THAT(e.what(), HasSubstr("layer 7 does not exist"));
  }
  EXPECT_THROW(write(Cut::prefill(0, 4), spec, "w"), Refused);
  EXPECT_THROW(write(Cut::decode(0), spec, "w"), Refused);
  try {
    write(Cut::prefill(9, 8), spec, "w");
    FAIL();
  } catch (const Refused& e) {
    EXPECT_THAT(e.what(), HasSubstr("rows (9) exceed ctx (8), so no position satisfies pos + rows <= ctx"));
  }
  ModelSpec bad = spec;
  bad.kv_heads = 3;
  EXPECT_THROW(write(Cut::decode(4), bad, "w"), SpecError);
}

// The error message when running `cut` with `inputs` changed by `edit`.
template <class Edit>
std::string run_error(const Cut& cut, Edit edit) {
  ModelSpec spec = builtin_spec("tiny");
  ReferenceRunner runner(spec, synthetic_weights(spec, 1));
  TensorMap inputs = random_inputs(authored_program(cut, spec), 5);
  edit(inputs);
  try {
    runner.run(cut, inputs);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Run, RefusesBadRunTimeValues) {
  EXPECT_THAT(run_error(Cut::decode(8), [](TensorMap& in) { in["token"] = Tensor::scalar_i32(32); }),
              HasSubstr("input 'token' holds 32 at element 0, outside its range [0, 31]"));
  EXPECT_THAT(run_error(Cut::decode(8), [](TensorMap& in) { in["pos"] = Tensor::scalar_i32(8); }),
              HasSubstr("input 'pos' holds 8"));
  EXPECT_THAT(run_error(Cut::prefill(3, 8), [](TensorMap& in) { in["pos"] = Tensor::scalar_i32(6); }),
              HasSubstr("input 'pos' holds 6 at element 0, outside its range [0, 5]"));
  EXPECT_THAT(run_error(Cut::batch(2, 8), [](TensorMap& in) { in["pos"] = Tensor::of_i32({2}, {0, -1}); }),
              HasSubstr("input 'pos' holds -1 at element 1"));
  EXPECT_THAT(run_error(Cut::batch_embed(2), [](TensorMap& in) { in["tokens"] = Tensor::of_i32({2}, {3, -5}); }),
              HasSubstr("input 'tokens' holds -5"));
  EXPECT_THAT(run_error(Cut::decode(8), [](TensorMap& in) { in.erase("k.1"); }), HasSubstr("input 'k.1' (f32[8,2,4]) was not given"));
  EXPECT_THAT(run_error(Cut::decode(8), [](TensorMap& in) { in["k.1"] = Tensor({DType::f32, {8, 2, 3}}); }),
              HasSubstr("input 'k.1' is f32[8,2,3], the program declares f32[8,2,4]"));
  EXPECT_THAT(run_error(Cut::decode(8), [](TensorMap& in) { in["extra"] = Tensor::scalar_i32(0); }),
              HasSubstr("input 'extra' is not an input of the program"));
}

}  // namespace
}  // namespace cutcheck
