#include "model/llama2c.h"

#include <fmt/format.h>

#include <cstring>

#include "core/checked.h"
#include "core/error.h"
#include "model/checkpoint.h"
#include "model/weights.h"

namespace cutcheck {

Llama2cModel read_llama2c(std::span<const std::byte> bytes, const std::string& source) {
  constexpr size_t header_bytes = 7 * 4;
  if (bytes.size() < header_bytes)
    throw FormatError(fmt::format("{}: {} bytes is too short for llama2.c's 28-byte header", source, bytes.size()));
  int32_t h[7];
  std::memcpy(h, bytes.data(), header_bytes);
  const char* names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  for (int i = 0; i < 7; ++i)
    if (i != 5 && h[i] <= 0) throw FormatError(fmt::format("{}: header field {} is {}, must be positive", source, names[i], h[i]));
  if (h[5] == 0) throw FormatError(fmt::format("{}: header field vocab_size is 0", source));
  if (h[0] % h[3] != 0)
    throw FormatError(fmt::format("{}: dim ({}) is not a multiple of n_heads ({})", source, h[0], h[3]));

  Llama2cModel m;
  ModelSpec& s = m.spec;
  s.name = fs::path(source).stem().string();
  s.dim = h[0], s.ffn = h[1], s.layers = h[2], s.heads = h[3], s.kv_heads = h[4];
  s.vocab = h[5] < 0 ? -int64_t(h[5]) : h[5];
  s.tied = h[5] > 0;
  s.head_dim = s.dim / s.heads;
  s.norm_eps = 1e-5, s.rope_theta = 10000.0, s.rope_style = RopeStyle::interleaved;  // as run.c has them
  m.seq_len = h[6];
  try {
    s.validate();
  } catch (const SpecError& e) {
    throw FormatError(fmt::format("{}: the header describes an impossible model: {}", source, e.what()));
  }

  // Layer tensors are stored per kind, all layers together, in run.c's order.
  const int64_t D = s.dim, F = s.ffn, L = s.layers, Q = s.q_width(), KV = s.kv_width(), V = s.vocab;
  struct Block {
    std::function<std::string(int64_t)> name;
    Shape shape;
  };
  std::vector<Block> per_layer_1 = {{weight::attention_norm, {D}}, {weight::wq, {Q, D}}, {weight::wk, {KV, D}},
                                    {weight::wv, {KV, D}},         {weight::wo, {D, Q}}, {weight::ffn_norm, {D}},
                                    {weight::w1, {F, D}},          {weight::w2, {D, F}}, {weight::w3, {F, D}}};
  // Sizes from a crafted header can overflow 64 bits; each step is checked.
  uint64_t expected = 0;
  try {
    const std::string what = source + ": the checkpoint size the header implies";
    const uint64_t table = checked_mul(uint64_t(V), uint64_t(D), what);
    uint64_t total = table;
    for (const Block& b : per_layer_1)
      total = checked_add(total, checked_mul(uint64_t(L), uint64_t(element_count(b.shape)), what), what);
    total = checked_add(total, checked_add(uint64_t(D), checked_mul(uint64_t(m.seq_len), uint64_t(s.head_dim), what),
                                           what), what);  // final norm, two rotary tables
    if (!s.tied) total = checked_add(total, table, what);
    expected = checked_add(header_bytes, checked_mul(total, uint64_t{4}, what), what);
  } catch (const LimitError& e) {
    throw FormatError(fmt::format("{}: the header describes a model too large to exist: {}", source, e.what()));
  }
  if (bytes.size() != expected)
    throw FormatError(fmt::format("{}: {} bytes, but a llama2.c checkpoint with this header ({}, seq_len={}) has {}",
                                  source, bytes.size(), s.summary(), m.seq_len, expected));

  size_t at = header_bytes;
  auto take = [&](Shape shape) {
    Tensor t({DType::f32, std::move(shape)});
    std::memcpy(t.raw_mut().data(), bytes.data() + at, t.bytes());
    at += t.bytes();
    return t;
  };
  m.weights.emplace(weight::embedding(), take({V, D}));
  for (const Block& b : per_layer_1)
    for (int64_t l = 0; l < L; ++l) m.weights.emplace(b.name(l), take(b.shape));
  m.weights.emplace(weight::final_norm(), take({D}));
  at += size_t(m.seq_len * s.head_dim) * 4;  // freq_cis_real and freq_cis_imag, unused by run.c
  if (!s.tied) m.weights.emplace(weight::output(), take({V, D}));
  return m;
}

Llama2cModel read_llama2c(const fs::path& path) {
  auto mapped = MappedFile::open(path);
  return read_llama2c(mapped->bytes(), path.string());
}

void import_llama2c(const fs::path& checkpoint, const fs::path& dir) {
  Llama2cModel m = read_llama2c(checkpoint);
  write_imported(dir, m.spec, m.weights);
}

}  // namespace cutcheck
