#include "model/spec.h"

#include <fmt/format.h>

#include <climits>
#include <cmath>

#include "core/error.h"
#include "core/files.h"
#include "model/footprint.h"
#include "model/spec_knobs.h"
#include "model/weights.h"

namespace cutcheck {

std::string rope_style_name(RopeStyle style) { return style == RopeStyle::interleaved ? "interleaved" : "half"; }

double rope_frequency(const ModelSpec& spec, int64_t i) {
  const double base = std::pow(spec.rope_theta, -2.0 * double(i) / double(spec.head_dim));
  const RopeScaling& s = spec.rope_scaling;
  switch (s.type) {
    case RopeScalingType::none: return base;
    case RopeScalingType::linear: return base / s.factor;
    case RopeScalingType::llama3: {
      // By wavelength 2 pi / freq against the original context: short waves (under
      // context / high_freq_factor) stay, long ones (over context / low_freq_factor) are
      // divided by factor, and those between blend linearly in context / wavelength.
      const double wavelength = 2 * M_PI / base, context = double(s.original_max_position_embeddings);
      if (wavelength < context / s.high_freq_factor) return base;
      if (wavelength > context / s.low_freq_factor) return base / s.factor;
      const double smooth = (context / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      return (1 - smooth) * base / s.factor + smooth * base;
    }
  }
  return base;
}

void ModelSpec::validate() const {
  auto positive = [&](const char* field, int64_t value) {
    if (value <= 0) throw SpecError(fmt::format("spec '{}': {} must be positive, got {}", name, field, value));
    if (value > INT32_MAX)  // sizes and token ids are i32 in programs
      throw SpecError(fmt::format("spec '{}': {} = {} is larger than 2^31 - 1", name, field, value));
  };
  positive("vocab", vocab);
  positive("dim", dim);
  positive("layers", layers);
  positive("heads", heads);
  positive("kv_heads", kv_heads);
  positive("head_dim", head_dim);
  positive("ffn", ffn);
  if (heads % kv_heads != 0)
    throw SpecError(fmt::format("spec '{}': heads ({}) must be a multiple of kv_heads ({})", name, heads, kv_heads));
  if (head_dim % 2 != 0)
    throw SpecError(fmt::format("spec '{}': head_dim must be even for rotary pairs, got {}", name, head_dim));
  if (!std::isfinite(norm_eps) || norm_eps <= 0)
    throw SpecError(fmt::format("spec '{}': norm_eps must be a positive finite number, got {}", name, norm_eps));
  if (!std::isfinite(rope_theta) || rope_theta <= 0)
    throw SpecError(fmt::format("spec '{}': rope_theta must be a positive finite number, got {}", name, rope_theta));
  auto storable = [](DType t) { return t == DType::f32 || is_half(t) || is_quantized(t); };
  if (!storable(dtype))
    throw SpecError(fmt::format("spec '{}': dtype must be f32, bf16, f16 or a quantized type, got {}", name,
                                dtype_name(dtype)));
  // A quantized matrix's rows must be whole blocks of its format.
  auto whole_blocks = [&](const std::string& weight, DType type, int64_t length, const std::string& what) {
    const auto format = quant_format(type);
    if (!format) return;
    const int64_t block = block_layout(*format, length).values;
    if (length % block != 0)
      throw SpecError(fmt::format("spec '{}': {} stores rows in whole blocks of {} values, but the rows of {} ({} "
                                  "values) are not{}",
                                  name, dtype_name(type), block, weight, length, what));
  };
  for (const auto& [weight, type] : weight_dtypes) {
    const std::optional<WeightInfo> w = find_weight(*this, weight);
    if (!w) throw SpecError(fmt::format("spec '{}': weight_dtypes names '{}', which is not a weight of it", name, weight));
    if (!storable(type) || (is_quantized(type) && w->shape.size() != 2))
      throw SpecError(fmt::format("spec '{}': weight '{}' {} cannot be stored as {} (a matrix may be f32, bf16, f16 "
                                  "or quantized; a vector f32, bf16 or f16)",
                                  name, weight, shape_str(w->shape), dtype_name(type)));
    whole_blocks(weight, type, w->shape.back(), "");
  }
  if (is_quantized(dtype)) {
    // The matrices of each row length that take the spec's dtype: the first one that does
    // not have a type of its own is named. A layer is looked at only while every earlier
    // one had its own type, so this takes at most one step past the named weights.
    using Name = std::string (*)(int64_t);
    const std::vector<std::pair<int64_t, std::vector<Name>>> rows = {
        {dim, {weight::wq, weight::wk, weight::wv, weight::w1, weight::w3}}, {q_width(), {weight::wo}}, {ffn, {weight::w2}}};
    auto own = [&](const std::string& weight) { return weight_dtypes.contains(weight); };
    const std::string hint = " (give such weights a type of their own in weight_dtypes)";
    if (!own(weight::embedding())) whole_blocks(weight::embedding(), dtype, dim, hint);
    if (!tied && !own(weight::output())) whole_blocks(weight::output(), dtype, dim, hint);
    for (const auto& [length, kinds] : rows)
      for (Name kind : kinds)
        for (int64_t l = 0; l < layers; ++l)
          if (!own(kind(l))) {
            whole_blocks(kind(l), dtype, length, hint);
            break;
          }
  }
  for (const SpecKnob& knob : spec_knobs())
    if (knob.check) knob.check(*this);
}

std::string ModelSpec::summary() const {
  return fmt::format("{}: vocab={} dim={} layers={} heads={} kv_heads={} head_dim={} ffn={} norm_eps={} "
                     "rope_theta={} rope_style={} tied={}",
                     name, vocab, dim, layers, heads, kv_heads, head_dim, ffn, norm_eps, rope_theta,
                     rope_style_name(rope_style), tied) +
         knob_summary();
}

std::string ModelSpec::knob_summary() const {
  std::string out;
  for (const SpecKnob& knob : spec_knobs())
    if (knob.is_set(*this)) out += knob.summary(*this);
  if (dtype != DType::f32) out += fmt::format(" dtype={}", dtype_name(dtype));
  if (!weight_dtypes.empty()) {
    std::map<DType, int> counts;
    for (const auto& [weight, type] : weight_dtypes) ++counts[type];
    std::vector<std::string> parts;
    for (const auto& [type, n] : counts) parts.push_back(fmt::format("{} {}", n, dtype_name(type)));
    out += fmt::format(" weight_dtypes=({})", fmt::join(parts, ", "));
  }
  return out;
}

Json ModelSpec::to_json() const {
  Json json{{"name", name},         {"vocab", vocab},
              {"dim", dim},           {"layers", layers},
              {"heads", heads},       {"kv_heads", kv_heads},
              {"head_dim", head_dim}, {"ffn", ffn},
              {"norm_eps", norm_eps}, {"rope_theta", rope_theta},
              {"rope_style", rope_style_name(rope_style)}, {"tied", tied}};
  // The knobs only where they are set, so that a plain Llama spec reads as it always has.
  for (const SpecKnob& knob : spec_knobs())
    if (knob.is_set(*this)) json[knob.name] = knob.write(*this);
  if (dtype != DType::f32) json["dtype"] = dtype_name(dtype);  // absent means f32, as in files written before it
  if (!weight_dtypes.empty()) {
    Json types = Json::object();
    for (const auto& [weight, type] : weight_dtypes) types[weight] = dtype_name(type);
    json["weight_dtypes"] = std::move(types);
  }
  return json;
}

RopeScaling read_rope_scaling_parameters(RopeScalingType type, const Json& json, const std::string& where) {
  RopeScaling rs{type};
  if (type == RopeScalingType::none) return rs;
  rs.factor = json_number(json, "factor", where);
  if (type == RopeScalingType::llama3) {
    rs.low_freq_factor = json_number(json, "low_freq_factor", where);
    rs.high_freq_factor = json_number(json, "high_freq_factor", where);
    rs.original_max_position_embeddings = json_int(json, "original_max_position_embeddings", where);
  }
  return rs;
}

ModelSpec ModelSpec::from_json(const Json& json, const std::string& source) {
  if (!json.is_object()) throw FormatError(fmt::format("{}: a spec must be a JSON object", source));
  static const char* fields[] = {"name", "vocab", "dim", "layers", "heads", "kv_heads", "head_dim",
                                 "ffn", "norm_eps", "rope_theta", "rope_style", "tied", "dtype", "weight_dtypes"};
  for (auto it = json.begin(); it != json.end(); ++it) {
    if (std::find_if(std::begin(fields), std::end(fields), [&](const char* k) { return it.key() == k; }) ==
            std::end(fields) &&
        !find_spec_knob(it.key()))
      throw FormatError(fmt::format("{}: unknown spec field '{}'", source, it.key()));
  }
  ModelSpec spec;
  if (json.contains("name")) spec.name = json_string(json, "name", source);
  spec.vocab = json_int(json, "vocab", source);
  spec.dim = json_int(json, "dim", source);
  spec.layers = json_int(json, "layers", source);
  spec.heads = json_int(json, "heads", source);
  spec.kv_heads = json_int(json, "kv_heads", source);
  spec.head_dim = json_int(json, "head_dim", source);
  spec.ffn = json_int(json, "ffn", source);
  spec.norm_eps = json_number(json, "norm_eps", source);
  spec.rope_theta = json_number(json, "rope_theta", source);
  std::string style = json_string(json, "rope_style", source);
  if (style == "interleaved") spec.rope_style = RopeStyle::interleaved;
  else if (style == "half") spec.rope_style = RopeStyle::half;
  else throw FormatError(fmt::format("{}: field 'rope_style' must be \"interleaved\" or \"half\", got \"{}\"", source, style));
  spec.tied = json_bool(json, "tied", source);
  if (json.contains("dtype")) {
    const std::string dtype = json_string(json, "dtype", source);
    if (!parse_dtype(dtype, spec.dtype) ||
        (spec.dtype != DType::f32 && !is_half(spec.dtype) && !is_quantized(spec.dtype)))
      throw FormatError(fmt::format("{}: field 'dtype' must be \"f32\", \"bf16\", \"f16\" or a quantized type (q8_0, "
                                    "q4_0, q5_0, q4_K, q6_K, i8_row), got \"{}\"",
                                    source, dtype));
  }
  if (json.contains("weight_dtypes")) {
    const Json& types = json.at("weight_dtypes");
    if (!types.is_object())
      throw FormatError(fmt::format("{}: field 'weight_dtypes' must be an object of weight name: dtype", source));
    for (auto it = types.begin(); it != types.end(); ++it) {
      const std::string where = fmt::format("weight_dtypes.{}", it.key());
      DType type;
      if (!it.value().is_string() || !parse_dtype(it.value().get<std::string>(), type))
        throw FormatError(fmt::format("{}: field '{}' must be a dtype name (f32, bf16, f16, q8_0, q4_0, q5_0, q4_K, "
                                      "q6_K, i8_row), got {}",
                                      source, where, it.value().dump()));
      spec.weight_dtypes.emplace(it.key(), type);
    }
  }
  try {
    for (const SpecKnob& knob : spec_knobs())
      if (json.contains(knob.name)) knob.read(json, source, spec);
    spec.validate();
  } catch (const SpecError& e) {
    throw SpecError(fmt::format("{}: {}", source, e.what()));
  }
  check_model_fits(spec, source);
  return spec;
}

namespace {

struct Builtin {
  const char* description;
  ModelSpec spec;
};

const std::vector<Builtin>& builtins() {
  auto make = [](std::string name, int64_t vocab, int64_t dim, int64_t layers, int64_t heads, int64_t kv_heads,
                 int64_t head_dim, int64_t ffn, double theta, RopeStyle style, bool tied) {
    ModelSpec s;
    s.name = std::move(name);
    s.vocab = vocab, s.dim = dim, s.layers = layers, s.heads = heads, s.kv_heads = kv_heads;
    s.head_dim = head_dim, s.ffn = ffn, s.rope_theta = theta, s.rope_style = style, s.tied = tied;
    return s;
  };
  auto in_bf16 = [](ModelSpec s, double norm_eps) {
    s.dtype = DType::bf16;
    s.norm_eps = norm_eps;
    return s;
  };
  // Llama 3's rule with its published low/high frequency factors (1, 4) and original
  // context (8192); the factor is 32 for Llama 3.2 1B, 8 for Llama 3.1 8B.
  auto llama3_scaled = [](ModelSpec s, double factor) {
    s.rope_scaling = RopeScaling{RopeScalingType::llama3, factor, 1.0, 4.0, 8192};
    return s;
  };
  auto with_qk_norm = [](ModelSpec s) {
    s.qk_norm = true;
    return s;
  };
  static const std::vector<Builtin> table = {
      {"small enough for thousands of cases per second",
       make("tiny", 32, 16, 2, 4, 2, 4, 24, 10000, RopeStyle::interleaved, true)},
      {"the shapes of llama2.c's stories260K checkpoint",
       make("stories260K", 512, 64, 5, 8, 4, 8, 172, 10000, RopeStyle::interleaved, true)},
      {"a mid-sized synthetic model for benchmarks",
       make("bench512", 8000, 512, 8, 8, 4, 64, 1376, 10000, RopeStyle::interleaved, true)},
      {"the shapes of Llama 3.2 1B (Hugging Face rotary layout)",
       make("llama1b", 32000, 2048, 16, 32, 8, 64, 8192, 500000, RopeStyle::half, true)},
      // Today's common sizes as their checkpoints ship them: bf16, Hugging Face's rotary
      // layout, and the knobs of their config.json (docs/spec-knobs.md); seeded weights.
      {"Llama 3.2 1B's shapes in bf16, llama3 rope scaling (2.5 GB of weights)",
       llama3_scaled(in_bf16(make("llama3-1b", 128256, 2048, 16, 32, 8, 64, 8192, 500000, RopeStyle::half, true), 1e-5), 32)},
      {"Llama 3.1 8B's shapes in bf16, llama3 rope scaling (16 GB of weights)",
       llama3_scaled(in_bf16(make("llama3-8b", 128256, 4096, 32, 32, 8, 128, 14336, 500000, RopeStyle::half, false), 1e-5), 8)},
      {"Qwen3 0.6B's shapes in bf16, qk_norm (head_dim 128 apart from dim / heads)",
       with_qk_norm(in_bf16(make("qwen3-0.6b", 151936, 1024, 28, 16, 8, 128, 3072, 1000000, RopeStyle::half, true), 1e-6))},
  };
  return table;
}

}  // namespace

std::vector<std::string> builtin_spec_names() {
  std::vector<std::string> names;
  for (const auto& b : builtins()) names.push_back(b.spec.name);
  return names;
}

ModelSpec builtin_spec(const std::string& name) {
  for (const auto& b : builtins())
    if (b.spec.name == name) return b.spec;
  throw SpecError(fmt::format("no built-in spec named '{}' (known: {})", name, fmt::join(builtin_spec_names(), ", ")));
}

ModelSpec load_spec(const std::string& name_or_path) {
  for (const auto& b : builtins())
    if (b.spec.name == name_or_path) return b.spec;
  if (!fs::exists(name_or_path))
    throw SpecError(fmt::format("'{}' is neither a built-in spec ({}) nor a spec file", name_or_path,
                                fmt::join(builtin_spec_names(), ", ")));
  return ModelSpec::from_json(parse_json(read_file(name_or_path, max_bytes::spec), name_or_path), name_or_path);
}

}  // namespace cutcheck
