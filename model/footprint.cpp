#include "model/footprint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "model/weights.h"

namespace cutcheck {
namespace {

// One monomial of an estimate: a product of spec and cut fields, times 4 bytes (f32) and
// a constant. Keeping the factors lets a refusal say which numbers make it large.
struct Term {
  double constant;
  std::vector<std::pair<const char*, int64_t>> factors;

  double bytes() const {
    double b = 4.0 * constant;
    for (const auto& f : factors) b *= double(f.second);
    return b;
  }
};

struct Component {
  const char* name;  // "the weights", "the kv caches", "the activations"
  std::vector<Term> terms;

  double bytes() const {
    double b = 0;
    for (const Term& t : terms) b += t.bytes();
    return b;
  }

  // "layers = 1000000000" or "ctx = 500000000 (with layers = 2, kv_heads = 2, head_dim = 4)":
  // the factors of the largest term, the largest of them first.
  std::string blame() const {
    const Term* worst = &terms.front();
    for (const Term& t : terms)
      if (t.bytes() > worst->bytes()) worst = &t;
    auto factors = worst->factors;
    std::stable_sort(factors.begin(), factors.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (factors.empty()) return "the spec";
    std::string out = fmt::format("{} = {}", factors[0].first, factors[0].second);
    std::vector<std::string> rest;
    for (size_t i = 1; i < factors.size(); ++i) rest.push_back(fmt::format("{} = {}", factors[i].first, factors[i].second));
    if (!rest.empty()) out += fmt::format(" (with {})", fmt::join(rest, ", "));
    return out;
  }
};

Component weights_part(const ModelSpec& s) {
  using F = std::pair<const char*, int64_t>;
  const F V{"vocab", s.vocab}, D{"dim", s.dim}, L{"layers", s.layers}, H{"heads", s.heads}, K{"kv_heads", s.kv_heads},
      E{"head_dim", s.head_dim}, FF{"ffn", s.ffn};
  // In f32 words per value, mapped as stored: bf16 and f16 2 bytes; a quantized matrix its
  // blocks' bytes per value (Q4_0: 18 / 32), its vectors f32.
  auto words = [](DType type, int64_t row) {
    const auto format = quant_format(type);
    return format ? double(block_layout(*format, row).bytes) / double(block_layout(*format, row).values) / 4
                  : double(dtype_size(type)) / 4;
  };
  const double w = words(s.dtype, s.dim);
  const double v = is_quantized(s.dtype) ? 1.0 : w;
  Component part{"the weights",
                 {{(s.tied ? 1.0 : 2.0) * w, {V, D}},  // embedding, and the head when untied
                  {1.0 * v, {D}},                      // final norm
                  {2.0 * v, {L, D}},                   // two norms per layer
                  {2.0 * w, {L, H, E, D}},             // wq, wo
                  {2.0 * w, {L, K, E, D}},             // wk, wv
                  {3.0 * w, {L, FF, D}}}};             // w1, w2, w3
  if (s.attention_bias) part.terms.insert(part.terms.end(), {{1.0 * v, {L, H, E}}, {2.0 * v, {L, K, E}}});  // bq; bk, bv
  if (s.qk_norm) part.terms.push_back({2.0 * v, {L, E}});                                                // q_norm, k_norm
  // A weight of a type of its own: what it takes beyond (or short of) the spec's type.
  for (const auto& [name, type] : s.weight_dtypes)
    if (const std::optional<WeightInfo> own = find_weight(s, name)) {
      const int64_t row = own->shape.back();
      const double usual = own->shape.size() == 2 ? words(s.dtype, row) : v;
      part.terms.push_back({words(type, row) - usual, {{"elements", element_count(own->shape)}}});
    }
  return part;
}

std::vector<Component> run_parts(const ModelSpec& s, const Cut& cut) {
  using F = std::pair<const char*, int64_t>;
  const CutParams p = cut_params(cut.kind);
  const bool rows = p.rows, whole = cut.part() == cutcheck::Part::whole;
  const int64_t ctx = p.ctx ? cut.ctx : 1;
  const F R{"rows", rows ? cut.rows : 1}, C{"ctx", ctx}, L{"layers", whole ? s.layers : 1},
      K{"kv_heads", s.kv_heads}, E{"head_dim", s.head_dim}, H{"heads", s.heads}, V{"vocab", s.vocab},
      D{"dim", s.dim}, FF{"ffn", s.ffn};
  std::vector<Component> parts{weights_part(s)};
  if (p.ctx) {
    // k and v per layer, as inputs and again as outputs; batch rows each carry their own.
    Term caches{4.0, {L, C, K, E}};
    if (cut.family() == Family::batch) caches.factors.insert(caches.factors.begin(), R);
    parts.push_back({"the kv caches", {caches}});
  }
  // bf16 and f16 weights are contracted as stored (docs/numerics.md): no widened copy.
  parts.push_back({"the activations", {{3.0, {R, FF}}, {2.0, {R, V}}, {1.0, {R, H, C}}, {8.0, {R, D}}}});
  return parts;
}

[[noreturn]] void refuse(const std::string& source, const std::string& subject, const Component& part, double total) {
  std::string what = fmt::format("{} makes {} {}", part.blame(), part.name, human_bytes(part.bytes()));
  if (total > part.bytes()) what += fmt::format(" (the whole run {})", human_bytes(total));
  throw LimitError(fmt::format("{}: {}{}, above the memory limit of {} (CUTCHECK_MEMORY_LIMIT)", source, subject, what,
                               human_bytes(double(memory_limit()))));
}

}  // namespace

std::string human_bytes(double bytes) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  if (!(bytes >= 1024)) return fmt::format("{} bytes", bytes);
  int u = -1;
  while (bytes >= 1024 && u + 1 < int(std::size(units))) bytes /= 1024, ++u;
  return fmt::format("{:.3g} {}", bytes, units[u]);
}

double weight_bytes(const ModelSpec& spec) { return weights_part(spec).bytes(); }

double run_bytes(const ModelSpec& spec, const Cut& cut) {
  double total = 0;
  for (const Component& part : run_parts(spec, cut)) total += part.bytes();
  return total;
}

void check_model_fits(const ModelSpec& spec, const std::string& source) {
  Component w = weights_part(spec);
  // Exactly the limit is refused too: the weights are never all a run holds.
  if (w.bytes() >= double(memory_limit())) refuse(source, "", w, w.bytes());
}

void check_run_fits(const ModelSpec& spec, const Cut& cut, const std::string& source) {
  std::vector<Component> parts = run_parts(spec, cut);
  double total = 0;
  for (const Component& part : parts) total += part.bytes();
  if (total <= double(memory_limit())) return;
  const Component* worst = &parts.front();
  for (const Component& part : parts)
    if (part.bytes() > worst->bytes()) worst = &part;
  refuse(source, fmt::format("{}: ", cut.str()), *worst, total);
}

}  // namespace cutcheck
