#include "properties/catalog.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/files.h"
#include "core/named.h"
#include "harness/compose.h"
#include "model/signature.h"
#include "model/weights.h"
#include "properties/compare.h"
#include "properties/generators.h"

using rc::gen::element;

namespace cutcheck {
namespace {

// A case's weights and a runner for them.
struct Session {
  const Subject& s;
  ModelSpec spec;
  TensorMap weights;
  std::unique_ptr<CutRunner> runner;
  Session(const Subject& s, const Case& c) : s(s), spec(c.spec), weights(s.weights(c)), runner(s.runner(c.spec, weights)) {}
  TensorMap run(const Cut& cut, const TensorMap& in) { return runner->run(cut, in); }
  // A run and, when the subject allows the tolerance, the reference's bounds of its outputs.
  Side side(const Cut& cut, const TensorMap& in) {
    Side out{run(cut, in), {}};
    if (s.agreement) out.bounds = s.bounds(spec, weights, cut, in, s.tolerance);
    return out;
  }
};

void expect_same(const TensorMap& want, const TensorMap& got, const std::string& what) {
  if (auto diff = bitwise_difference(want, got)) RC_FAIL(fmt::format("{}: {}", what, *diff));
}

// Two runs that compute the same thing: the same bits, or with a backend as the subject
// within the sum of their bounds (properties/agreement.h).
void expect_agree(const Subject& s, const Side& a, const Side& b, const std::string& what) {
  if (s.agreement) s.agreement->judge(a, b, what);
  else expect_same(a.values, b.values, what);
}

// The cache rows past what each row reads are don't-care on the way out (case.h): a
// backend may leave them as it likes, so with a backend as the subject both sides are
// compared without them. The reference's properties keep them (it copies them through).
Side settled(const Subject& s, Side side, const Case& c) {
  if (!s.agreement) return side;
  return {blank_unattended(std::move(side.values), c), blank_unattended(std::move(side.bounds), c)};
}

TensorMap caches_of(const TensorMap& outputs) {
  TensorMap out;
  for (const auto& [name, t] : outputs)
    if (name.starts_with("k.") || name.starts_with("v.")) out.emplace(name, t);
  return out;
}

// --- composition -----------------------------------------------------------------

void composition(const Subject& s, CutKind kind) {
  const Case c = *s.cases({kind});
  Session h(s, c);
  const TensorMap in = case_inputs(c);
  // The pieces compute the whole cut: the whole's bound is theirs too.
  const Side whole = h.side(c.cut, in);
  expect_agree(s, settled(s, whole, c),
               settled(s, {run_pieces(*h.runner, c.spec, s.pieces(c.cut, c.spec), in), whole.bounds}, c),
               fmt::format("{} against embed, layers and head", c.cut.str()));
}

// --- the reference against the oracle -------------------------------------------------

void oracle_agrees(const Subject& s) {
  const Case c = *gen_case(all_cut_kinds());  // any dim: the bound follows RMSNorm's conditioning
  const TensorMap weights = synthetic_weights(c.spec, c.weight_seed), in = case_inputs(c);
  // The runner's outputs within the reference's bounds of the oracle's (which computes in
  // double, as near exact as it matters).
  const Expected want{s.runner(c.spec, weights)->run(c.cut, in), s.bounds(c.spec, weights, c.cut, in, s.tolerance)};
  const Comparison cmp = compare(want, s.oracle(c.spec, weights)->run(c.cut, in), s.tolerance);
  if (!cmp.ok) RC_FAIL(fmt::format("{}: the reference against the oracle: {}", c.cut.str(), cmp.failure));
}

// --- batch invariance --------------------------------------------------------------

void batch_invariance(const Subject& s) {
  const Case c = *s.cases({CutKind::batch});
  Session h(s, c);
  const TensorMap in = case_inputs(c);
  const Side batch = settled(s, h.side(c.cut, in), c);
  for (int64_t r = 0; r < c.cut.rows; ++r) {
    TensorMap row_in{{"token", Tensor::scalar_i32(c.tokens[size_t(r)])}, {"pos", Tensor::scalar_i32(c.positions[size_t(r)])}};
    for (const auto& [name, t] : in)
      if (name.starts_with("k.") || name.starts_with("v.")) row_in.emplace(name, row_of(t, r));
    Case row = c;  // row r alone, as a decode case
    row.cut = Cut::decode(c.cut.ctx);
    row.tokens = {c.tokens[size_t(r)]};
    row.positions = {c.positions[size_t(r)]};
    expect_agree(s, part_of(batch, [r](const Tensor& t) { return row_of(t, r); }),
                 settled(s, h.side(row.cut, row_in), row), fmt::format("row {} of {} against decode", r, c.cut.str()));
  }
}

// --- chunking -------------------------------------------------------------------------

// Inputs for rows [first, first + count) of a prefill case, with the given caches.
TensorMap chunk_inputs(const Case& c, int64_t first, int64_t count, const TensorMap& caches) {
  TensorMap in = caches;
  std::vector<int32_t> tokens(c.tokens.begin() + first, c.tokens.begin() + first + count);
  in["tokens"] = Tensor::of_i32({count}, tokens);
  in["pos"] = Tensor::scalar_i32(c.positions[0] + int32_t(first));
  return in;
}

void chunking(const Subject& s) {
  const Case c = *s.cases({CutKind::prefill});
  Session h(s, c);
  const TensorMap in = case_inputs(c);
  const int64_t R = c.cut.rows, C = c.cut.ctx;
  // The steps and the chunks compute the whole prefill: its bound is theirs too.
  const Side whole = h.side(c.cut, in);

  TensorMap caches = caches_of(in), step;
  for (int64_t i = 0; i < R; ++i) {
    TensorMap d = caches;
    d["token"] = Tensor::scalar_i32(c.tokens[size_t(i)]);
    d["pos"] = Tensor::scalar_i32(c.positions[0] + int32_t(i));
    step = h.run(Cut::decode(C), d);
    caches = caches_of(step);
  }
  // The last step reads the rows the whole prefill reads: the same rows are don't-care.
  expect_agree(s, settled(s, whole, c), settled(s, {step, whole.bounds}, c),
               fmt::format("{} against {} decode step{}", c.cut.str(), R, R == 1 ? "" : "s"));

  if (R < 2) return;
  const int64_t a = *rc::gen::inRange<int64_t>(1, R);
  TensorMap first = h.run(Cut::prefill(a, C), chunk_inputs(c, 0, a, caches_of(in)));
  TensorMap second = h.run(Cut::prefill(R - a, C), chunk_inputs(c, a, R - a, caches_of(first)));
  expect_agree(s, settled(s, whole, c), settled(s, {second, whole.bounds}, c),
               fmt::format("{} against chunks of {} and {} rows", c.cut.str(), a, R - a));
}

// --- forward is decode at position 0 -------------------------------------------------

void forward_is_decode_at_zero(const Subject& s) {
  Case c = *s.cases({CutKind::decode});
  c.positions = {0};
  Session h(s, c);
  Side decode = h.side(c.cut, case_inputs(c));
  auto caches = [](const auto& e) { return e.first != "logits" && e.first != "next"; };  // forward has none
  std::erase_if(decode.values, caches);
  std::erase_if(decode.bounds, caches);
  expect_agree(s, decode, h.side(Cut::forward(), {{"token", Tensor::scalar_i32(c.tokens[0])}}),
               fmt::format("forward against {} at pos 0", c.cut.str()));
}

// --- don't-care cache rows --------------------------------------------------------------

void dont_care_rows(const Subject& s) {
  const Case c = *s.cases({CutKind::decode, CutKind::batch, CutKind::prefill, CutKind::decode_layer,
                            CutKind::batch_layer, CutKind::prefill_layer});
  const uint64_t other = *rc::gen::inRange<uint64_t>(0, 1000);
  Session h(s, c);
  // Only the garbage differs: the first run's bound is the second's.
  const Side a = h.side(c.cut, case_inputs(c, c.data_seed ^ 0x5eed));
  const Side b{h.run(c.cut, case_inputs(c, other ^ 0xbad)), a.bounds};
  auto blank = [&](const Side& side) { return Side{blank_unattended(side.values, c), blank_unattended(side.bounds, c)}; };
  expect_agree(s, blank(a), blank(b), fmt::format("{} with other garbage past the attended rows", c.cut.str()));
}

// --- determinism ----------------------------------------------------------------------------

// Exact whatever the subject: nothing excuses the same run giving other bits.
void determinism(const Subject& s) {
  const Case c = *s.cases(all_cut_kinds());
  const TensorMap in = case_inputs(c);
  Session h(s, c), fresh(s, c);
  auto run = [&](Session& on) { return settled(s, {on.run(c.cut, in), {}}, c).values; };
  const TensorMap first = run(h);
  expect_same(first, run(h), fmt::format("{} run twice", c.cut.str()));
  expect_same(first, run(fresh), fmt::format("{} run by a fresh interpreter", c.cut.str()));
}

// --- the fast interpreter computes the definitions ---------------------------------------

// Every cut as the interpreter runs it (tiled, vectorised, threaded contractions; the
// polynomial exp and logistic; planned and in-place steps; weights read as stored)
// against the reference's definitions alone, bit for bit.
void definitions(const Subject& s) {
  const Case c = *s.cases(all_cut_kinds());
  const TensorMap in = case_inputs(c);
  Session h(s, c);
  const TensorMap want = s.definitions(c.spec, h.weights)->run(c.cut, in);
  expect_same(want, h.run(c.cut, in), fmt::format("{} by the interpreter against the definitions", c.cut.str()));
}

// --- the weights folder does not reach the text ----------------------------------------

void dir_independence(const Subject& s) {
  const Case c = *gen_case(all_cut_kinds());
  const std::string d1 = *rc::gen::element<std::string>("w", "weights/run 1", "/abs/olute", "./x/y", "../up");
  const std::string d2 = *rc::gen::element<std::string>("v", "other", "/tmp/w", "a/b/c");
  const Authored a = s.write(c.cut, c.spec, d1), b = s.write(c.cut, c.spec, d2);
  if (auto diff = text_difference(a.text, b.text))
    RC_FAIL(fmt::format("{} authored for '{}' and for '{}': {}", c.cut.str(), d1, d2, *diff));
  RC_ASSERT(a.manifest.dir == d1);
  RC_ASSERT(b.manifest.dir == d2);
  if (!(a.manifest.weights == b.manifest.weights) || a.manifest.about != b.manifest.about)
    RC_FAIL(fmt::format("{}: the manifests for '{}' and '{}' differ in more than dir", c.cut.str(), d1, d2));
  for (const ManifestWeight& w : a.manifest.weights) {
    try {
      resolve_under(d1, w.file, "manifest");
    } catch (const IoError& e) {
      RC_FAIL(fmt::format("weight '{}' lies outside dir: {}", w.name, e.what()));
    }
  }
}

// --- round trips ---------------------------------------------------------------------------

// What `read_back` gives, or a failure saying what did not read back.
template <class ReadBack>
auto reads_back(ReadBack read_back, const std::string& what) {
  try {
    return read_back();
  } catch (const Error& e) {
    RC_FAIL(fmt::format("{} does not read back: {}", what, e.what()));
  }
}

void program_round_trip(const Subject& s) {
  const Case c = *gen_case(all_cut_kinds());
  const Authored a = s.write(c.cut, c.spec, "w");
  if (auto diff = text_difference(a.text, s.print(a.program)))
    RC_FAIL(fmt::format("{}: the text is not the printed program: {}", c.cut.str(), *diff));
  if (auto diff = text_difference(a.text, s.print(s.parse(a.text))))
    RC_FAIL(fmt::format("{}: printing the parsed text changes it: {}", c.cut.str(), *diff));
}

void cut_round_trip(const Subject& s) {
  const Case c = *gen_case(all_cut_kinds());
  const std::string text = s.cut_text(c.cut);
  const Cut back = reads_back([&] { return s.parse_cut(text); }, fmt::format("'{}'", text));
  if (!(back == c.cut) || s.cut_text(back) != text)
    RC_FAIL(fmt::format("'{}' parses back as '{}', not as {}", text, back.str(), c.cut.str()));
}

void spec_round_trip(const Subject& s) {
  const ModelSpec spec = *gen_spec();
  const ModelSpec back = reads_back([&] { return s.parse_spec(s.spec_text(spec)); }, "the JSON of " + spec.summary());
  if (!(back == spec)) RC_FAIL(fmt::format("{} reads back as {}", spec.summary(), back.summary()));
}

void safetensors_round_trip(const Subject& s) {
  const TensorMap tensors = *gen_tensor_map();
  const TensorMap back = reads_back([&] { return s.decode(s.encode(tensors)); }, "an encoded file");
  expect_same(tensors, back, "safetensors written and read");
}

// --- refusals -------------------------------------------------------------------------------

// The brief's rule, restated here rather than called, so that the author is checked
// against it: a layer must exist, rows and ctx must be at least 1, and a prefill's rows
// must fit its cache.
bool should_refuse(const Cut& cut, const ModelSpec& spec) {
  CutParams p = cut_params(cut.kind);
  return (p.layer && (cut.layer < 0 || cut.layer >= spec.layers)) || (p.rows && cut.rows < 1) ||
         (p.ctx && cut.ctx < 1) || (cut.family() == Family::prefill && p.ctx && cut.rows > cut.ctx);
}

void refusals(const Subject& s) {
  const ModelSpec spec = *gen_spec();
  const Cut params = *gen_any_cut(spec);
  for (CutKind kind : all_cut_kinds()) {  // the same parameters for every kind
    const Cut cut{kind, params.layer, params.rows, params.ctx};
    const bool refuse = should_refuse(cut, spec);
    try {
      s.write(cut, spec, "w");
    } catch (const Refused& e) {
      if (!refuse) RC_FAIL(fmt::format("{} was refused, but it is possible: {}", cut.str(), e.what()));
      continue;
    } catch (const std::exception& e) {
      RC_FAIL(fmt::format("{} failed with something other than a refusal: {}", cut.str(), e.what()));
    }
    if (refuse) RC_FAIL(fmt::format("{} was authored, but it is impossible for {}", cut.str(), spec.summary()));
  }
}

// --- tp splits ----------------------------------------------------------------------------

// Split == unsplit. The new k, v rows of a layer come from the replicated x and the chip's
// rows of wk, wv, so they are the unsplit bits wherever x is: in layer cuts, and in layer
// 0 of whole cuts. Later layers read an x that went through an all_reduce, which sums in
// another order than the unsplit projection, so there (as for x and logits) the
// tolerance applies.
void split_equals_unsplit(const Subject& s) {
  const Case c = *s.split_cases();
  const TensorMap weights = s.weights(c), in = case_inputs(c);
  const Expected unsplit{s.runner(c.spec, weights)->run(c.cut, in), s.bounds(c.spec, weights, c.cut, in, s.tolerance)};
  TensorMap split = s.split_runner(c.spec, weights, c.tp)->run(c.cut, in);
  const std::string what = fmt::format("{} split {} ways against unsplit", c.cut.str(), c.tp);
  // A backend's chips may sum the first layer's projections in another order than its
  // unsplit program does: there the bounds apply to the caches too.
  if (s.agreement)
    return s.agreement->judge(settled(s, {unsplit.values, unsplit.bounds}, c), settled(s, {split, unsplit.bounds}, c), what);
  if (auto diff = split_difference(c.cut, unsplit, std::move(split), s.tolerance)) RC_FAIL(fmt::format("{}: {}", what, *diff));
}

bool splittable(CutKind k) {
  return k == CutKind::decode || k == CutKind::batch || k == CutKind::decode_layer || k == CutKind::batch_layer;
}

// write_split refuses an impossible cut as authoring does; otherwise it splits exactly
// Decode, Batch, DecodeLayer and BatchLayer where tp divides heads, kv_heads and ffn, and
// says NotYet for the rest.
void split_refusals(const Subject& s) {
  const ModelSpec spec = *gen_spec();
  const Cut params = *gen_any_cut(spec);
  const int64_t tp = *element<int64_t>(1, 2, 3, 4);
  for (CutKind kind : all_cut_kinds()) {
    const Cut cut{kind, params.layer, params.rows, params.ctx};
    const bool divides = spec.heads % tp == 0 && spec.kv_heads % tp == 0 && spec.ffn % tp == 0;
    const char* want = should_refuse(cut, spec) ? "Refused" : splittable(kind) && divides ? "split" : "NotYet";
    std::string got = "split";
    try {
      std::vector<Authored> chips = s.write_split(cut, spec, "w", tp);
      if (int64_t(chips.size()) != tp) got = fmt::format("{} programs", chips.size());
    } catch (const Refused&) {
      got = "Refused";
    } catch (const NotYet&) {
      got = "NotYet";
    } catch (const std::exception& e) {
      got = e.what();
    }
    if (got != want)
      RC_FAIL(fmt::format("{} split {} ways: expected {}, got {} ({})", cut.str(), tp, want, got, spec.summary()));
  }
}

}  // namespace

const std::vector<Property>& catalog() {
  static const std::vector<Property> properties = {
      {"composition.decode", "Decode == DecodeEmbed, DecodeLayer 0..L-1, DecodeHead, bitwise",
       [](const Subject& s) { composition(s, CutKind::decode); }, true},
      {"composition.batch", "Batch == BatchEmbed, BatchLayer 0..L-1, BatchHead, bitwise",
       [](const Subject& s) { composition(s, CutKind::batch); }, true},
      {"composition.prefill", "Prefill == BatchEmbed, PrefillLayer 0..L-1, PrefillHead, bitwise",
       [](const Subject& s) { composition(s, CutKind::prefill); }, true},
      {"composition.forward", "Forward == DecodeEmbed, ForwardLayer 0..L-1, ForwardHead, bitwise",
       [](const Subject& s) { composition(s, CutKind::forward); }, true},
      {"oracle", "every cut of the reference == the oracle (Eigen, double), within the tolerance", oracle_agrees},
      {"batch_invariance", "row r of Batch == Decode on row r's token, position and cache, bitwise", batch_invariance, true},
      {"chunking", "Prefill of R rows == R Decode steps == Prefill in two chunks, bitwise", chunking, true},
      {"forward_is_decode_at_0", "Forward == Decode at position 0 with any cache, bitwise", forward_is_decode_at_zero, true},
      {"dont_care_rows", "cache rows past the attended range change no output", dont_care_rows, true},
      {"determinism", "the same program and inputs give the same bits, twice and on a fresh interpreter", determinism, true},
      {"definitions", "every cut by the interpreter's fast kernels == by the reference's definitions alone, bitwise",
       definitions},
      {"dir_independence", "the weights folder changes only the manifest's dir, and every weight lies under it",
       dir_independence},
      {"roundtrip.program", "program text prints back to itself after parsing", program_round_trip},
      {"roundtrip.cut", "cut text parses back to the same cut", cut_round_trip},
      {"roundtrip.spec", "a spec's JSON reads back to the same spec", spec_round_trip},
      {"roundtrip.safetensors", "tensors written as safetensors read back bit for bit", safetensors_round_trip},
      {"refusals", "authoring refuses exactly the impossible cuts", refusals},
      {"tp.split_equals_unsplit",
       "tp-split Decode, Batch, DecodeLayer, BatchLayer == unsplit within the tolerance; first-layer caches bitwise",
       split_equals_unsplit, true},
      {"tp.refusals", "write_split splits exactly the splittable cuts where tp divides the widths", split_refusals},
  };
  return properties;
}

const Property& find_property(const std::string& name) { return find_named(catalog(), name, "property"); }

}  // namespace cutcheck
