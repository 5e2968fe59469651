#include "properties/spec_space.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.h"
#include "model/spec_knobs.h"
#include "properties/choice.h"
#include "properties/shape_space.h"

namespace cutcheck {
namespace {

// The fields `--fix` takes: the spec's shapes and constants, then its knobs.
const std::vector<std::string>& fixable() {
  static const std::vector<std::string> fields = [] {
    std::vector<std::string> f = {"vocab",    "dim", "layers",   "heads",      "kv_heads",  "head_dim",
                                  "ffn",      "norm_eps", "rope_theta", "rope_style", "tied"};
    for (const std::string& knob : spec_knob_names()) f.push_back(knob);
    return f;
  }();
  return fields;
}

// A spec every single fixed field can be checked against.
const ModelSpec& template_spec() {
  static const ModelSpec s = [] {
    ModelSpec t;
    t.name = "random";
    t.vocab = 16, t.dim = 8, t.layers = 1, t.heads = 2, t.kv_heads = 1, t.head_dim = 4, t.ffn = 8;
    return t;
  }();
  return s;
}

int64_t fixed_int(const Json& fixed, const char* field) { return fixed.at(field).get<int64_t>(); }

// `spec` as JSON with one field set: the spec's own reader checks a fixed field.
Json with_field(const ModelSpec& spec, const std::string& field, const Json& value) {
  Json probe = spec.to_json();
  probe[field] = value;
  return probe;
}

}  // namespace

void SpecSpace::fix(const std::string& assignment) {
  const std::string where = fmt::format("--fix {}", assignment);
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos) throw Error(fmt::format("{}: expected FIELD=VALUE", where));
  const std::string field = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  if (field == "head_dim" && text == "dim/heads") {
    if (fixed.contains("head_dim")) throw Error(fmt::format("{}: head_dim is fixed already", where));
    head_dim_from_dim = true;
  } else {
    if (std::find(fixable().begin(), fixable().end(), field) == fixable().end())
      throw Error(fmt::format("{}: unknown spec field '{}' (one of {})", where, field, fmt::join(fixable(), ", ")));
    if (field == "head_dim" && head_dim_from_dim) throw Error(fmt::format("{}: head_dim is fixed to dim/heads", where));
    Json value = Json::parse(text, nullptr, false);
    if (value.is_discarded() || value.is_string()) value = text;  // rope_style=half
    // The field's own checks are the spec's: put it into a valid spec and read that.
    try {
      ModelSpec::from_json(with_field(template_spec(), field, value), where);
    } catch (const SpecError& e) {
      const std::string why = e.what();
      throw Error(fmt::format("{}: {}", where, why.substr(why.find(':') + 2)));
    }
    fixed[field] = value;
  }
  if (head_choices(1, true).empty())
    throw Error(fmt::format("{}: no spec has all of the fields fixed so far ({}{})", where, fixed.dump(),
                            head_dim_from_dim ? ", head_dim = dim / heads" : ""));
}

std::vector<std::pair<int64_t, int64_t>> SpecSpace::head_choices(int64_t tp, bool large) const {
  std::vector<int64_t> kvs, groups;
  if (fixed.contains("kv_heads")) kvs = {fixed_int(fixed, "kv_heads")};
  else for (int64_t m : {1, 2, 4, 8}) if (large || m < 8) kvs.push_back(m * tp);
  if (fixed.contains("heads")) groups = {};  // follows from heads / kv_heads below
  else groups = large ? std::vector<int64_t>{1, 2, 3, 4, 8} : std::vector<int64_t>{1, 2, 4};

  std::vector<std::pair<int64_t, int64_t>> out;
  auto consider = [&](int64_t kv, int64_t group) {
    const int64_t heads = kv * group;
    if (kv % tp != 0) return;
    if (head_dim_from_dim && fixed.contains("dim")) {
      const int64_t dim = fixed_int(fixed, "dim");
      if (dim % heads != 0 || (dim / heads) % 2 != 0) return;
    }
    out.emplace_back(kv, group);
  };
  for (int64_t kv : kvs) {
    if (fixed.contains("heads")) {
      const int64_t heads = fixed_int(fixed, "heads");
      if (heads % kv == 0) consider(kv, heads / kv);
    } else {
      for (int64_t g : groups) consider(kv, g);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](auto a, auto b) { return a.first * a.second < b.first * b.second; });
  return out;
}

bool SpecSpace::splits(int64_t tp) const {
  if (fixed.contains("ffn") && fixed_int(fixed, "ffn") % tp != 0) return false;
  return !head_choices(tp, true).empty();
}

rc::Gen<ModelSpec> gen_spec(const SpecSpace& space) {
  return rc::gen::exec([space] {
    using rc::gen::inRange;
    const Json& fixed = space.fixed;
    const bool large = *gen_large(space.large_share);
    auto draw = [&](const char* field, const rc::Gen<int64_t>& gen) {
      return fixed.contains(field) ? fixed_int(fixed, field) : *gen;
    };
    // Wide enough for tile boundaries, narrow enough that one case stays a few MiB.
    auto wide = [](int64_t lo, int64_t hi) { return choice(tile_boundaries(lo, hi)); };

    ModelSpec s;
    s.name = "random";
    std::vector<std::pair<int64_t, int64_t>> heads = space.head_choices(space.tp, large);
    if (heads.empty()) heads = space.head_choices(space.tp, true);  // only wide choices fit the fixed fields
    if (heads.empty()) throw Error(fmt::format("no spec with the fixed fields splits over tp = {}", space.tp));
    const auto [kv, group] = *choice(heads);
    s.kv_heads = kv;
    s.heads = kv * group;

    if (space.head_dim_from_dim && fixed.contains("dim")) {
      s.dim = fixed_int(fixed, "dim");
      s.head_dim = s.dim / s.heads;
    } else {
      std::vector<int64_t> head_dims;
      for (int64_t e : {2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128})
        if (e <= 2 || s.heads * e <= 1024) head_dims.push_back(e);
      s.head_dim = draw("head_dim", large ? choice(head_dims) : rc::gen::map(inRange<int64_t>(1, 5), [](int64_t h) { return 2 * h; }));
      if (space.head_dim_from_dim) s.dim = s.heads * s.head_dim;
      else s.dim = draw("dim", large ? wide(std::max<int64_t>(space.min_dim, 13), 257)
                                     : inRange<int64_t>(space.min_dim, std::max<int64_t>(space.min_dim, 24) + 1));
    }
    s.ffn = draw("ffn", large ? wide(13, 257) : inRange<int64_t>(1, 25));
    if (!fixed.contains("ffn")) s.ffn = (s.ffn + space.tp - 1) / space.tp * space.tp;
    s.vocab = draw("vocab", large ? wide(42, 513) : inRange<int64_t>(2, 41));
    s.layers = draw("layers", inRange<int64_t>(1, 4));
    s.norm_eps = fixed.contains("norm_eps") ? fixed["norm_eps"].get<double>() : *choice_of(1e-5, 1e-6, 1e-3, 1e-2);
    s.rope_theta = fixed.contains("rope_theta") ? fixed["rope_theta"].get<double>() : *choice_of(10000.0, 500000.0, 100.0);
    if (fixed.contains("rope_style"))
      s.rope_style = fixed["rope_style"] == "half" ? RopeStyle::half : RopeStyle::interleaved;
    else
      s.rope_style = *choice_of(RopeStyle::interleaved, RopeStyle::half);
    s.tied = fixed.contains("tied") ? fixed["tied"].get<bool>() : *choice_of(true, false);
    // The knobs, each by its row (model/spec_knobs.h): as fixed, or drawn.
    const PickIndex pick = [](size_t count) { return *inRange<size_t>(0, count); };
    for (const SpecKnob& knob : spec_knobs()) {
      if (fixed.contains(knob.name)) knob.read(fixed, "--fix", s);
      else knob.draw(pick, s);
    }
    s.validate();
    return s;
  });
}

}  // namespace cutcheck
