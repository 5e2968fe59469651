// The 14 cuts of a decoder's computation, and their text form: `decode{ctx=16}`,
// `batch_layer{layer=2,rows=4,ctx=32}`, `forward`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/spec.h"

namespace cutcheck {

enum class CutKind {
  decode,         // Decode{ctx}
  prefill,        // Prefill{rows,ctx}
  batch,          // Batch{rows,ctx}
  forward,        // Forward
  forward_layer,  // ForwardLayer{layer}
  forward_head,   // ForwardHead
  decode_embed,   // DecodeEmbed
  decode_layer,   // DecodeLayer{layer,ctx}
  decode_head,    // DecodeHead
  batch_embed,    // BatchEmbed{rows}
  batch_layer,    // BatchLayer{layer,rows,ctx}
  batch_head,     // BatchHead{rows}
  prefill_layer,  // PrefillLayer{layer,rows,ctx}
  prefill_head,   // PrefillHead{rows}
};

std::vector<CutKind> all_cut_kinds();
std::string cut_kind_name(CutKind kind);  // "batch_layer"

// Which parameters a kind carries.
struct CutParams {
  bool layer, rows, ctx;
};
CutParams cut_params(CutKind kind);

// How a cut's rows relate to one another.
enum class Family {
  decode,   // one row, its own position, a [C,K,E] cache per layer
  batch,    // R independent rows, each with its own position and [C,K,E] cache
  prefill,  // R consecutive rows from one position, sharing a [C,K,E] cache
  forward,  // one row at position 0, no cache
};
Family cut_family(CutKind kind);

// Which part of the model a cut computes.
enum class Part { whole, embed, layer, head };
Part cut_part(CutKind kind);

struct Cut {
  CutKind kind = CutKind::forward;
  int64_t layer = 0;  // meaningful only where cut_params(kind).layer
  int64_t rows = 0;   // ... .rows
  int64_t ctx = 0;    // ... .ctx

  static Cut decode(int64_t ctx) { return {CutKind::decode, 0, 0, ctx}; }
  static Cut prefill(int64_t rows, int64_t ctx) { return {CutKind::prefill, 0, rows, ctx}; }
  static Cut batch(int64_t rows, int64_t ctx) { return {CutKind::batch, 0, rows, ctx}; }
  static Cut forward() { return {CutKind::forward, 0, 0, 0}; }
  static Cut forward_layer(int64_t layer) { return {CutKind::forward_layer, layer, 0, 0}; }
  static Cut forward_head() { return {CutKind::forward_head, 0, 0, 0}; }
  static Cut decode_embed() { return {CutKind::decode_embed, 0, 0, 0}; }
  static Cut decode_layer(int64_t layer, int64_t ctx) { return {CutKind::decode_layer, layer, 0, ctx}; }
  static Cut decode_head() { return {CutKind::decode_head, 0, 0, 0}; }
  static Cut batch_embed(int64_t rows) { return {CutKind::batch_embed, 0, rows, 0}; }
  static Cut batch_layer(int64_t layer, int64_t rows, int64_t ctx) { return {CutKind::batch_layer, layer, rows, ctx}; }
  static Cut batch_head(int64_t rows) { return {CutKind::batch_head, 0, rows, 0}; }
  static Cut prefill_layer(int64_t layer, int64_t rows, int64_t ctx) {
    return {CutKind::prefill_layer, layer, rows, ctx};
  }
  static Cut prefill_head(int64_t rows) { return {CutKind::prefill_head, 0, rows, 0}; }

  Family family() const { return cut_family(kind); }
  Part part() const { return cut_part(kind); }
  // Rows of activations the cut carries: 1 for decode and forward cuts.
  int64_t row_count() const { return cut_params(kind).rows ? rows : 1; }

  std::string str() const;  // canonical text form
  // Parses the text form; throws ParseError with the column of the problem.
  static Cut parse(const std::string& text, const std::string& source = "cut");

  // The reason this cut cannot exist for `spec`, if it cannot: layer >= layers,
  // rows = 0, ctx = 0, or a prefill whose rows exceed its ctx (no position could run
  // it). Nothing else is refused.
  std::optional<std::string> impossible_for(const ModelSpec& spec) const;
  // Throws Refused with that reason.
  void check_possible(const ModelSpec& spec) const;

  // Equal kinds with equal meaningful parameters (unused fields are ignored).
  bool operator==(const Cut& other) const;
};

struct CutHash {
  size_t operator()(const Cut& cut) const;
};

}  // namespace cutcheck
