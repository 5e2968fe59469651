#include "engine/engine_protocol.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/error.h"
#include "model/spec_knobs.h"
#include "model/weights.h"

namespace cutcheck {
namespace {

const std::vector<std::string> limit_names = {"vocab", "dim", "layers", "heads", "kv_heads", "head_dim", "ffn"};

std::vector<std::string> string_list(const Json& json, const std::string& key, const std::string& source) {
  const Json& list = json_field(json, key, source);
  if (!list.is_array() || list.empty())
    throw FormatError(fmt::format("{}: '{}' must be a non-empty list of strings", source, key));
  std::vector<std::string> out;
  for (const Json& item : list) {
    if (!item.is_string()) throw FormatError(fmt::format("{}: '{}' must be a list of strings, not {}", source, key, item.dump()));
    out.push_back(item.get<std::string>());
  }
  return out;
}

// The key path of an element, for messages: results[1].logprobs[3].
std::string at(const std::string& path, size_t i) { return fmt::format("{}[{}]", path, i); }

int64_t integer(const Json& v, const std::string& where) {
  if (!v.is_number_integer()) throw FormatError(fmt::format("{}: expected an integer, got {}", where, v.dump()));
  return v.get<int64_t>();
}

// A log-probability: a number, or null for minus infinity.
double logprob(const Json& v, const std::string& where) {
  if (v.is_null()) return -std::numeric_limits<double>::infinity();
  if (!v.is_number()) throw FormatError(fmt::format("{}: expected a number (or null for -infinity), got {}", where, v.dump()));
  return v.get<double>();
}

}  // namespace

std::string model_format_name(ModelFormat f) {
  switch (f) {
    case ModelFormat::cutcheck: return "cutcheck";
    case ModelFormat::gguf: return "gguf";
    case ModelFormat::hf: return "hf";
  }
  return "?";
}

ModelFormat parse_model_format(const std::string& name) {
  for (ModelFormat f : {ModelFormat::cutcheck, ModelFormat::gguf, ModelFormat::hf})
    if (model_format_name(f) == name) return f;
  throw Error(fmt::format("unknown model format '{}' (cutcheck, gguf or hf)", name));
}

std::string EnginePrecision::name() const { return gguf_file_type_name(file); }

bool EnginePrecision::quantized() const { return gguf_default_quant(file).has_value(); }

DType EnginePrecision::spec_dtype() const { return gguf_float_dtype(file); }

Precision EnginePrecision::compute() const {
  const DType t = spec_dtype();
  return t == DType::f16 ? Precision::f16 : t == DType::bf16 ? Precision::bf16 : Precision::f32;
}

std::map<std::string, ActivationRounding> EnginePrecision::weight_meets(const ModelSpec& spec) const {
  std::map<std::string, ActivationRounding> out;
  if (!quantized()) return out;
  const ActivationRounding q8_0{ActivationRounding::Kind::int8_blocks, 32, true}, q8_K{ActivationRounding::Kind::int8_blocks, 256, false},
      f16{ActivationRounding::Kind::f16};
  for (const WeightInfo& w : weight_layout(spec)) {
    if (w.shape.size() != 2) continue;  // norms and biases are no contraction's
    const GgufTensorType t = gguf_tensor_type(spec, w.name, file);
    if (!t.quant) {
      if (t.dtype == DType::f16) out.emplace(w.name, f16);
      continue;
    }
    switch (*t.quant) {
      case QuantFormat::q8_0:
      case QuantFormat::q4_0:
      case QuantFormat::q5_0: out.emplace(w.name, q8_0); break;
      case QuantFormat::q4_K:
      case QuantFormat::q6_K: out.emplace(w.name, q8_K); break;
      case QuantFormat::i8_row: throw Error("a GGUF file holds no i8_row weights");
    }
  }
  return out;
}

int64_t EnginePrecision::block_values() const {
  return file == GgufFileType::q4_k_m ? 256 : quantized() ? 32 : 1;
}

EnginePrecision EnginePrecision::parse(const std::string& name) {
  return {parse_gguf_file_type(name, "precision")};
}

EngineDescription EngineDescription::from_json(const Json& json, const std::string& source) {
  if (!json.is_object()) throw FormatError(fmt::format("{}: expected a JSON object", source));
  static const std::set<std::string> keys = {"format", "name", "model_formats", "precisions", "max_context", "logprobs",
                                             "max_top_k", "rope_styles", "knobs", "limits"};
  for (auto it = json.begin(); it != json.end(); ++it)
    if (!keys.count(it.key()))
      throw FormatError(fmt::format("{}: unknown key '{}' (docs/engines.md lists the keys of {})", source, it.key(),
                                    engine_protocol));
  const std::string format = json_string(json, "format", source);
  if (format != engine_protocol)
    throw FormatError(fmt::format("{}: format '{}' is not {}, the protocol this cutcheck speaks", source, format,
                                  engine_protocol));
  EngineDescription d;
  d.name = json_string(json, "name", source);
  for (const std::string& f : string_list(json, "model_formats", source)) {
    try {
      d.formats.push_back(parse_model_format(f));
    } catch (const Error& e) {
      throw FormatError(fmt::format("{}: model_formats: {}", source, e.what()));
    }
  }
  for (const std::string& p : string_list(json, "precisions", source)) {
    try {
      d.precisions.push_back(EnginePrecision::parse(p));
    } catch (const Error& e) {
      throw FormatError(fmt::format("{}: precisions: {}", source, e.what()));
    }
  }
  d.max_context = json_int(json, "max_context", source);
  if (d.max_context < 2 || d.max_context > (int64_t(1) << 31))
    throw FormatError(fmt::format("{}: max_context = {} is outside [2, 2^31]", source, d.max_context));
  const std::string logprobs = json.contains("logprobs") ? json_string(json, "logprobs", source) : "full";
  if (logprobs == "top_k") {
    d.max_top_k = json_int(json, "max_top_k", source);
    if (d.max_top_k < 1) throw FormatError(fmt::format("{}: max_top_k = {} must be at least 1", source, d.max_top_k));
  } else if (logprobs != "full") {
    throw FormatError(fmt::format("{}: logprobs '{}' is neither 'full' nor 'top_k'", source, logprobs));
  } else if (json.contains("max_top_k")) {
    throw FormatError(fmt::format("{}: max_top_k goes with \"logprobs\": \"top_k\"", source));
  }
  if (json.contains("rope_styles")) {
    d.rope_styles.clear();
    for (const std::string& s : string_list(json, "rope_styles", source)) {
      if (s == "interleaved") d.rope_styles.push_back(RopeStyle::interleaved);
      else if (s == "half") d.rope_styles.push_back(RopeStyle::half);
      else throw FormatError(fmt::format("{}: rope_styles: '{}' is neither 'interleaved' nor 'half'", source, s));
    }
  }
  if (json.contains("knobs")) {
    const Json& knobs = json_field(json, "knobs", source);
    if (!knobs.is_array()) throw FormatError(fmt::format("{}: 'knobs' must be a list of strings", source));
    for (const Json& k : knobs) {
      if (!k.is_string() || !find_spec_knob(k.get<std::string>()))
        throw FormatError(fmt::format("{}: knobs: {} is not one of {}", source, k.dump(), fmt::join(spec_knob_names(), ", ")));
      d.knobs.push_back(k.get<std::string>());
    }
  }
  if (json.contains("limits")) {
    const Json& limits = json_field(json, "limits", source);
    if (!limits.is_object()) throw FormatError(fmt::format("{}: 'limits' must be an object", source));
    for (auto it = limits.begin(); it != limits.end(); ++it) {
      if (std::find(limit_names.begin(), limit_names.end(), it.key()) == limit_names.end())
        throw FormatError(fmt::format("{}: limits: unknown field '{}' (one of {})", source, it.key(), fmt::join(limit_names, ", ")));
      const int64_t v = json_int(limits, it.key(), source + ": limits");
      if (v < 1) throw FormatError(fmt::format("{}: limits.{} = {} must be at least 1", source, it.key(), v));
      d.limits[it.key()] = v;
    }
  }
  return d;
}

Json EngineDescription::to_json() const {
  Json formats_json = Json::array(), precisions_json = Json::array(), styles = Json::array();
  for (ModelFormat f : formats) formats_json.push_back(model_format_name(f));
  for (const EnginePrecision& p : precisions) precisions_json.push_back(p.name());
  for (RopeStyle s : rope_styles) styles.push_back(rope_style_name(s));
  Json out = {{"format", engine_protocol}, {"name", name},          {"model_formats", formats_json},
              {"precisions", precisions_json}, {"max_context", max_context}, {"logprobs", max_top_k ? "top_k" : "full"},
              {"rope_styles", styles},     {"knobs", knobs},        {"limits", limits}};
  if (max_top_k) out["max_top_k"] = max_top_k;
  return out;
}

bool EngineDescription::takes_knob(const std::string& knob) const {
  return std::find(knobs.begin(), knobs.end(), knob) != knobs.end();
}

std::string EngineDescription::refuses(const ModelSpec& s) const {
  const std::map<std::string, int64_t> fields = {{"vocab", s.vocab}, {"dim", s.dim},           {"layers", s.layers},
                                                 {"heads", s.heads}, {"kv_heads", s.kv_heads}, {"head_dim", s.head_dim},
                                                 {"ffn", s.ffn}};
  for (const auto& [field, limit] : limits)
    if (fields.at(field) > limit) return fmt::format("{} = {} is above the engine's limit of {}", field, fields.at(field), limit);
  if (std::find(rope_styles.begin(), rope_styles.end(), s.rope_style) == rope_styles.end())
    return fmt::format("rope_style {} is not among the engine's", rope_style_name(s.rope_style));
  for (const SpecKnob& knob : spec_knobs())
    if (knob.is_set(s) && !takes_knob(knob.name)) return fmt::format("the engine does not declare the knob {}", knob.name);
  return {};
}

Json requests_json(int64_t vocab, int64_t top_k, const std::vector<EngineRequest>& requests,
                   const std::vector<std::vector<std::vector<int32_t>>>& include) {
  Json list = Json::array();
  for (size_t i = 0; i < requests.size(); ++i) {
    const EngineRequest& r = requests[i];
    Json one = {{"id", i}, {"prompt", r.prompt}, {"steps", r.steps}, {"positions", r.positions}};
    if (top_k > 0 && i < include.size()) one["include"] = include[i];
    list.push_back(one);
  }
  return {{"format", engine_protocol}, {"vocab", vocab}, {"top_k", top_k}, {"requests", list}};
}

std::vector<EngineResult> parse_results(const Json& json, const std::vector<EngineRequest>& requests, int64_t vocab,
                                        int64_t top_k, const std::string& source) {
  if (!json.is_object()) throw FormatError(fmt::format("{}: expected a JSON object", source));
  const std::string format = json_string(json, "format", source);
  if (format != engine_protocol) throw FormatError(fmt::format("{}: format '{}' is not {}", source, format, engine_protocol));
  const Json& list = json_field(json, "results", source);
  if (!list.is_array()) throw FormatError(fmt::format("{}: 'results' must be a list", source));
  std::vector<std::optional<EngineResult>> by_id(requests.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("{}: {}", source, at("results", i));
    const Json& item = list[i];
    const int64_t id = integer(json_field(item, "id", where), where + ".id");
    if (id < 0 || id >= int64_t(requests.size()))
      throw FormatError(fmt::format("{}.id: {} is no request's id (0 to {})", where, id, requests.size() - 1));
    if (by_id[size_t(id)]) throw FormatError(fmt::format("{}.id: a second result for request {}", where, id));
    const EngineRequest& request = requests[size_t(id)];
    EngineResult r;
    const Json& tokens = json_field(item, "tokens", where);
    if (!tokens.is_array() || int64_t(tokens.size()) != request.steps)
      throw FormatError(fmt::format("{}.tokens: expected a list of {} token ids (the request's steps), got {}", where,
                                    request.steps, tokens.is_array() ? fmt::format("{} items", tokens.size()) : tokens.dump()));
    for (size_t k = 0; k < tokens.size(); ++k) {
      const int64_t t = integer(tokens[k], where + at(".tokens", k));
      if (t < 0 || t >= vocab)
        throw FormatError(fmt::format("{}{}: token {} is outside the vocabulary [0, {})", where, at(".tokens", k), t, vocab));
      r.tokens.push_back(int32_t(t));
    }
    const Json& lps = json_field(item, "logprobs", where);
    if (!lps.is_array() || lps.size() != request.positions.size())
      throw FormatError(fmt::format("{}.logprobs: expected a list of {} entries (one per reported position), got {}", where,
                                    request.positions.size(), lps.is_array() ? fmt::format("{}", lps.size()) : lps.dump()));
    for (size_t k = 0; k < lps.size(); ++k) {
      const std::string here = where + at(".logprobs", k);
      const Json& entry = lps[k];
      if (!entry.is_array()) throw FormatError(fmt::format("{}: expected a list, got {}", here, entry.dump()));
      PositionLogprobs p;
      if (top_k == 0) {
        if (int64_t(entry.size()) != vocab)
          throw FormatError(fmt::format("{}: {} numbers, the vocabulary has {}", here, entry.size(), vocab));
        for (size_t t = 0; t < entry.size(); ++t) p.full.push_back(logprob(entry[t], here + at("", t)));
      } else {
        std::set<int32_t> seen;
        for (size_t j = 0; j < entry.size(); ++j) {
          const std::string pair_at = here + at("", j);
          if (!entry[j].is_array() || entry[j].size() != 2)
            throw FormatError(fmt::format("{}: expected a [token, logprob] pair, got {}", pair_at, entry[j].dump()));
          const int64_t t = integer(entry[j][0], pair_at + "[0]");
          if (t < 0 || t >= vocab)
            throw FormatError(fmt::format("{}[0]: token {} is outside the vocabulary [0, {})", pair_at, t, vocab));
          if (!seen.insert(int32_t(t)).second) throw FormatError(fmt::format("{}[0]: token {} appears twice", pair_at, t));
          p.top.emplace_back(int32_t(t), logprob(entry[j][1], pair_at + "[1]"));
        }
        if (int64_t(p.top.size()) < std::min(top_k, vocab))
          throw FormatError(fmt::format("{}: {} pairs, fewer than top_k = {}", here, p.top.size(), top_k));
      }
      r.logprobs.push_back(std::move(p));
    }
    by_id[size_t(id)] = std::move(r);
  }
  std::vector<EngineResult> out;
  for (size_t i = 0; i < by_id.size(); ++i) {
    if (!by_id[i]) throw FormatError(fmt::format("{}: results: no result for request {}", source, i));
    out.push_back(std::move(*by_id[i]));
  }
  return out;
}

}  // namespace cutcheck
