#include "author/author.h"

#include <fmt/format.h>

#include <map>

#include "author/blocks.h"
#include "core/error.h"
#include "model/sharding.h"
#include "model/signature.h"
#include "program/folder.h"
#include "program/text.h"

namespace cutcheck {
namespace {

// Where the rows of a cut sit, from its inputs: decode has one position, batch one per
// row, prefill consecutive positions from pos, forward position 0.
Rows cut_rows(Builder& b, ModelWriter& m, const Cut& cut, std::map<std::string, ValueId>& in) {
  const int64_t R = cut.row_count();
  switch (cut.family()) {
    case Family::decode:
      return m.rows(CacheLayout::shared, b.reshape(in.at("pos"), {1}, "positions"), in.at("pos"));
    case Family::batch:
      return m.rows(CacheLayout::per_row, in.at("pos"), -1);
    case Family::prefill: {
      ValueId start = b.broadcast(in.at("pos"), {R}, {}, "positions.start");
      ValueId offset = b.iota(0, {DType::i32, {R}}, "positions.offset");
      return m.rows(CacheLayout::shared, b.binary(OpKind::add, start, offset, "positions"), in.at("pos"));
    }
    case Family::forward:
      return m.rows(CacheLayout::own, b.constant(0, {DType::i32, {1}}, "positions"), -1);
  }
  throw Error("unknown cut family");
}

// The program of a cut, or of one chip of its split: a chip computes the cut of the
// narrower model chip_spec(spec, tp) and sums its partial projections over the chips.
Program author_cut(const Cut& cut, const ModelSpec& spec, int64_t tp, std::optional<Replica> replica) {
  const ModelSpec local = chip_spec(spec, tp);
  const CutSignature sig = signature(cut, local);
  const Family family = cut.family();
  const Part part = cut.part();
  const bool single = family == Family::decode || family == Family::forward;  // no row dimension outside
  const int64_t D = spec.dim, V = spec.vocab;

  Builder b(cut.str(), replica);
  std::map<std::string, ValueId> in, out;
  for (const Port& port : sig.inputs) {
    std::optional<std::pair<int64_t, int64_t>> range;
    if (port.range) range = std::pair{port.range->lo, port.range->hi};
    in[port.name] = b.input(port.name, port.type, range);
  }
  ModelWriter m(b, spec, Shard{local.heads, local.kv_heads, local.ffn, tp, replica.has_value()});

  ValueId x;
  if (part == Part::whole || part == Part::embed)
    x = m.embed(single ? b.reshape(in.at("token"), {1}, "tokens") : in.at("tokens"));
  else
    x = single ? b.reshape(in.at("x"), {1, D}, "x.rows") : in.at("x");

  if (part == Part::whole || part == Part::layer) {
    Rows rows = cut_rows(b, m, cut, in);
    int64_t first = part == Part::layer ? cut.layer : 0;
    int64_t last = part == Part::layer ? cut.layer + 1 : spec.layers;
    for (int64_t l = first; l < last; ++l) {
      Cache cache;
      if (rows.layout != CacheLayout::own) cache = {in.at(k_cache_name(l)), in.at(v_cache_name(l))};
      LayerOut layer = m.layer(l, rows, x, cache);
      x = layer.x;
      if (rows.layout != CacheLayout::own) {
        out[k_cache_name(l)] = layer.cache.k;
        out[v_cache_name(l)] = layer.cache.v;
      }
    }
  }

  if (part == Part::whole || part == Part::head) {
    if (family == Family::prefill) {
      // The prefill head reads off the last row.
      x = b.slice(x, {cut.rows - 1, 0}, {cut.rows, D}, "x.last");
    }
    HeadOut head = m.head(x);
    out["logits"] = family == Family::batch ? head.logits : b.reshape(head.logits, {V}, "logits.out");
    out["next"] = family == Family::batch ? head.next : b.reshape(head.next, {}, "next.out");
  } else {
    out["x"] = single ? b.reshape(x, {D}, "x.out") : x;
  }
  for (const Port& port : sig.outputs) b.output(port.name, out.at(port.name));
  return b.finish();
}

}  // namespace

Program author_program(const Cut& cut, const ModelSpec& spec) {
  spec.validate();
  cut.check_possible(spec);
  return author_cut(cut, spec, 1, std::nullopt);
}

Program author_chip_program(const Cut& cut, const ModelSpec& spec, int64_t tp, int64_t chip) {
  spec.validate();
  cut.check_possible(spec);
  if (auto why = split_unsupported(cut, spec, tp)) throw NotYet(*why);
  if (chip < 0 || chip >= tp) throw Error(fmt::format("chip {} is not one of 0..{}", chip, tp - 1));
  return author_cut(cut, spec, tp, Replica{chip, tp});
}

std::vector<Authored> write_split(const Cut& cut, const ModelSpec& spec, const std::string& dir, int64_t tp) {
  std::vector<Authored> chips;
  for (int64_t c = 0; c < tp; ++c) {
    Program program = author_chip_program(cut, spec, tp, c);
    Manifest manifest = unsplit_manifest(program, dir, about_cut(cut, spec, tp, c));
    for (ManifestWeight& w : manifest.weights)
      if (is_split_weight(w.name)) w.file = shard_file(tp, c);
    std::string text = print(program);
    chips.push_back({std::move(program), std::move(text), std::move(manifest)});
  }
  return chips;
}

Json about_cut(const Cut& cut, const ModelSpec& spec, int64_t tp, int64_t chip) {
  return {{"cut", cut.str()}, {"spec", spec.to_json()}, {"tp", tp}, {"chip", chip}};
}

About read_about(const Json& about, const std::string& source) {
  std::string where = source + ": about";
  About a;
  a.cut = Cut::parse(json_string(about, "cut", where), where + ".cut");
  a.spec = ModelSpec::from_json(json_field(about, "spec", where), where + ".spec");
  a.tp = json_int(about, "tp", where);
  a.chip = json_int(about, "chip", where);
  return a;
}

Manifest unsplit_manifest(const Program& program, const std::string& dir, Json about, const std::string& file) {
  Manifest manifest;
  manifest.dir = dir;
  manifest.about = std::move(about);
  for (const WeightDecl& w : program.weights)
    manifest.weights.push_back({program.name(w.value), file, program.name(w.value), program.type(w.value)});
  return manifest;
}

void write_cut_folder(const Cut& cut, const ModelSpec& spec, int64_t tp, const fs::path& weights, const fs::path& folder,
                      bool relative) {
  const fs::path to = fs::absolute(weights).lexically_normal();
  auto named_from = [&](const fs::path& program_folder) {
    return relative ? to.lexically_relative(fs::absolute(program_folder).lexically_normal()).string() : to.string();
  };
  std::vector<ProgramFolder> folders;
  if (tp == 1) {
    Authored a = write(cut, spec, named_from(folder));
    folders.push_back({std::move(a.program), std::move(a.manifest), std::move(a.text)});
  } else {
    for (Authored& chip : write_split(cut, spec, named_from(folder / "chip0"), tp))
      folders.push_back({std::move(chip.program), std::move(chip.manifest), std::move(chip.text)});
  }
  publish_program(folder, folders, tp > 1);
}

Authored write(const Cut& cut, const ModelSpec& spec, const std::string& dir) {
  Program program = author_program(cut, spec);
  std::string text = print(program);
  Manifest manifest = unsplit_manifest(program, dir, about_cut(cut, spec));
  return {std::move(program), std::move(text), std::move(manifest)};
}

}  // namespace cutcheck
