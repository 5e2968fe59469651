#include "model/weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "core/random.h"
#include "core/safetensors.h"
#include "model/checkpoint_export.h"
#include "quant/block_fields.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"

namespace cutcheck {

namespace weight {
std::string embedding() { return "tok_embeddings"; }
std::string attention_norm(int64_t l) { return fmt::format("layers.{}.attention_norm", l); }
std::string wq(int64_t l) { return fmt::format("layers.{}.attention.wq", l); }
std::string wk(int64_t l) { return fmt::format("layers.{}.attention.wk", l); }
std::string wv(int64_t l) { return fmt::format("layers.{}.attention.wv", l); }
std::string wo(int64_t l) { return fmt::format("layers.{}.attention.wo", l); }
std::string bq(int64_t l) { return fmt::format("layers.{}.attention.bq", l); }
std::string bk(int64_t l) { return fmt::format("layers.{}.attention.bk", l); }
std::string bv(int64_t l) { return fmt::format("layers.{}.attention.bv", l); }
std::string q_norm(int64_t l) { return fmt::format("layers.{}.attention.q_norm", l); }
std::string k_norm(int64_t l) { return fmt::format("layers.{}.attention.k_norm", l); }
std::string ffn_norm(int64_t l) { return fmt::format("layers.{}.ffn_norm", l); }
std::string w1(int64_t l) { return fmt::format("layers.{}.feed_forward.w1", l); }
std::string w2(int64_t l) { return fmt::format("layers.{}.feed_forward.w2", l); }
std::string w3(int64_t l) { return fmt::format("layers.{}.feed_forward.w3", l); }
std::string final_norm() { return "norm"; }
std::string output() { return "output"; }
std::string head(const ModelSpec& spec) { return spec.tied ? embedding() : output(); }
}  // namespace weight

namespace {

// Layer l's weights, in llama2.c's order.
void append_layer(std::vector<WeightInfo>& out, const ModelSpec& spec, int64_t l) {
  const int64_t D = spec.dim, F = spec.ffn, Q = spec.q_width(), KV = spec.kv_width();
  out.push_back({weight::attention_norm(l), {D}});
  out.push_back({weight::wq(l), {Q, D}});
  out.push_back({weight::wk(l), {KV, D}});
  out.push_back({weight::wv(l), {KV, D}});
  out.push_back({weight::wo(l), {D, Q}});
  if (spec.attention_bias) {
    out.push_back({weight::bq(l), {Q}});
    out.push_back({weight::bk(l), {KV}});
    out.push_back({weight::bv(l), {KV}});
  }
  if (spec.qk_norm) {
    out.push_back({weight::q_norm(l), {spec.head_dim}});
    out.push_back({weight::k_norm(l), {spec.head_dim}});
  }
  out.push_back({weight::ffn_norm(l), {D}});
  out.push_back({weight::w1(l), {F, D}});
  out.push_back({weight::w2(l), {D, F}});
  out.push_back({weight::w3(l), {F, D}});
}

}  // namespace

std::vector<WeightInfo> weight_layout(const ModelSpec& spec) {
  std::vector<WeightInfo> out{{weight::embedding(), {spec.vocab, spec.dim}}};
  for (int64_t l = 0; l < spec.layers; ++l) append_layer(out, spec, l);
  out.push_back({weight::final_norm(), {spec.dim}});
  if (!spec.tied) out.push_back({weight::output(), {spec.vocab, spec.dim}});
  return out;
}

std::optional<WeightInfo> find_weight(const ModelSpec& spec, const std::string& name) {
  std::vector<WeightInfo> candidates{{weight::embedding(), {spec.vocab, spec.dim}}, {weight::final_norm(), {spec.dim}}};
  if (!spec.tied) candidates.push_back({weight::output(), {spec.vocab, spec.dim}});
  // "layers.<l>." with l written as the names write it (no sign, no leading zero), below layers.
  static const std::string prefix = "layers.";
  if (name.starts_with(prefix)) {
    const size_t digits = name.find_first_not_of("0123456789", prefix.size());
    const size_t count = digits == std::string::npos ? 0 : digits - prefix.size();
    if (count > 0 && count <= 10 && (count == 1 || name[prefix.size()] != '0')) {
      const int64_t l = std::stoll(name.substr(prefix.size(), count));
      if (l < spec.layers) append_layer(candidates, spec, l);
    }
  }
  for (WeightInfo& w : candidates)
    if (w.name == name) return std::move(w);
  return std::nullopt;
}

namespace {

bool is_norm(const std::string& name) {
  return name == weight::final_norm() || name.ends_with("_norm");
}

bool is_bias(const std::string& name) {
  return name.ends_with(".bq") || name.ends_with(".bk") || name.ends_with(".bv");
}

// The seeded values of one weight, in order, stored in the spec's dtype (bf16 and f16
// round the f32 values to nearest); each depends only on (seed, name).
class SeededValues {
 public:
  SeededValues(const ModelSpec& spec, const WeightInfo& w, uint64_t seed)
      : dtype_(stored_type(spec, w).dtype), norm_(is_norm(w.name)), rng_{seed ^ fnv1a(w.name)} {
    // Half-width a of a uniform [-a, a] with standard deviation sd: a = sqrt(3) sd.
    double sd = 1.0 / std::sqrt(double(w.shape.back()));
    if (w.name.ends_with(".wo") || w.name.ends_with(".w2")) sd *= 1.0 / std::sqrt(2.0 * double(spec.layers));
    half_width_ = is_bias(w.name) ? 0.5f : float(std::sqrt(3.0) * sd);
  }

  // Fills `out` with the next rows of a quantized weight: each row's values made as f32,
  // then quantized by the format's reference quantizer (ggml's rules).
  void fill_rows(std::span<std::byte> out, int64_t row_length) {
    const QuantFormat format = *quant_format(dtype_);
    const size_t bytes = size_t(row_bytes(format, row_length));
    std::vector<float> row(static_cast<size_t>(row_length));
    for (size_t at = 0; at < out.size(); at += bytes) {
      for (float& v : row) v = next();
      quantize_row_reference(format, row.data(), row_length, out.data() + at);
    }
  }

  // Fills `out` with the next out.size() / element-size values.
  void fill(std::span<std::byte> out) {
    const size_t n = out.size() / dtype_size(dtype_);
    for (size_t i = 0; i < n; ++i) {
      const float v = next();
      if (dtype_ == DType::f32) {
        std::memcpy(out.data() + 4 * i, &v, 4);
      } else {
        const uint16_t bits = f32_to_half(dtype_, v);
        std::memcpy(out.data() + 2 * i, &bits, 2);
      }
    }
  }

 private:
  float next() { return norm_ ? 1.0f + 0.5f * rng_.symmetric() : half_width_ * rng_.symmetric(); }

  DType dtype_;
  bool norm_;
  SplitMix64 rng_;
  float half_width_ = 0;
};

Metadata weights_metadata(const ModelSpec& spec) {
  return {{"format", "cutcheck-weights"}, {"spec", spec.to_json().dump()}};
}

}  // namespace

TensorMap synthetic_weights(const ModelSpec& spec, uint64_t seed) {
  spec.validate();
  TensorMap out;
  for (const WeightInfo& w : weight_layout(spec)) {
    Tensor t(stored_type(spec, w));
    if (is_quantized(t.dtype())) SeededValues(spec, w, seed).fill_rows(t.raw_mut(), w.shape.back());
    else SeededValues(spec, w, seed).fill(t.raw_mut());
    out.emplace(w.name, std::move(t));
  }
  return out;
}

void write_synthetic_weights(const fs::path& dir, const ModelSpec& spec, uint64_t seed,
                             std::optional<QuantFormat> through) {
  spec.validate();
  std::map<std::string, WeightInfo> layout;  // the file's order: by name
  std::map<std::string, TensorType> types;
  for (const WeightInfo& w : weight_layout(spec)) {
    layout.emplace(w.name, w);
    types.emplace(w.name, stored_type(spec, w));
  }
  if (through) {
    if (!ggml_type(*through))
      throw Error(fmt::format("weights quantized through {}: only ggml's block formats (q8_0, q4_0, q5_0, q4_K, q6_K)",
                              quant_format_name(*through)));
    if (spec.dtype != DType::f32)
      throw Error(fmt::format("weights quantized through {} are f32, but spec '{}' is {}", quant_format_name(*through),
                              spec.name, dtype_name(spec.dtype)));
    for (const auto& [name, w] : layout) {
      if (w.shape.size() != 2) continue;
      try {
        row_bytes(*through, w.shape.back());
      } catch (const Error& e) {
        throw Error(fmt::format("weight '{}' {}: {}", name, shape_str(w.shape), e.what()));
      }
    }
  }
  const std::string header = encode_safetensors_header(types, weights_metadata(spec));
  write_file_atomic(weights_file(dir), [&](const FileSink& write) {
    write(std::as_bytes(std::span(header.data(), header.size())));
    // 4 MiB at a time: no tensor is ever whole in memory. A piece of a matrix is whole
    // blocks (its rows are, and 4 MiB is), and the ggml formats quantize each block alone,
    // so a piece is quantized as one row.
    std::vector<std::byte> chunk(size_t{1} << 22);
    std::vector<std::byte> blocks;
    for (const auto& [name, w] : layout) {
      SeededValues values(spec, w, seed);
      if (const auto format = quant_format(types.at(name).dtype)) {  // a row at a time
        const int64_t cols = w.shape.back(), per_row = row_bytes(*format, cols);
        const int64_t rows_per_chunk = std::max<int64_t>(1, int64_t(chunk.size()) / std::max<int64_t>(per_row, 1));
        for (int64_t rows = types.at(name).elements() / std::max<int64_t>(cols, 1); rows > 0;) {
          const int64_t n = std::min(rows, rows_per_chunk);
          if (size_t(n * per_row) > chunk.size()) chunk.resize(size_t(n * per_row));
          values.fill_rows({chunk.data(), size_t(n * per_row)}, cols);
          write({chunk.data(), size_t(n * per_row)});
          rows -= n;
        }
        continue;
      }
      const bool rounded = through && w.shape.size() == 2;
      for (uint64_t left = types.at(name).bytes(); left > 0;) {
        const size_t n = size_t(std::min<uint64_t>(left, chunk.size()));
        values.fill({chunk.data(), n});
        if (rounded) {
          float* x = reinterpret_cast<float*>(chunk.data());
          const int64_t count = int64_t(n / 4);
          blocks.resize(size_t(row_bytes(*through, count)));
          quantize_row_reference(*through, x, count, blocks.data());
          dequantize_row(*through, blocks.data(), count, x);
        }
        write({chunk.data(), n});
        left -= n;
      }
    }
  });
}

fs::path weights_file(const fs::path& dir) { return dir / "model.safetensors"; }

void write_weights(const fs::path& dir, const TensorMap& weights, const ModelSpec& spec) {
  check_weights(weights, spec, "weights to write");
  write_safetensors(weights_file(dir), weights, weights_metadata(spec));
}

void check_weights(const TensorMap& weights, const ModelSpec& spec, const std::string& source) {
  for (const WeightInfo& w : weight_layout(spec)) {
    auto it = weights.find(w.name);
    if (it == weights.end())
      throw FormatError(fmt::format("{}: weight '{}' is missing (spec {})", source, w.name, spec.name));
    const TensorType want = stored_type(spec, w);
    if (it->second.type() != want)
      throw FormatError(fmt::format("{}: weight '{}' is {}, the spec needs {}", source, w.name,
                                    it->second.type().str(), want.str()));
  }
}

TensorMap read_weights(const fs::path& dir, const ModelSpec& spec) {
  const fs::path file = weights_file(dir);
  const SafetensorsFile f = SafetensorsFile::open(file);
  TensorMap weights;
  for (const WeightInfo& w : weight_layout(spec)) {
    if (!f.holds(w.name))
      throw FormatError(fmt::format("{}: weight '{}' is missing (spec {})", file.string(), w.name, spec.name));
    const std::string what = fmt::format("{}: weight '{}'", file.string(), w.name);
    Tensor t = f.read(w.name, stored_type(spec, w), what, "the spec needs");
    if (is_quantized(t.dtype())) check_scales(t, what);  // refused here, not in the middle of a campaign
    weights.emplace(w.name, std::move(t));
  }
  return weights;
}

TensorMap f32_weights(const TensorMap& weights) {
  TensorMap out;
  for (const auto& [name, t] : weights) out.emplace(name, convert_weight(t, DType::f32, fmt::format("weight '{}'", name)));
  return out;
}

TensorType stored_type(const ModelSpec& spec, const WeightInfo& w) {
  if (auto it = spec.weight_dtypes.find(w.name); it != spec.weight_dtypes.end()) return {it->second, w.shape};
  if (is_quantized(spec.dtype) && w.shape.size() != 2) return {DType::f32, w.shape};
  return {spec.dtype, w.shape};
}

}  // namespace cutcheck
