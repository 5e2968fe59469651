#include "harness/compose.h"

#include <fmt/format.h>

#include "core/error.h"
#include "model/signature.h"

namespace cutcheck {

std::vector<Cut> pieces_of(const Cut& whole, const ModelSpec& spec) {
  std::vector<Cut> out;
  const int64_t R = whole.rows, C = whole.ctx;
  switch (whole.kind) {
    case CutKind::decode:
      out.push_back(Cut::decode_embed());
      for (int64_t l = 0; l < spec.layers; ++l) out.push_back(Cut::decode_layer(l, C));
      out.push_back(Cut::decode_head());
      break;
    case CutKind::batch:
      out.push_back(Cut::batch_embed(R));
      for (int64_t l = 0; l < spec.layers; ++l) out.push_back(Cut::batch_layer(l, R, C));
      out.push_back(Cut::batch_head(R));
      break;
    case CutKind::prefill:
      out.push_back(Cut::batch_embed(R));
      for (int64_t l = 0; l < spec.layers; ++l) out.push_back(Cut::prefill_layer(l, R, C));
      out.push_back(Cut::prefill_head(R));
      break;
    case CutKind::forward:
      out.push_back(Cut::decode_embed());
      for (int64_t l = 0; l < spec.layers; ++l) out.push_back(Cut::forward_layer(l));
      out.push_back(Cut::forward_head());
      break;
    default:
      throw Error(fmt::format("{} is a piece, not a whole cut", whole.str()));
  }
  return out;
}

TensorMap run_pieces(CutRunner& runner, const ModelSpec& spec, const std::vector<Cut>& pieces, const TensorMap& inputs) {
  TensorMap known = inputs, result;
  for (const Cut& piece : pieces) {
    TensorMap in;
    for (const Port& port : signature(piece, spec).inputs) {
      auto it = known.find(port.name);
      if (it == known.end()) throw InputError(fmt::format("{} needs '{}', which nothing provides", piece.str(), port.name));
      in.emplace(port.name, it->second);
    }
    for (auto& [name, t] : runner.run(piece, in)) {
      known[name] = t;
      result[name] = t;
    }
  }
  result.erase("x");
  return result;
}

}  // namespace cutcheck
