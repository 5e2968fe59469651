#include "model/spec_knobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "core/error.h"

namespace cutcheck {
namespace {

// The one rule for a sliding window, however its value came: 1 to 2^31 - 1 positions. A spec
// without one leaves the field out (0 in ModelSpec, never written as such).
SpecError window_outside_range(const ModelSpec& spec) {
  return SpecError(fmt::format("spec '{}': sliding_window must be in [1, 2^31 - 1] (leave it out for none), got {}",
                               spec.name, spec.sliding_window));
}

// On in about a quarter of random specs, off when shrunk.
bool sometimes(const PickIndex& pick) { return pick_of(pick, {false, false, false, true}); }

// A knob that is a bool, false by default.
SpecKnob flag(const std::string& name, bool ModelSpec::*field) {
  return {.name = name,
          .is_set = [field](const ModelSpec& s) { return s.*field; },
          .write = [field](const ModelSpec& s) { return Json(s.*field); },
          .read = [name, field](const Json& object, const std::string& source,
                                ModelSpec& s) { s.*field = json_bool(object, name, source); },
          .draw = [field](const PickIndex& pick, ModelSpec& s) { s.*field = sometimes(pick); },
          .off = false};
}

// The object under "rope_scaling": {"type": "linear", "factor"} or {"type": "llama3",
// "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}.
RopeScaling read_rope_scaling(const Json& json, const std::string& source) {
  const std::string where = source + ": rope_scaling";
  if (!json.is_object()) throw FormatError(fmt::format("{}: must be an object with a \"type\"", where));
  const std::string type = json_string(json, "type", where);
  std::vector<const char*> keys{"type", "factor"};
  RopeScaling rs;
  if (type == "linear") {
    rs.type = RopeScalingType::linear;
  } else if (type == "llama3") {
    rs.type = RopeScalingType::llama3;
    keys.insert(keys.end(), {"low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
  } else {
    throw FormatError(fmt::format("{}: field 'type' must be \"linear\" or \"llama3\", got \"{}\"", where, type));
  }
  for (auto it = json.begin(); it != json.end(); ++it)
    if (std::find_if(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }) == keys.end())
      throw FormatError(fmt::format("{}: unknown field '{}' for type {}", where, it.key(), type));
  return read_rope_scaling_parameters(rs.type, json, where);
}

Json write_rope_scaling(const ModelSpec& s) {
  const RopeScaling& rs = s.rope_scaling;
  if (rs.type == RopeScalingType::linear) return Json{{"type", "linear"}, {"factor", rs.factor}};
  return Json{{"type", "llama3"},
              {"factor", rs.factor},
              {"low_freq_factor", rs.low_freq_factor},
              {"high_freq_factor", rs.high_freq_factor},
              {"original_max_position_embeddings", rs.original_max_position_embeddings}};
}

void check_rope_scaling(const ModelSpec& s) {
  const RopeScaling& rs = s.rope_scaling;
  auto positive_number = [&](const char* field, double value) {
    if (!std::isfinite(value) || value <= 0)
      throw SpecError(fmt::format("spec '{}': rope_scaling.{} must be a positive finite number, got {}", s.name, field, value));
  };
  if (rs.type != RopeScalingType::none) {
    positive_number("factor", rs.factor);
    if (rs.factor < 1)
      throw SpecError(fmt::format("spec '{}': rope_scaling.factor must be at least 1 (it stretches the context), got {}",
                                  s.name, rs.factor));
  }
  if (rs.type == RopeScalingType::llama3) {
    positive_number("low_freq_factor", rs.low_freq_factor);
    positive_number("high_freq_factor", rs.high_freq_factor);
    if (rs.high_freq_factor <= rs.low_freq_factor)
      throw SpecError(fmt::format("spec '{}': rope_scaling.high_freq_factor ({}) must be larger than low_freq_factor ({})",
                                  s.name, rs.high_freq_factor, rs.low_freq_factor));
    if (rs.original_max_position_embeddings <= 0 || rs.original_max_position_embeddings > INT32_MAX)
      throw SpecError(fmt::format("spec '{}': rope_scaling.original_max_position_embeddings must be in [1, 2^31 - 1], got {}",
                                  s.name, rs.original_max_position_embeddings));
  }
  if (rs.type == RopeScalingType::none && !(rs == RopeScaling{}))
    throw SpecError(fmt::format("spec '{}': rope_scaling has parameters but no type", s.name));
  if (rs.type == RopeScalingType::linear && !(rs == RopeScaling{RopeScalingType::linear, rs.factor}))
    throw SpecError(fmt::format("spec '{}': rope_scaling of type linear takes only a factor", s.name));
}

// A quarter linear, a quarter llama3. The llama3 contexts put the blend band inside the
// small specs' wavelengths (2 pi to 2 pi theta), so all three of its branches are drawn.
void draw_rope_scaling(const PickIndex& pick, ModelSpec& s) {
  using enum RopeScalingType;
  const RopeScalingType type = pick_of(pick, {none, none, linear, llama3});
  s.rope_scaling = {};
  if (type == linear) s.rope_scaling = {type, pick_of(pick, {2.0, 4.0, 8.0, 1.0, 32.0})};
  if (type == llama3) {
    const auto [low, high] = pick_of(pick, {std::pair{1.0, 4.0}, std::pair{0.5, 2.0}, std::pair{2.0, 32.0}});
    s.rope_scaling = {type, pick_of(pick, {8.0, 2.0, 32.0}), low, high, pick_of<int64_t>(pick, {64, 16, 512, 8192})};
  }
}

std::string rope_scaling_text(const ModelSpec& s) {
  const RopeScaling& rs = s.rope_scaling;
  if (rs.type == RopeScalingType::linear) return fmt::format("linear(factor={})", rs.factor);
  return fmt::format("llama3(factor={},low_freq_factor={},high_freq_factor={},original_max_position_embeddings={})",
                     rs.factor, rs.low_freq_factor, rs.high_freq_factor, rs.original_max_position_embeddings);
}

SpecKnob rope_scaling() {
  return {.name = "rope_scaling",
          .is_set = [](const ModelSpec& s) { return s.rope_scaling.type != RopeScalingType::none; },
          .write = write_rope_scaling,
          .read =
              [](const Json& object, const std::string& source, ModelSpec& s) {
                const Json& value = object.at("rope_scaling");  // null: none
                s.rope_scaling = value.is_null() ? RopeScaling{} : read_rope_scaling(value, source);
              },
          .check = check_rope_scaling,
          .draw = draw_rope_scaling,
          .off = nullptr,
          .text = rope_scaling_text};
}

SpecKnob sliding_window() {
  return {.name = "sliding_window",
          .is_set = [](const ModelSpec& s) { return s.sliding_window > 0; },
          .write = [](const ModelSpec& s) { return Json(s.sliding_window); },
          .read =
              [](const Json& object, const std::string& source, ModelSpec& s) {
                const Json& value = object.at("sliding_window");  // null: none
                s.sliding_window = value.is_null() ? 0 : json_int(object, "sliding_window", source);
                // 0 is none in ModelSpec, but written out it is a mistake: none is the field left out.
                if (!value.is_null() && s.sliding_window == 0) throw window_outside_range(s);
              },
          .check =
              [](const ModelSpec& s) {
                if (s.sliding_window < 0 || s.sliding_window > INT32_MAX) throw window_outside_range(s);
              },
          .draw =
              [](const PickIndex& pick, ModelSpec& s) {
                s.sliding_window = sometimes(pick) ? pick_of<int64_t>(pick, {1, 2, 3, 4, 6, 8, 16, 32}) : 0;
              },
          .off = nullptr};
}

}  // namespace

std::string SpecKnob::summary(const ModelSpec& spec) const {
  return fmt::format(" {}={}", name, text ? text(spec) : write(spec).dump());
}

const std::vector<SpecKnob>& spec_knobs() {
  static const std::vector<SpecKnob> table = {
      rope_scaling(),
      flag("attention_bias", &ModelSpec::attention_bias),  // q, k, v projections add a bias (Qwen2)
      flag("qk_norm", &ModelSpec::qk_norm),                // RMSNorm over each head of q and k (Qwen3)
      sliding_window(),
  };
  return table;
}

std::vector<std::string> spec_knob_names() {
  std::vector<std::string> names;
  for (const SpecKnob& knob : spec_knobs()) names.push_back(knob.name);
  return names;
}

const SpecKnob* find_spec_knob(const std::string& name) {
  for (const SpecKnob& knob : spec_knobs())
    if (knob.name == name) return &knob;
  return nullptr;
}

}  // namespace cutcheck
