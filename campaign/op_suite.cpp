#include "campaign/op_suite.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "author/builder.h"
#include "core/interrupt.h"
#include "core/random.h"
#include "core/safetensors.h"
#include "core/text.h"
#include "harness/runner.h"
#include "harness/split.h"
#include "program/folder.h"
#include "program/rewrite.h"
#include "program/text.h"
#include "quant/quantize.h"
#include "reference/interpreter.h"

namespace cutcheck {
namespace {

using K = OpKind;
using S = Shape;

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float nan = std::numeric_limits<float>::quiet_NaN();
constexpr int32_t i32_min = std::numeric_limits<int32_t>::min(), i32_max = std::numeric_limits<int32_t>::max();

// The f32 values where element-wise kernels differ: NaN, the infinities, signed zeros,
// the largest and a subnormal magnitude, exp's overflow and underflow edges, and plain ones.
const std::vector<float> special_f32 = {nan,   inf,    -inf,  0.0f,   -0.0f, 1.0f,  -1.0f, 3e38f,
                                        -3e38f, 1e-40f, 0.5f, -2.5f, 88.75f, -104.0f, 1e-30f};
const std::vector<int32_t> special_i32 = {i32_min, i32_max, 0, -1, 1, 7, -7, 65536};

std::string types_text(const std::vector<Tensor>& operands) {
  std::vector<std::string> t;
  for (const Tensor& x : operands) t.push_back(x.type().str());
  return fmt::format("{}", fmt::join(t, ","));
}

class Suite {
 public:
  explicit Suite(uint64_t seed) : rng_{seed} {}

  // `rows` rows of `cols` values in `format`: values of spreads from 1e-3 to 1e3 (and a
  // zero row) quantized by the format's reference quantizer.
  Tensor quantized(QuantFormat format, int64_t rows, int64_t cols) {
    Tensor t(TensorType{dtype_of(format), {rows, cols}});
    const size_t stride = size_t(row_bytes(format, cols));
    std::vector<float> x(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      const float spread = r == 0 ? 0.0f : std::pow(10.0f, float(r % 7) - 3);
      for (float& v : x) v = rng_.symmetric() * spread;
      quantize_row_reference(format, x.data(), cols, t.raw_mut().data() + size_t(r) * stride);
    }
    return t;
  }

  // Uniform in [-scale, scale), with the special values mixed in every few elements.
  Tensor f32(S shape, float scale = 1, bool specials = true) {
    Tensor t(TensorType{DType::f32, std::move(shape)});
    auto v = t.as_mut<float>();
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = specials && i % 3 == 1 ? special_f32[(i / 3) % special_f32.size()] : rng_.symmetric() * scale;
    return t;
  }
  Tensor i32(S shape, int32_t lo, int32_t hi, bool edges = false) {
    Tensor t(TensorType{DType::i32, std::move(shape)});
    auto v = t.as_mut<int32_t>();
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = edges && i % 3 == 1 ? special_i32[(i / 3) % special_i32.size()]
                                 : int32_t(lo + int64_t(rng_.next() % uint64_t(int64_t(hi) - lo + 1)));
    return t;
  }
  Tensor i1(S shape) {
    Tensor t(TensorType{DType::i1, std::move(shape)});
    for (uint8_t& b : t.as_mut<uint8_t>()) b = uint8_t(rng_.next() & 1);
    return t;
  }
  // Every pair of special values: a[i, j] = special[i], b[i, j] = special[j].
  std::pair<Tensor, Tensor> pairs_f32() {
    const size_t n = special_f32.size();
    std::vector<float> a, b;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) a.push_back(special_f32[i]), b.push_back(special_f32[j]);
    return {Tensor::of_f32({int64_t(n), int64_t(n)}, a), Tensor::of_f32({int64_t(n), int64_t(n)}, b)};
  }
  std::pair<Tensor, Tensor> pairs_i32() {
    const size_t n = special_i32.size();
    std::vector<int32_t> a, b;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) a.push_back(special_i32[i]), b.push_back(special_i32[j]);
    return {Tensor::of_i32({int64_t(n), int64_t(n)}, a), Tensor::of_i32({int64_t(n), int64_t(n)}, b)};
  }

  // `kind` on `operands`, each a program input; an i1 operand arrives as an i32 input
  // of 0 and 1 compared with 0 (i1 is never an input), and an i1 result leaves converted;
  // a quantized operand is a weight, and a quantized result leaves converted to f32.
  void add(const std::string& label, K kind, const std::vector<Tensor>& operands, std::vector<Attr> attrs = {},
           std::optional<TensorType> stated = std::nullopt) {
    OpCase c;
    c.kind = kind;
    c.name = fmt::format("{}({}){}{}{}", op_info(kind).name, types_text(operands), stated ? " -> " + stated->str() : "",
                         label.empty() ? "" : " ", label);
    Builder b(c.name);
    std::vector<ValueId> ids;
    for (size_t i = 0; i < operands.size(); ++i) {
      const std::string name = fmt::format("in{}", i);
      const Tensor& x = operands[i];
      if (x.dtype() == DType::i1) {
        Tensor as_int(TensorType{DType::i32, x.shape()});
        for (size_t e = 0; e < size_t(x.elements()); ++e) as_int.as_mut<int32_t>()[e] = x.as<uint8_t>()[e];
        ValueId in = b.input(name, as_int.type());
        ids.push_back(b.compare(in, b.constant(0, as_int.type(), name + ".zero"), "NE", name + ".pred"));
        c.inputs.emplace(name, as_int);
      } else if (is_quantized(x.dtype())) {  // only weights are quantized
        ids.push_back(b.weight(name, x.type()));
        c.weights.emplace(name, x);
      } else {
        ids.push_back(b.input(name, x.type()));
        c.inputs.emplace(name, x);
      }
    }
    ValueId r = b.op(kind, ids, std::move(attrs), "result", std::move(stated));
    if (b.type(r).dtype == DType::i1) r = b.convert(r, DType::i32, "result.i32");
    if (is_quantized(b.type(r).dtype)) r = b.convert(r, DType::f32, "result.f32");  // never an output
    b.output("result", r);
    c.chips.push_back(b.finish());
    cases_.push_back(std::move(c));
  }

  // A collective over `tp` chips, each given the same operand.
  void add_collective(K kind, const Tensor& operand, std::vector<Attr> attrs, int64_t tp) {
    OpCase c;
    c.kind = kind;
    c.name = fmt::format("{}({}) {} chips", op_info(kind).name, operand.type().str(), tp);
    for (int64_t chip = 0; chip < tp; ++chip) {
      Builder b(c.name, Replica{chip, tp});
      ValueId r = b.op(kind, {b.input("in0", operand.type())}, attrs, "result");
      b.output("result", r);
      c.chips.push_back(b.finish());
    }
    c.inputs.emplace("in0", operand);
    cases_.push_back(std::move(c));
  }

  std::vector<OpCase> take() { return std::move(cases_); }

 private:
  SplitMix64 rng_;
  std::vector<OpCase> cases_;
};

std::vector<std::vector<int64_t>> groups(int64_t tp) {
  std::vector<int64_t> g;
  for (int64_t c = 0; c < tp; ++c) g.push_back(c);
  return {g};
}

void elementwise_cases(Suite& s) {
  const S rank8{1, 2, 1, 3, 1, 2, 1, 2};
  for (K k : op_kinds(OpClass::binary)) {
    auto [a, b] = s.pairs_f32();
    s.add("special pairs", k, {a, b});
    s.add("", k, {s.f32({}), s.f32({})});
    s.add("", k, {s.f32({0, 3}), s.f32({0, 3})});
    s.add("", k, {s.f32(rank8, 4), s.f32(rank8, 4)});
  }
  for (K k : op_kinds(OpClass::binary)) {
    if (!op_info(k).i32) continue;
    auto [a, b] = s.pairs_i32();
    s.add("wrap-around", k, {a, b});
    s.add("", k, {s.i32({3, 5}, -1000, 1000), s.i32({3, 5}, -1000, 1000)});
  }
  for (K k : op_kinds(OpClass::unary)) {
    s.add("", k, {s.f32({4, 16}, 4)});
    s.add("large", k, {s.f32({64}, 200, false)});
    s.add("", k, {s.f32({})});
    s.add("", k, {s.f32({2, 0})});
  }
  for (K k : op_kinds(OpClass::unary))
    if (op_info(k).i32) s.add("wrap-around", k, {Tensor::of_i32({4}, {i32_min, i32_max, 0, -5})});
  for (auto [e, m] : {std::pair<int64_t, int64_t>{8, 7}, {5, 10}, {4, 3}, {8, 0}, {1, 0}, {8, 23}, {11, 52}}) {
    const std::string label = fmt::format("exponent_bits={} mantissa_bits={}", e, m);
    s.add(label, K::reduce_precision, {s.f32({8, 16}, 2)}, {integer(e), integer(m)});
    s.add(label + " large", K::reduce_precision, {s.f32({64}, 7e4f, false)}, {integer(e), integer(m)});
  }
  for (const char* dir : {"EQ", "NE", "LT", "LE", "GT", "GE"}) {
    auto [a, b] = s.pairs_f32();
    s.add(dir, K::compare, {a, b}, {word(dir)});
    auto [c, d] = s.pairs_i32();
    s.add(dir, K::compare, {c, d}, {word(dir)});
  }
  s.add("", K::select, {s.i1({3, 4}), s.f32({3, 4}), s.f32({3, 4})});
  s.add("", K::select, {s.i1({3, 4}), s.i32({3, 4}, -9, 9), s.i32({3, 4}, -9, 9)});
  s.add("", K::select, {s.i1({}), s.f32({}), s.f32({})});
  s.add("", K::select, {s.i1({0}), s.f32({0}), s.f32({0})});
}

void value_cases(Suite& s) {
  for (double v : {0.0, -0.0, double(1e-5f), -3.5, double(inf), double(-inf), double(nan), double(3.4028235e38f)})
    for (const S& shape : {S{}, S{2, 3}, S{0}})
      s.add(fmt::format("value={}", format_number(v, DType::f32)), K::constant, {}, {number(v)}, TensorType{DType::f32, shape});
  for (double v : {0.0, -1.0, double(i32_min), double(i32_max)})
    s.add(fmt::format("value={}", v), K::constant, {}, {number(v)}, TensorType{DType::i32, {3}});
  for (DType d : {DType::f32, DType::i32}) {
    s.add("iota_dimension=1", K::iota, {}, {integer(1)}, TensorType{d, {2, 5}});
    s.add("iota_dimension=7", K::iota, {}, {integer(7)}, TensorType{d, {1, 2, 1, 2, 1, 2, 1, 3}});
    s.add("iota_dimension=0", K::iota, {}, {integer(0)}, TensorType{d, {0, 3}});
  }
  Tensor to_int = Tensor::of_f32({12}, {nan, inf, -inf, 2147483520.0f, 2147483648.0f, -2147483648.0f, -2147483904.0f,
                                        1.9f, -1.9f, -0.0f, 0.5f, -0.5f});
  s.add("saturating", K::convert, {to_int}, {}, TensorType{DType::i32, {12}});
  s.add("", K::convert, {s.f32({3, 4}, 1e6f)}, {}, TensorType{DType::i32, {3, 4}});
  s.add("rounding", K::convert, {Tensor::of_i32({5}, {16777217, -16777219, i32_max, i32_min, 3})}, {},
        TensorType{DType::f32, {5}});
  s.add("", K::convert, {s.i1({2, 3})}, {}, TensorType{DType::f32, {2, 3}});
  s.add("", K::convert, {s.i1({2, 3})}, {}, TensorType{DType::i32, {2, 3}});
  s.add("", K::convert, {s.f32({4})}, {}, TensorType{DType::f32, {4}});
  s.add("", K::convert, {s.i32({4}, -5, 5)}, {}, TensorType{DType::i32, {4}});
  s.add("", K::convert, {s.f32({0})}, {}, TensorType{DType::i32, {0}});
}

void movement_cases(Suite& s) {
  using I = std::vector<int64_t>;
  auto bcast = [&](const Tensor& x, S to, I dims, const std::string& label) {
    s.add(label, K::broadcast_in_dim, {x}, {ints(dims)}, TensorType{x.dtype(), to});
  };
  bcast(s.f32({3}), {2, 3}, {1}, "");
  bcast(s.f32({1, 3}), {4, 3}, {0, 1}, "size-1");
  bcast(s.f32({}), {2, 2}, {}, "rank 0");
  bcast(s.f32({2, 3}), {3, 2}, {1, 0}, "unsorted dimensions");
  bcast(s.i32({1, 2}, -9, 9), {2, 3, 2}, {1, 2}, "size-1");
  bcast(s.f32({0}), {2, 0}, {1}, "0-size");
  bcast(s.f32({1, 1, 1, 1, 1, 1, 1}), {2, 1, 2, 1, 2, 1, 2, 1}, {1, 2, 3, 4, 5, 6, 7}, "rank 8");
  auto reshape = [&](const Tensor& x, S to) { s.add("", K::reshape, {x}, {}, TensorType{x.dtype(), to}); };
  reshape(s.f32({2, 3}), {6});
  reshape(s.f32({}), {1, 1});
  reshape(s.f32({1}), {});
  reshape(s.f32({0, 4}), {2, 0});
  reshape(s.i32({1, 2, 1, 2, 1, 2, 1, 2}, -9, 9), {16});
  s.add("", K::transpose, {s.f32({2, 3, 4})}, {ints({2, 0, 1})});
  s.add("rank 8", K::transpose, {s.f32({1, 2, 1, 3, 1, 2, 1, 2})}, {ints({7, 6, 5, 4, 3, 2, 1, 0})});
  s.add("rank 0", K::transpose, {s.f32({})}, {ints({})});
  s.add("", K::transpose, {s.i32({3, 0}, -9, 9)}, {ints({1, 0})});
  auto slice = [&](const Tensor& x, I start, I limit, I strides, const std::string& label) {
    s.add(label, K::slice, {x}, {ints(start), ints(limit), ints(strides)});
  };
  slice(s.f32({10}), {1}, {9}, {3}, "strided");
  slice(s.f32({6, 7}), {1, 0}, {6, 7}, {2, 3}, "strided");
  slice(s.i32({5, 4}, -9, 9), {2, 1}, {4, 3}, {1, 1}, "");
  slice(s.f32({4}), {2}, {2}, {1}, "0-size result");
  slice(s.f32({1, 2, 1, 3, 1, 2, 1, 2}), {0, 1, 0, 1, 0, 0, 0, 1}, {1, 2, 1, 3, 1, 2, 1, 2}, {1, 1, 1, 2, 1, 1, 1, 1},
        "rank 8");
  s.add("", K::concatenate, {s.f32({2, 3}), s.f32({2, 0}), s.f32({2, 1})}, {integer(1)});
  s.add("", K::concatenate, {s.i32({1, 2}, -9, 9), s.i32({3, 2}, -9, 9)}, {integer(0)});
  s.add("", K::concatenate, {s.f32({4})}, {integer(0)});
  auto dus = [&](const Tensor& base, const Tensor& update, std::vector<int32_t> starts, const std::string& label) {
    std::vector<Tensor> operands{base, update};
    for (int32_t v : starts) operands.push_back(Tensor::scalar_i32(v));
    s.add(label, K::dynamic_update_slice, operands);
  };
  dus(s.f32({6, 4}), s.f32({2, 4}), {3, 0}, "");
  dus(s.f32({6, 4}), s.f32({2, 3}), {-7, 9}, "clamped indices");
  dus(s.f32({6, 4}), s.f32({2, 4}), {5, i32_min}, "clamped indices");
  dus(s.i32({5, 2, 3}, -9, 9), s.i32({1, 2, 3}, 100, 200), {i32_max, 0, 1}, "clamped indices");
  dus(s.f32({}), s.f32({}), {}, "rank 0");
  dus(s.f32({3, 2}), s.f32({0, 2}), {1, 0}, "0-size update");
  s.add("clamped indices", K::gather, {s.f32({5, 3}), Tensor::of_i32({6}, {0, 4, -1, 5, i32_min, i32_max})});
  s.add("", K::gather, {s.f32({7}), s.i32({2, 3}, 0, 6)});
  s.add("rank-0 index", K::gather, {s.f32({4, 2, 3}), Tensor::scalar_i32(2)});
  s.add("", K::gather, {s.i32({4, 2}, -9, 9), s.i32({3}, -2, 5)});
  s.add("0-size", K::gather, {s.f32({4, 2}), s.i32({0}, 0, 3)});
  // i1 values move as the author moves its masks (i1 operands are made inside the program).
  bcast(s.i1({3, 1}), {3, 4}, {0, 1}, "size-1");
  reshape(s.i1({2, 3}), {3, 2});
  s.add("", K::transpose, {s.i1({2, 3})}, {ints({1, 0})});
  slice(s.i1({6}), {1}, {6}, {2}, "strided");
  s.add("", K::concatenate, {s.i1({2}), s.i1({3})}, {integer(0)});
  s.add("", K::select, {s.i1({5}), s.i1({5}), s.i1({5})});
  dus(s.i1({4}), s.i1({2}), {3}, "clamped indices");
  s.add("", K::gather, {s.i1({3, 2}), s.i32({4}, -1, 3)});
}

void reduction_cases(Suite& s) {
  using I = std::vector<int64_t>;
  for (const char* kind : {"add", "max", "min"}) {
    s.add(kind, K::reduce, {s.f32({4, 6}, 4)}, {word(kind), ints({1})});
    s.add(kind, K::reduce, {s.f32({3, 4, 5}, 4)}, {word(kind), ints({0, 2})});
    s.add(std::string(kind) + " all dimensions", K::reduce, {s.f32({3, 4}, 4, false)}, {word(kind), ints({0, 1})});
    s.add(std::string(kind) + " over nothing", K::reduce, {s.f32({3, 0})}, {word(kind), ints({1})});
    s.add(std::string(kind) + " cancelling", K::reduce, {Tensor::of_f32({4}, {1e30f, 1.0f, -1e30f, 3.0f})},
          {word(kind), ints({0})});
    s.add(kind, K::reduce, {s.i32({5, 3}, -1000, 1000, true)}, {word(kind), ints({0})});
    s.add(std::string(kind) + " over nothing", K::reduce, {s.i32({0, 2}, 0, 1)}, {word(kind), ints({0})});
    s.add(std::string(kind) + " rank 8", K::reduce, {s.f32({1, 2, 1, 3, 1, 2, 1, 2}, 2, false)},
          {word(kind), ints({1, 3, 7})});
  }
  auto dot = [&](const Tensor& a, const Tensor& b, I lb, I rb, I lc, I rc, const std::string& label) {
    s.add(label, K::dot_general, {a, b}, {ints(lb), ints(rb), ints(lc), ints(rc)});
  };
  dot(s.f32({3, 8}, 1, false), s.f32({5, 8}, 1, false), {}, {}, {1}, {1}, "");
  dot(s.f32({2, 3, 4}, 1, false), s.f32({2, 4, 5}, 1, false), {0}, {0}, {2}, {1}, "batching");
  dot(s.f32({3, 2, 4}, 1, false), s.f32({4, 2}, 1, false), {}, {}, {1, 2}, {1, 0}, "two contracting dimensions");
  dot(s.f32({3, 0}), s.f32({0, 2}), {}, {}, {1}, {0}, "empty contraction");
  dot(s.f32({4, 4}), s.f32({4}), {}, {}, {1}, {0}, "specials");
  dot(s.f32({5}, 1, false), s.f32({5}, 1, false), {}, {}, {0}, {0}, "rank-0 result");
}

// Quantized weights: converted, taken apart and gathered, in every format.
void quantized_cases(Suite& s) {
  for (QuantFormat format : all_quant_formats) {
    const Tensor w = s.quantized(format, 7, 256);
    s.add("", K::convert, {w}, {}, TensorType{DType::f32, w.shape()});
    for (const char* field : {"codes", "scales", "mins"})
      if (std::string_view(field) != "mins" || has_mins(format)) s.add(field, K::block_field, {w}, {word(field)});
    s.add("rows", K::gather, {w, Tensor::of_i32({3}, {6, 0, 3})});
  }
}

}  // namespace

std::vector<OpCase> op_cases(uint64_t seed) {
  Suite s(seed);
  elementwise_cases(s);
  value_cases(s);
  movement_cases(s);
  reduction_cases(s);
  quantized_cases(s);
  for (int64_t tp : {2, 4}) {
    s.add_collective(K::all_reduce, s.f32({3, 4}), {word("add"), Attr(groups(tp))}, tp);
    s.add_collective(K::all_reduce, s.i32({5}, i32_max - 3, i32_max), {word("add"), Attr(groups(tp))}, tp);
    s.add_collective(K::all_gather, s.f32({2, 3}), {integer(1), Attr(groups(tp))}, tp);
    s.add_collective(K::all_gather, s.i32({2}, -9, 9), {integer(0), Attr(groups(tp))}, tp);
  }
  return s.take();
}

std::string op_verdict_name(OpVerdict v) {
  switch (v) {
    case OpVerdict::bitwise: return "bitwise";
    case OpVerdict::close: return "within tolerance";
    case OpVerdict::failed: return "FAILED";
    case OpVerdict::unsupported: return "unsupported";
  }
  return "?";
}

int OpReport::count(OpVerdict v) const {
  int n = 0;
  for (const OpResult& r : results) n += r.verdict == v;
  return n;
}

bool OpReport::passed() const { return count(OpVerdict::failed) == 0 && count(OpVerdict::bitwise) + count(OpVerdict::close) > 0; }

std::string OpReport::table() const {
  std::string out;
  for (const OpResult& r : results)
    out += fmt::format("{:<17} {}{}\n", op_verdict_name(r.verdict), r.name, r.detail.empty() ? "" : ": " + r.detail);
  out += fmt::format("{} op cases: {} bitwise, {} within tolerance, {} failed, {} unsupported\n", results.size(),
                     count(OpVerdict::bitwise), count(OpVerdict::close), count(OpVerdict::failed),
                     count(OpVerdict::unsupported));
  return out;
}

Json OpReport::json() const {
  Json cases = Json::array();
  for (const OpResult& r : results) cases.push_back({{"name", r.name}, {"verdict", op_verdict_name(r.verdict)}, {"detail", r.detail}});
  return {{"format", "cutcheck-ops-1"},
          {"passed", passed()},
          {"counts",
           {{"bitwise", count(OpVerdict::bitwise)},
            {"close", count(OpVerdict::close)},
            {"failed", count(OpVerdict::failed)},
            {"unsupported", count(OpVerdict::unsupported)}}},
          {"cases", cases}};
}

namespace {

// Equal bits, any NaN matching any NaN.
bool bitwise_equal(const Tensor& want, const Tensor& got) {
  if (want.type() != got.type()) return false;
  if (want.dtype() != DType::f32) return want.same_bits(got);
  auto w = want.as<float>(), g = got.as<float>();
  for (size_t i = 0; i < w.size(); ++i)
    if (std::memcmp(&w[i], &g[i], 4) != 0 && !(std::isnan(w[i]) && std::isnan(g[i]))) return false;
  return true;
}

// The reference's result and, under the bound policy, its bound. The collectives' cases
// (several chips) have no bound pass (bound/error_bound.h): they are held to the fixed
// f32 preset instead, which the returned tolerance says.
std::pair<Expected, Tolerance> reference_run(const OpCase& c, const Tolerance& tolerance) {
  std::vector<std::unique_ptr<Executable>> chips;
  std::vector<Executable*> raw;
  for (const Program& p : c.chips) raw.push_back(chips.emplace_back(std::make_unique<Executable>(p, c.weights)).get());
  if (c.chips.size() > 1) return {{run_split(raw, c.inputs), {}}, tolerance.bounded() ? Tolerance::fixed_f32() : tolerance};
  return {expect(*raw[0], c.inputs, tolerance), tolerance};
}

// The case's folder: its program, and its weights (if any) in weights.safetensors beside
// it; the manifest names no cut.
void write_case(const OpCase& c, const fs::path& folder) {
  fs::remove_all(folder);
  Manifest manifest{.dir = ".", .weights = {}, .about = Json::object()};
  for (const auto& [name, w] : c.weights) manifest.weights.push_back({name, "weights.safetensors", name, w.type()});
  for (size_t chip = 0; chip < c.chips.size(); ++chip)
    ProgramFolder{c.chips[chip], manifest, print(c.chips[chip])}.write(c.chips.size() == 1 ? folder
                                                                                           : folder / fmt::format("chip{}", chip));
  if (!c.weights.empty()) write_safetensors(folder / "weights.safetensors", c.weights);
}

}  // namespace

OpReport conform_ops(Backend& backend, const std::vector<OpCase>& cases, const std::vector<std::string>& filters,
                     const Tolerance& tolerance, const fs::path& work) {
  OpReport report;
  for (size_t i = 0; i < cases.size(); ++i) {
    const OpCase& c = cases[i];
    bool wanted = filters.empty();
    for (const std::string& f : filters) wanted = wanted || name_matches(f, c.name);
    if (!wanted) continue;
    throw_if_interrupted();
    OpResult r{c.name, OpVerdict::failed, ""};
    const fs::path folder = work / fmt::format("op-{}", i);
    write_case(c, folder);
    const auto [want, judged_by] = reference_run(c, tolerance);
    try {
      const TensorMap got = backend.lower(folder)->run(c.inputs);
      auto g = got.find("result");
      if (g == got.end()) {
        r.detail = "no output 'result'";
      } else if (bitwise_equal(want.values.at("result"), g->second)) {
        r.verdict = OpVerdict::bitwise;
      } else {
        Comparison cmp = compare(want, got, judged_by);
        r.verdict = cmp.ok ? OpVerdict::close : OpVerdict::failed;
        r.detail = cmp.ok ? fmt::format("max abs {:.3g}", cmp.outputs.at(0).max_abs) : cmp.failure;
      }
    } catch (const NotYet& e) {
      r.verdict = OpVerdict::unsupported;
      r.detail = clean_text(e.what());
    } catch (const std::exception& e) {
      r.detail = clean_text(e.what());
    }
    fs::remove_all(folder);
    report.results.push_back(std::move(r));
  }
  return report;
}

}  // namespace cutcheck
