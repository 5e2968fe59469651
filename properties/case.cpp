#include "properties/case.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "core/error.h"
#include "model/footprint.h"
#include "core/random.h"
#include "model/sharding.h"
#include "model/signature.h"

namespace cutcheck {
namespace {

struct Stream : SplitMix64 {
  float garbage() {
    switch (next() % 8) {
      case 0: return NAN;
      case 1: return INFINITY;
      case 2: return -INFINITY;
      case 3: return 3e38f;
      default: return 1000.0f * symmetric();
    }
  }
};

}  // namespace

std::string Case::str() const {
  return fmt::format("cut {}{}; tokens [{}]; positions [{}]; weight seed {}; data seed {}{}; spec {}", cut.str(),
                     tp > 1 ? fmt::format(" split {} ways", tp) : "", fmt::join(tokens, ","), fmt::join(positions, ","),
                     weight_seed, data_seed, k_scale != 1 ? fmt::format("; k scale {}", k_scale) : "", spec.summary());
}

Json Case::to_json() const {
  return {{"spec", spec.to_json()},   {"cut", cut.str()},           {"tokens", tokens},
          {"positions", positions},   {"weight_seed", weight_seed}, {"data_seed", data_seed},
          {"tp", tp},                 {"k_scale", k_scale}};
}

namespace {

// A case read from a file is checked as the generators would have made it: a token per
// row inside the vocabulary, one position per row for batch and one otherwise, each
// leaving room for the cut's rows in the cache, a tp the cut splits over.
void check_case(const Case& c, const std::string& source) {
  const int64_t rows = c.cut.row_count();
  if (int64_t(c.tokens.size()) != rows)
    throw FormatError(fmt::format("{}: tokens: {} given for the {} rows of {}", source, c.tokens.size(), rows, c.cut.str()));
  for (size_t i = 0; i < c.tokens.size(); ++i)
    if (c.tokens[i] < 0 || c.tokens[i] >= c.spec.vocab)
      throw FormatError(fmt::format("{}: tokens[{}] = {} is outside [0, vocab = {})", source, i, c.tokens[i], c.spec.vocab));
  const bool cached = cut_params(c.cut.kind).ctx;
  const size_t want = cached && c.cut.family() == Family::batch ? size_t(rows) : 1;
  if (c.positions.size() != want)
    throw FormatError(fmt::format("{}: positions: {} given, {} needs {}", source, c.positions.size(), c.cut.str(), want));
  const int64_t span = c.cut.family() == Family::prefill ? rows : 1;  // cache rows a position's step writes
  for (size_t i = 0; i < c.positions.size(); ++i) {
    const int64_t p = c.positions[i];
    if (!cached ? p != 0 : p < 0 || p + span > c.cut.ctx)
      throw FormatError(fmt::format("{}: positions[{}] = {} is outside what {} allows", source, i, p, c.cut.str()));
  }
  if (c.tp < 1) throw FormatError(fmt::format("{}: tp must be at least 1, got {}", source, c.tp));
  if (c.tp > 1)
    if (auto why = split_unsupported(c.cut, c.spec, c.tp)) throw FormatError(fmt::format("{}: tp: {}", source, *why));
  if (!std::isfinite(c.k_scale) || c.k_scale == 0)
    throw FormatError(fmt::format("{}: k_scale must be finite and non-zero, got {}", source, c.k_scale));
}

}  // namespace

Case Case::from_json(const Json& json, const std::string& source) {
  Case c;
  c.spec = ModelSpec::from_json(json_field(json, "spec", source), source + ": spec");
  c.cut = Cut::parse(json_string(json, "cut", source), source + ": cut");
  for (auto [key, list] : {std::pair{"tokens", &c.tokens}, {"positions", &c.positions}})
    for (int64_t v : json_int_list(json, key, source)) {
      if (v < INT32_MIN || v > INT32_MAX) throw FormatError(fmt::format("{}: {}: {} is not an i32", source, key, v));
      list->push_back(int32_t(v));
    }
  c.weight_seed = uint64_t(json_int(json, "weight_seed", source));
  c.data_seed = uint64_t(json_int(json, "data_seed", source));
  c.tp = json_int(json, "tp", source);
  c.k_scale = float(json_number(json, "k_scale", source));
  c.cut.check_possible(c.spec);
  check_run_fits(c.spec, c.cut, source);  // before the replay makes weights or caches
  check_case(c, source);
  return c;
}

void showValue(const Case& c, std::ostream& os) { os << c.str(); }

std::vector<int64_t> last_attended(const Case& c) {
  const bool cached = c.cut.family() != Family::forward && (c.cut.part() == Part::whole || c.cut.part() == Part::layer);
  if (!cached) return {};
  if (c.cut.family() == Family::batch) return {c.positions.begin(), c.positions.end()};
  if (c.cut.family() == Family::prefill) return {int64_t(c.positions[0]) + c.cut.rows - 1};
  return {c.positions[0]};
}

std::vector<int64_t> first_attended(const Case& c) {
  std::vector<int64_t> first = last_attended(c);
  if (first.empty()) return first;
  // The first row's window starts W - 1 before it: prefill's row 0 at pos, a decode or
  // batch row at its own position.
  if (c.cut.family() == Family::prefill) first = {c.positions[0]};
  for (int64_t& f : first) f = c.spec.sliding_window > 0 ? std::max<int64_t>(0, f - c.spec.sliding_window + 1) : 0;
  return first;
}

TensorMap blank_unattended(TensorMap outputs, const Case& c) {
  const std::vector<int64_t> first = first_attended(c), last = last_attended(c);
  for (auto& [name, t] : outputs) {
    if (last.empty() || (!name.starts_with("k.") && !name.starts_with("v.")) || t.dtype() != DType::f32 ||
        (t.type().rank() != 3 && t.type().rank() != 4))
      continue;
    t = t.clone();
    const CacheShape cache = CacheShape::of(t.shape());
    if (cache.caches > 1 && cache.caches != int64_t(last.size())) continue;
    auto v = t.as_mut<float>();
    for (int64_t r = 0; r < cache.caches; ++r) {
      const size_t i = size_t(cache.caches > 1 ? r : 0);
      for (int64_t pos = 0; pos < cache.ctx; ++pos)
        if (pos < first[i] || pos > last[i]) std::fill_n(v.begin() + cache.at(r, pos), cache.width, 0.0f);
    }
  }
  return outputs;
}

TensorMap case_inputs(const Case& c, uint64_t garbage_seed) {
  Stream data{c.data_seed}, garbage{garbage_seed};
  const std::vector<int64_t> first = first_attended(c), last = last_attended(c);
  TensorMap out;
  for (const Port& port : signature(c.cut, c.spec).inputs) {
    if (port.name == "token") {
      out.emplace(port.name, Tensor::scalar_i32(c.tokens.at(0)));
    } else if (port.name == "tokens") {
      out.emplace(port.name, Tensor::of_i32({int64_t(c.tokens.size())}, c.tokens));
    } else if (port.name == "pos") {
      out.emplace(port.name, port.type.rank() == 0 ? Tensor::scalar_i32(c.positions.at(0))
                                                   : Tensor::of_i32({int64_t(c.positions.size())}, c.positions));
    } else if (port.name == "x") {
      Tensor t(port.type);
      for (float& v : t.as_mut<float>()) v = data.symmetric();
      out.emplace(port.name, std::move(t));
    } else {  // a cache: [C, K, E], or [R, C, K, E] for batch
      Tensor t(port.type);
      const CacheShape cache = CacheShape::of(port.type.shape);
      const float scale = port.name.starts_with("k.") ? c.k_scale : 1.0f;
      auto v = t.as_mut<float>();
      for (int64_t r = 0; r < cache.caches; ++r) {
        const size_t row = size_t(cache.caches > 1 ? r : 0);
        for (int64_t pos = 0; pos < cache.ctx; ++pos)
          for (int64_t i = 0; i < cache.width; ++i)
            v[size_t(cache.at(r, pos) + i)] =
                pos >= first[row] && pos <= last[row] ? scale * data.symmetric() : garbage.garbage();
      }
      out.emplace(port.name, std::move(t));
    }
  }
  return out;
}

}  // namespace cutcheck
