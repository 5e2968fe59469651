#include "engine/engine_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "model/spec_knobs.h"
#include "properties/choice.h"
#include "properties/shape_space.h"
#include "properties/spec_space.h"

namespace cutcheck {
namespace {

// A random spec brought within the engine's limits (clamped, keeping the spec's rules:
// heads a multiple of kv_heads, head_dim even).
ModelSpec within_limits(ModelSpec s, const EngineDescription& engine) {
  auto limit = [&](const char* field) {
    auto it = engine.limits.find(field);
    return it == engine.limits.end() ? INT64_MAX : it->second;
  };
  s.vocab = std::min(s.vocab, std::max<int64_t>(2, limit("vocab")));
  s.dim = std::min(s.dim, limit("dim"));
  s.ffn = std::min(s.ffn, limit("ffn"));
  s.layers = std::min(s.layers, limit("layers"));
  s.head_dim = std::min(s.head_dim, std::max<int64_t>(2, limit("head_dim") / 2 * 2));
  const int64_t group = s.heads / s.kv_heads;
  s.kv_heads = std::min({s.kv_heads, limit("kv_heads"), limit("heads")});
  s.heads = s.kv_heads * std::max<int64_t>(1, std::min(group, limit("heads") / s.kv_heads));
  s.validate();
  return s;
}

rc::Gen<EngineRequest> gen_request(int64_t vocab, int64_t ctx, int steps_max) {
  // Short prompts, and lengths at tile boundaries (15, 16, 17, 31, 32, 33, ...) where
  // kernels change paths; the short ones first, so a failure shrinks toward them.
  std::vector<int64_t> lengths;
  for (int64_t n : {1, 2, 3, 5, 8, 12})
    if (n < ctx) lengths.push_back(n);
  for (int64_t n : tile_boundaries(13, ctx - 1)) lengths.push_back(n);
  if (lengths.empty()) lengths.push_back(1);
  return rc::gen::exec([=] {
    const int64_t n = *choice(lengths);
    const int64_t steps = *rc::gen::inRange<int64_t>(0, std::min<int64_t>(steps_max, ctx - n) + 1);
    EngineRequest r;
    r.prompt = *rc::gen::container<std::vector<int32_t>>(size_t(n), rc::gen::inRange<int32_t>(0, int32_t(vocab)));
    r.steps = steps;
    r.positions = reported_positions(n, steps);
    return r;
  });
}

}  // namespace

std::vector<int64_t> reported_positions(int64_t prompt, int64_t steps) {
  const int64_t end = std::max(prompt, prompt + steps - 1);  // the distributions there are
  std::set<int64_t> out;
  for (int64_t p = 0; p < end; ++p)
    if (end <= 40 || p < 8 || p >= end - 8) out.insert(p);
  for (int64_t b = 16; b - 2 < end; b *= 2)
    for (int64_t p : {b - 2, b - 1, b})
      if (p < end) out.insert(p);
  return {out.begin(), out.end()};
}

Json EngineCase::to_json() const {
  Json list = Json::array();
  for (const EngineRequest& r : requests) list.push_back({{"prompt", r.prompt}, {"steps", r.steps}, {"positions", r.positions}});
  return {{"format", "cutcheck-engine-case-1"}, {"spec", spec.to_json()}, {"weight_seed", weight_seed}, {"requests", list}};
}

EngineCase EngineCase::from_json(const Json& json, const std::string& source) {
  if (json_string(json, "format", source) != "cutcheck-engine-case-1")
    throw FormatError(fmt::format("{}: format is not cutcheck-engine-case-1", source));
  EngineCase c;
  c.spec = ModelSpec::from_json(json_field(json, "spec", source), source + ": spec");
  const Json& seed = json_field(json, "weight_seed", source);
  if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<int64_t>() >= 0))
    throw FormatError(fmt::format("{}: weight_seed must be an integer in [0, 2^64)", source));
  c.weight_seed = seed.get<uint64_t>();
  const Json& list = json_field(json, "requests", source);
  if (!list.is_array() || list.empty()) throw FormatError(fmt::format("{}: 'requests' must be a non-empty list", source));
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("{}: requests[{}]", source, i);
    EngineRequest r;
    for (int64_t t : json_int_list(list[i], "prompt", where)) {
      if (t < 0 || t >= c.spec.vocab) throw FormatError(fmt::format("{}: prompt token {} is outside [0, {})", where, t, c.spec.vocab));
      r.prompt.push_back(int32_t(t));
    }
    if (r.prompt.empty()) throw FormatError(fmt::format("{}: the prompt is empty", where));
    r.steps = json_int(list[i], "steps", where);
    if (r.steps < 0 || r.steps > (int64_t(1) << 20)) throw FormatError(fmt::format("{}: steps = {} is outside [0, 2^20]", where, r.steps));
    r.positions = json_int_list(list[i], "positions", where);
    for (size_t k = 0; k < r.positions.size(); ++k)
      if (r.positions[k] < 0 || r.positions[k] >= r.positions_end() || (k && r.positions[k] <= r.positions[k - 1]))
        throw FormatError(fmt::format("{}: positions must increase within [0, {})", where, r.positions_end()));
    c.requests.push_back(std::move(r));
  }
  return c;
}

int64_t EngineCase::longest() const {
  int64_t n = 0;
  for (const EngineRequest& r : requests) n = std::max(n, r.length());
  return n;
}

std::string EngineCase::str() const {
  std::string lengths;
  for (const EngineRequest& r : requests) lengths += fmt::format("{}{}+{}", lengths.empty() ? "" : ", ", r.prompt.size(), r.steps);
  return fmt::format("{}{}: {} request{} (prompt+steps {})", spec.summary(),
                     weight_seed ? fmt::format(" seed {}", weight_seed) : "", requests.size(),
                     requests.size() == 1 ? "" : "s", lengths);
}

rc::Gen<EngineCase> gen_engine_case(const EngineDescription& engine, const EngineCaseSpace& space) {
  if (space.spec) {
    const std::string why = engine.refuses(*space.spec);
    if (!why.empty()) throw Error(fmt::format("the engine does not take the spec {}: {}", space.spec->name, why));
  }
  SpecSpace specs{4};
  specs.large_share = 0.2;
  if (engine.rope_styles.size() == 1) specs.fix("rope_style=" + rope_style_name(engine.rope_styles[0]));
  for (const SpecKnob& knob : spec_knobs())
    if (!engine.takes_knob(knob.name)) specs.fix(fmt::format("{}={}", knob.name, knob.off.dump()));
  const int64_t ctx = std::max<int64_t>(2, std::min(space.ctx_max, engine.max_context));
  return rc::gen::resize(100, rc::gen::exec([=] {
    EngineCase c;
    if (space.spec) {
      c.spec = *space.spec;
    } else {
      c.spec = *gen_spec(specs);
      auto whole = [&](int64_t n) { return (n + space.row_multiple - 1) / space.row_multiple * space.row_multiple; };
      c.spec.dim = whole(c.spec.dim);  // the engine's limits come first
      c.spec.ffn = whole(c.spec.ffn);
      c.spec = within_limits(c.spec, engine);
      c.spec.dtype = space.dtype;
    }
    c.weight_seed = space.given_weights ? 0 : *rc::gen::inRange<uint64_t>(1, uint64_t(1) << 53);
    const int count = *rc::gen::inRange(1, std::max(1, space.requests) + 1);
    for (int i = 0; i < count; ++i) c.requests.push_back(*gen_request(c.spec.vocab, ctx, space.steps_max));
    return c;
  }));
}

}  // namespace cutcheck
