#include "properties/case.h"

#include <fmt/format.h>

#include <cmath>

#include "model/signature.h"

namespace cutcheck {
namespace {

struct Stream {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  float uniform() { return float(int32_t(next() >> 40) - (1 << 23)) * 0x1p-23f; }  // [-1, 1)
  float garbage() {
    switch (next() % 8) {
      case 0: return NAN;
      case 1: return INFINITY;
      case 2: return -INFINITY;
      case 3: return 3e38f;
      default: return 1000.0f * uniform();
    }
  }
};

}  // namespace

std::string Case::str() const {
  return fmt::format("cut {}{}; tokens [{}]; positions [{}]; weight seed {}; data seed {}; spec {}", cut.str(),
                     tp > 1 ? fmt::format(" split {} ways", tp) : "", fmt::join(tokens, ","), fmt::join(positions, ","), weight_seed, data_seed, spec.summary());
}

void showValue(const Case& c, std::ostream& os) { os << c.str(); }

std::vector<int64_t> last_attended(const Case& c) {
  const bool cached = c.cut.family() != Family::forward && (c.cut.part() == Part::whole || c.cut.part() == Part::layer);
  if (!cached) return {};
  if (c.cut.family() == Family::batch) return {c.positions.begin(), c.positions.end()};
  if (c.cut.family() == Family::prefill) return {int64_t(c.positions[0]) + c.cut.rows - 1};
  return {c.positions[0]};
}

TensorMap case_inputs(const Case& c, uint64_t garbage_seed) {
  Stream data{c.data_seed}, garbage{garbage_seed};
  const std::vector<int64_t> last = last_attended(c);
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
      for (float& v : t.as_mut<float>()) v = data.uniform();
      out.emplace(port.name, std::move(t));
    } else {  // a cache: [C, K, E], or [R, C, K, E] for batch
      Tensor t(port.type);
      const Shape& s = port.type.shape;
      const bool per_row = s.size() == 4;
      const int64_t rows = per_row ? s[0] : 1, ctx = per_row ? s[1] : s[0];
      const int64_t width = s[s.size() - 2] * s[s.size() - 1];
      auto v = t.as_mut<float>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t pos = 0; pos < ctx; ++pos)
          for (int64_t i = 0; i < width; ++i)
            v[size_t((r * ctx + pos) * width + i)] = pos <= last[size_t(per_row ? r : 0)] ? data.uniform() : garbage.garbage();
      out.emplace(port.name, std::move(t));
    }
  }
  return out;
}

}  // namespace cutcheck
