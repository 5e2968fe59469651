#include "onnx/export.h"

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <unistd.h>
#include <functional>

#include "core/error.h"
#include "core/json.h"
#include "core/random.h"
#include "program/folder.h"

namespace cutcheck {
namespace {

namespace ox = ::onnx;
using Names = std::vector<std::string>;

// Bumped whenever the graphs the exporter writes change, so cached exports are redone.
constexpr std::string_view exporter_version = "cutcheck-onnx-1";

int onnx_type(DType d) {
  switch (d) {
    case DType::f32: return ox::TensorProto::FLOAT;
    case DType::i32: return ox::TensorProto::INT32;
    case DType::bf16: return ox::TensorProto::BFLOAT16;
    case DType::f16: return ox::TensorProto::FLOAT16;
    default: return ox::TensorProto::BOOL;
  }
}

std::string dtype_word(DType d) { return std::string(dtype_name(d)); }

// The ONNX name of a program value: '%' keeps it apart from the output names.
std::string value_name(const Program& p, ValueId v) { return "%" + p.name(v); }

void set_type(ox::ValueInfoProto* info, const std::string& name, const TensorType& t) {
  info->set_name(name);
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx_type(t.dtype));
  auto* shape = tensor->mutable_shape();
  for (int64_t d : t.shape) shape->add_dim()->set_dim_value(d);
}

// One ONNX graph under construction: nodes with fresh names for their results.
class Graph {
 public:
  Graph(ox::GraphProto* g, std::string prefix) : g_(g), prefix_(std::move(prefix)) {}

  std::string fresh() { return fmt::format("{}#{}", prefix_, next_++); }

  ox::NodeProto* add(const std::string& op_type, const Names& inputs, const std::string& output) {
    ox::NodeProto* n = g_->add_node();
    n->set_op_type(op_type);
    n->set_name(output);
    for (const std::string& i : inputs) n->add_input(i);
    n->add_output(output);
    return n;
  }
  // A node with a fresh result name; returns the name.
  std::string op(const std::string& op_type, const Names& inputs) {
    std::string out = fresh();
    add(op_type, inputs, out);
    return out;
  }
  std::string op(const std::string& op_type, const Names& inputs, const std::function<void(ox::NodeProto*)>& attrs) {
    std::string out = fresh();
    attrs(add(op_type, inputs, out));
    return out;
  }

  static void attr_int(ox::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(ox::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_ints(ox::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(ox::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }

  // A constant tensor as an initializer (shapes, axes, index grids).
  std::string int64s(const std::vector<int64_t>& v, const Shape& shape) {
    ox::TensorProto* t = g_->add_initializer();
    t->set_name(fresh());
    t->set_data_type(ox::TensorProto::INT64);
    for (int64_t d : shape) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t)));
    return t->name();
  }
  std::string int64s(const std::vector<int64_t>& v) { return int64s(v, {int64_t(v.size())}); }

  // A scalar constant of any of the element types used here.
  template <class T>
  std::string scalar(T v, int type) {
    ox::TensorProto* t = g_->add_initializer();
    t->set_name(fresh());
    t->set_data_type(type);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(&v), sizeof(T)));
    return t->name();
  }
  std::string f32(float v) { return scalar(v, ox::TensorProto::FLOAT); }
  std::string f64(double v) { return scalar(v, ox::TensorProto::DOUBLE); }
  std::string i32(int32_t v) { return scalar(v, ox::TensorProto::INT32); }

  std::string cast(const std::string& x, int to) {
    return op("Cast", {x}, [&](ox::NodeProto* n) { attr_int(n, "to", to); });
  }
  std::string reshape(const std::string& x, const Shape& shape) { return op("Reshape", {x, int64s(shape)}); }
  std::string transpose(const std::string& x, const std::vector<int64_t>& perm) {
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
    if (identity) return x;
    return op("Transpose", {x}, [&](ox::NodeProto* n) { attr_ints(n, "perm", perm); });
  }

  ox::GraphProto* proto() { return g_; }

 private:
  ox::GraphProto* g_;
  std::string prefix_;
  int next_ = 0;
};

// Lowers the ops of one segment into a graph; values from outside are graph inputs or
// weight initializers.
class Lowering {
 public:
  Lowering(const Program& p, Graph& g, OnnxPrecision precision) : p_(p), g_(g), spec_(precision == OnnxPrecision::spec) {}

  void lower(const Operation& op) {
    const std::string out = value_name(p_, op.result);
    std::string r = value(op);
    g_.add("Identity", {r}, out);
  }

 private:
  const TensorType& type(ValueId v) const { return p_.type(v); }
  std::string in(const Operation& op, size_t i) const { return value_name(p_, op.operands[i]); }

  // A function of f32 evaluated in double and cast once (spec), or in f32.
  std::string in_double(const std::string& x, const std::function<std::string(const std::string&)>& fn) {
    if (!spec_) return fn(x);
    return g_.cast(fn(g_.cast(x, ox::TensorProto::DOUBLE)), ox::TensorProto::FLOAT);
  }
  std::string one_like() { return spec_ ? g_.f64(1.0) : g_.f32(1.0f); }

  // maximum / minimum: ONNX leaves NaN open; where either operand is NaN, a + b is NaN.
  std::string nan_propagating(const std::string& kind, const std::string& a, const std::string& b) {
    std::string nan = g_.op("Or", {g_.op("IsNaN", {a}), g_.op("IsNaN", {b})});
    return g_.op("Where", {nan, g_.op("Add", {a, b}), g_.op(kind, {a, b})});
  }

  // Exact only where ONNX has the format: bf16 (8, 7), whose Cast from float rounds to
  // nearest even and overflows to infinity as the language says; at least f32's widths
  // change nothing. Other widths (fp16's subnormals, for one) have no exact form.
  std::string reduce_precision(const Operation& op) {
    const int64_t exponent_bits = op.integer("exponent_bits"), mantissa_bits = op.integer("mantissa_bits");
    if (exponent_bits >= 8 && mantissa_bits >= 23) return g_.op("Identity", {in(op, 0)});
    if (exponent_bits == 8 && mantissa_bits == 7)
      return g_.cast(g_.cast(in(op, 0), ox::TensorProto::BFLOAT16), ox::TensorProto::FLOAT);
    throw NotYet(fmt::format("%{} = reduce_precision {{exponent_bits = {}, mantissa_bits = {}}}: no exact ONNX form; "
                             "only (8, 7), bf16, is exported",
                             p_.name(op.result), exponent_bits, mantissa_bits));
  }

  std::string clamp_i32(const std::string& x, int32_t lo, int32_t hi) {
    return g_.op("Min", {g_.op("Max", {x, g_.i32(lo)}), g_.i32(hi)});
  }

  std::string value(const Operation& op) {
    const TensorType& t = type(op.result);
    const bool f = t.dtype == DType::f32;
    switch (op.kind) {
      case OpKind::constant: {
        const double v = op.number("value");
        ox::TensorProto splat;
        splat.set_data_type(onnx_type(t.dtype));
        if (f) {
          float x = float(v);
          splat.set_raw_data(std::string(reinterpret_cast<const char*>(&x), 4));
        } else {
          int32_t x = int32_t(v);
          splat.set_raw_data(std::string(reinterpret_cast<const char*>(&x), 4));
        }
        if (t.rank() == 0)
          return g_.op("Constant", {}, [&](ox::NodeProto* n) {
            auto* a = n->add_attribute();
            a->set_name("value");
            a->set_type(ox::AttributeProto::TENSOR);
            *a->mutable_t() = splat;
          });
        splat.add_dims(1);
        return g_.op("ConstantOfShape", {g_.int64s(t.shape)}, [&](ox::NodeProto* n) {
          auto* a = n->add_attribute();
          a->set_name("value");
          a->set_type(ox::AttributeProto::TENSOR);
          *a->mutable_t() = splat;
        });
      }
      case OpKind::iota: {
        const size_t d = size_t(op.integer("iota_dimension"));
        std::string range = g_.op("Range", {g_.i32(0), g_.i32(int32_t(t.shape[d])), g_.i32(1)});
        Shape along(t.shape.size(), 1);
        along[d] = t.shape[d];
        std::string grid = g_.op("Expand", {g_.reshape(range, along), g_.int64s(t.shape)});
        return f ? g_.cast(grid, ox::TensorProto::FLOAT) : grid;
      }
      case OpKind::convert: return convert(op, t);
      case OpKind::add: return g_.op("Add", {in(op, 0), in(op, 1)});
      case OpKind::subtract: return g_.op("Sub", {in(op, 0), in(op, 1)});
      case OpKind::multiply: return g_.op("Mul", {in(op, 0), in(op, 1)});
      case OpKind::divide: return g_.op("Div", {in(op, 0), in(op, 1)});
      case OpKind::maximum: return f ? nan_propagating("Max", in(op, 0), in(op, 1)) : g_.op("Max", {in(op, 0), in(op, 1)});
      case OpKind::minimum: return f ? nan_propagating("Min", in(op, 0), in(op, 1)) : g_.op("Min", {in(op, 0), in(op, 1)});
      case OpKind::power: {
        if (!spec_) return g_.op("Pow", {in(op, 0), in(op, 1)});
        std::string a = g_.cast(in(op, 0), ox::TensorProto::DOUBLE), b = g_.cast(in(op, 1), ox::TensorProto::DOUBLE);
        return g_.cast(g_.op("Pow", {a, b}), ox::TensorProto::FLOAT);
      }
      case OpKind::negate: return g_.op("Neg", {in(op, 0)});
      case OpKind::exponential: return in_double(in(op, 0), [&](auto x) { return g_.op("Exp", {x}); });
      case OpKind::log: return in_double(in(op, 0), [&](auto x) { return g_.op("Log", {x}); });
      case OpKind::sqrt: return in_double(in(op, 0), [&](auto x) { return g_.op("Sqrt", {x}); });
      case OpKind::sine: return in_double(in(op, 0), [&](auto x) { return g_.op("Sin", {x}); });
      case OpKind::cosine:  // ONNX Runtime's CPU Cos has no f64 kernel: cos x = sin(x + pi/2) in f64
        if (!spec_) return g_.op("Cos", {in(op, 0)});
        return in_double(in(op, 0), [&](auto x) { return g_.op("Sin", {g_.op("Add", {x, g_.f64(M_PI / 2)})}); });
      case OpKind::rsqrt:  // 1 / sqrt(x), as the reference computes it
        return in_double(in(op, 0), [&](auto x) { return g_.op("Div", {one_like(), g_.op("Sqrt", {x})}); });
      case OpKind::logistic:  // 1 / (1 + exp(-x)), as the reference computes it
        return in_double(in(op, 0), [&](auto x) {
          std::string one = one_like();
          return g_.op("Div", {one, g_.op("Add", {one, g_.op("Exp", {g_.op("Neg", {x})})})});
        });
      case OpKind::reduce_precision: return reduce_precision(op);
      case OpKind::compare: {
        const std::string& dir = op.word("comparison_direction");
        const Names ab{in(op, 0), in(op, 1)};
        if (dir == "EQ") return g_.op("Equal", ab);
        if (dir == "NE") return g_.op("Not", {g_.op("Equal", ab)});  // true on NaN, as IEEE says
        if (dir == "LT") return g_.op("Less", ab);
        if (dir == "LE") return g_.op("LessOrEqual", ab);
        if (dir == "GT") return g_.op("Greater", ab);
        return g_.op("GreaterOrEqual", ab);
      }
      case OpKind::select: return g_.op("Where", {in(op, 0), in(op, 1), in(op, 2)});
      case OpKind::broadcast_in_dim: return broadcast_in_dim(op, t);
      case OpKind::reshape: return g_.reshape(in(op, 0), t.shape);
      case OpKind::transpose: return g_.op("Transpose", {in(op, 0)}, [&](ox::NodeProto* n) {
          Graph::attr_ints(n, "perm", op.ints("permutation"));
        });
      case OpKind::slice: {
        const auto& start = op.ints("start_indices");
        std::vector<int64_t> axes;
        for (size_t d = 0; d < start.size(); ++d) axes.push_back(int64_t(d));
        if (start.empty()) return g_.op("Identity", {in(op, 0)});
        return g_.op("Slice", {in(op, 0), g_.int64s(start), g_.int64s(op.ints("limit_indices")), g_.int64s(axes),
                               g_.int64s(op.ints("strides"))});
      }
      case OpKind::concatenate: {
        Names parts;
        for (size_t i = 0; i < op.operands.size(); ++i) parts.push_back(in(op, i));
        return g_.op("Concat", parts, [&](ox::NodeProto* n) { Graph::attr_int(n, "axis", op.integer("dimension")); });
      }
      case OpKind::dynamic_update_slice: return dynamic_update_slice(op, t);
      case OpKind::gather: {  // the index clamped as the language says; ONNX leaves out-of-range open
        const int64_t rows = type(op.operands[0]).shape[0];
        return g_.op("Gather", {in(op, 0), clamp_i32(in(op, 1), 0, int32_t(rows - 1))},
                     [&](ox::NodeProto* n) { Graph::attr_int(n, "axis", 0); });
      }
      case OpKind::reduce: return reduce(op);
      case OpKind::dot_general: return dot_general(op, t);
      case OpKind::block_field: break;  // its operand is quantized, and export_onnx refuses those first
      case OpKind::all_reduce:
      case OpKind::all_gather: break;  // seams between segments, never lowered inside one
    }
    throw NotYet(fmt::format("%{} = {}: no ONNX form", p_.name(op.result), op_info(op.kind).name));
  }

  // f32 -> i32 toward zero, saturating, NaN to 0: ONNX's Cast leaves out-of-range and NaN
  // undefined, so only in-range values reach it.
  std::string convert(const Operation& op, const TensorType& t) {
    const DType from = type(op.operands[0]).dtype, to = t.dtype;
    const std::string x = in(op, 0);
    if (from == to) return g_.op("Identity", {x});
    // Widening a bf16 or f16 weight is exact; narrowing to one rounds to nearest even.
    if (from != DType::f32 || is_half(to)) return g_.cast(x, onnx_type(to));
    const std::string big = g_.f32(2147483648.0f), small = g_.f32(-2147483648.0f);
    const std::string high = g_.op("GreaterOrEqual", {x, big}), low = g_.op("Less", {x, small});
    const std::string outside = g_.op("Or", {g_.op("Or", {g_.op("IsNaN", {x}), high}), low});
    const std::string safe = g_.op("Where", {outside, g_.f32(0.0f), x});
    std::string i = g_.cast(safe, ox::TensorProto::INT32);
    i = g_.op("Where", {high, g_.i32(std::numeric_limits<int32_t>::max()), i});
    return g_.op("Where", {low, g_.i32(std::numeric_limits<int32_t>::min()), i});
  }

  // Operand dimensions in result order, reshaped to the result's rank, then expanded.
  std::string broadcast_in_dim(const Operation& op, const TensorType& t) {
    const TensorType& from = type(op.operands[0]);
    const auto& bd = op.ints("broadcast_dimensions");
    std::vector<int64_t> perm(bd.size());
    for (size_t k = 0; k < perm.size(); ++k) perm[k] = int64_t(k);
    std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return bd[size_t(a)] < bd[size_t(b)]; });
    Shape shape(t.shape.size(), 1);
    for (size_t k = 0; k < bd.size(); ++k) shape[size_t(bd[k])] = from.shape[k];
    std::string x = g_.reshape(g_.transpose(in(op, 0), perm), shape);
    return g_.op("Expand", {x, g_.int64s(t.shape)});
  }

  // ONNX has no dynamic_update_slice: ScatterND at the clamped start plus a constant grid
  // of the update's own indices.
  std::string dynamic_update_slice(const Operation& op, const TensorType& t) {
    const TensorType& u = type(op.operands[1]);
    const size_t rank = t.shape.size();
    if (u.elements() == 0) return g_.op("Identity", {in(op, 0)});
    if (rank == 0) return g_.op("Identity", {in(op, 1)});
    Names starts;
    for (size_t d = 0; d < rank; ++d) {
      std::string s = clamp_i32(in(op, 2 + d), 0, int32_t(t.shape[d] - u.shape[d]));
      starts.push_back(g_.reshape(g_.cast(s, ox::TensorProto::INT64), {1}));
    }
    std::string start = rank == 1 ? starts[0] : g_.op("Concat", starts, [](ox::NodeProto* n) { Graph::attr_int(n, "axis", 0); });
    std::vector<int64_t> grid;
    grid.reserve(size_t(u.elements()) * rank);
    std::vector<int64_t> at(rank, 0);
    for (int64_t e = 0; e < u.elements(); ++e) {
      grid.insert(grid.end(), at.begin(), at.end());
      for (size_t d = rank; d-- > 0;) {
        if (++at[d] < u.shape[d]) break;
        at[d] = 0;
      }
    }
    Shape grid_shape = u.shape;
    grid_shape.push_back(int64_t(rank));
    std::string indices = g_.op("Add", {g_.int64s(grid, grid_shape), start});
    return g_.op("ScatterND", {in(op, 0), indices, in(op, 1)});
  }

  std::string reduce(const Operation& op) {
    const TensorType& from = type(op.operands[0]);
    const std::string& kind = op.word("kind");
    const auto& dims = op.ints("dimensions");
    const bool f = from.dtype == DType::f32;
    std::string x = in(op, 0);
    if (dims.empty()) return kind == "add" && f ? g_.op("Add", {x, g_.f32(0.0f)}) : g_.op("Identity", {x});
    auto keep = [](ox::NodeProto* n) { Graph::attr_int(n, "keepdims", 0); };
    if (kind == "add") {
      const bool wide = f && spec_;
      if (wide) x = g_.cast(x, ox::TensorProto::DOUBLE);
      std::string s = g_.op("ReduceSum", {x, g_.int64s(dims)}, keep);
      return wide ? g_.cast(s, ox::TensorProto::FLOAT) : s;
    }
    const std::string onnx_kind = kind == "max" ? "ReduceMax" : "ReduceMin";
    std::string r = g_.op(onnx_kind, {x}, [&](ox::NodeProto* n) {
      keep(n);
      Graph::attr_ints(n, "axes", dims);
    });
    if (!f) return r;
    // ONNX leaves NaN open: a reduced row holding a NaN is NaN.
    std::string nans = g_.op("ReduceMax", {g_.cast(g_.op("IsNaN", {x}), ox::TensorProto::FLOAT)}, [&](ox::NodeProto* n) {
      keep(n);
      Graph::attr_ints(n, "axes", dims);
    });
    return g_.op("Where", {g_.op("Greater", {nans, g_.f32(0.0f)}), g_.f32(std::numeric_limits<float>::quiet_NaN()), r});
  }

  // [batch, free, contracting] against [batch, free, contracting]: an f32 MatMul, or in
  // spec precision an f64 Einsum (ONNX Runtime's optimiser fuses a Transpose into an f64
  // MatMul as com.microsoft.FusedMatMul, which has only an f32 kernel; docs/onnx.md).
  std::string dot_general(const Operation& op, const TensorType& t) {
    const TensorType &lhs = type(op.operands[0]), &rhs = type(op.operands[1]);
    const auto &lb = op.ints("lhs_batching_dimensions"), &rb = op.ints("rhs_batching_dimensions");
    const auto &lc = op.ints("lhs_contracting_dimensions"), &rc = op.ints("rhs_contracting_dimensions");
    auto free_of = [](const TensorType& x, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
      std::vector<int64_t> free;
      for (int64_t d = 0; d < x.rank(); ++d)
        if (std::find(a.begin(), a.end(), d) == a.end() && std::find(b.begin(), b.end(), d) == b.end()) free.push_back(d);
      return free;
    };
    auto product = [](const TensorType& x, const std::vector<int64_t>& dims) {
      int64_t n = 1;
      for (int64_t d : dims) n *= x.shape[size_t(d)];
      return n;
    };
    const std::vector<int64_t> lf = free_of(lhs, lb, lc), rf = free_of(rhs, rb, rc);
    const int64_t B = product(lhs, lb), M = product(lhs, lf), C = product(lhs, lc), N = product(rhs, rf);
    std::vector<int64_t> lp = lb, rp = rb;
    lp.insert(lp.end(), lf.begin(), lf.end());
    lp.insert(lp.end(), lc.begin(), lc.end());
    if (spec_) {
      rp.insert(rp.end(), rf.begin(), rf.end());
      rp.insert(rp.end(), rc.begin(), rc.end());
      std::string a = g_.cast(g_.reshape(g_.transpose(in(op, 0), lp), {B, M, C}), ox::TensorProto::DOUBLE);
      std::string b = g_.cast(g_.reshape(g_.transpose(in(op, 1), rp), {B, N, C}), ox::TensorProto::DOUBLE);
      std::string m = g_.op("Einsum", {a, b}, [](ox::NodeProto* n) {
        auto* e = n->add_attribute();
        e->set_name("equation");
        e->set_type(ox::AttributeProto::STRING);
        e->set_s("bmc,bnc->bmn");
      });
      return g_.reshape(g_.cast(m, ox::TensorProto::FLOAT), t.shape);
    }
    rp.insert(rp.end(), rc.begin(), rc.end());
    rp.insert(rp.end(), rf.begin(), rf.end());
    std::string a = g_.reshape(g_.transpose(in(op, 0), lp), {B, M, C});
    std::string b = g_.reshape(g_.transpose(in(op, 1), rp), {B, C, N});
    return g_.reshape(g_.op("MatMul", {a, b}), t.shape);
  }

  const Program& p_;
  Graph& g_;
  bool spec_;
};

// A weight's bytes as an initializer, inline; move_to_external_data moves the large ones
// out once the model is checked.
void add_weight(ox::GraphProto* g, const std::string& name, const Tensor& w) {
  ox::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx_type(w.dtype()));
  for (int64_t d : w.shape()) t->add_dims(d);
  const auto bytes = w.raw();
  t->set_raw_data(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// Moves every initializer of at least `from_bytes` to `data`, the bytes of the external
// data file `data_file`, at a 64-byte aligned offset (so a runtime may map it). Done after
// the checker has run: it looks for external data on disk, which is not written yet.
void move_to_external_data(ox::GraphProto* g, uint64_t from_bytes, const std::string& data_file, std::string& data) {
  for (ox::TensorProto& t : *g->mutable_initializer()) {
    if (t.raw_data().size() < from_bytes) continue;
    while (data.size() % 64) data.push_back('\0');
    auto entry = [&](const std::string& key, const std::string& value) {
      auto* e = t.add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    entry("location", data_file);
    entry("offset", std::to_string(data.size()));
    entry("length", std::to_string(t.raw_data().size()));
    data.append(t.raw_data());
    t.clear_raw_data();
    t.set_data_location(ox::TensorProto::EXTERNAL);
  }
}

// What one chip's program is cut into: runs of ops between collectives.
struct Segment {
  size_t begin = 0, end = 0;  // ops [begin, end)
  Names inputs, outputs;      // ONNX names of the values it takes and gives
};

std::vector<Segment> segments_of(const Program& p) {
  std::vector<Segment> out(1);
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].kind == OpKind::all_reduce || p.ops[i].kind == OpKind::all_gather) {
      out.back().end = i;
      out.push_back({i + 1, i + 1, {}, {}});
    } else {
      out.back().end = i + 1;
    }
  }
  std::set<ValueId> weights;
  for (const WeightDecl& w : p.weights) weights.insert(w.value);
  // Where each value is defined (segment index; -1 for inputs, weights and collective results).
  std::vector<int> defined(p.values.size(), -1);
  for (size_t s = 0; s < out.size(); ++s)
    for (size_t i = out[s].begin; i < out[s].end; ++i) defined[size_t(p.ops[i].result)] = int(s);
  std::vector<std::set<std::string>> ins(out.size()), outs(out.size());
  auto use = [&](ValueId v, int at) {  // `at` == out.size() for the program's outputs
    const int d = defined[size_t(v)];
    if (d == at || weights.count(v)) return;
    if (at < int(out.size())) ins[size_t(at)].insert(value_name(p, v));
    if (d >= 0) outs[size_t(d)].insert(value_name(p, v));
  };
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Operation& op = p.ops[i];
    const bool collective = op.kind == OpKind::all_reduce || op.kind == OpKind::all_gather;
    int at = -1;
    for (size_t s = 0; s < out.size(); ++s)
      if (i >= out[s].begin && i < out[s].end) at = int(s);
    for (ValueId v : op.operands) {
      if (collective) {
        const int d = defined[size_t(v)];
        if (d >= 0 && !weights.count(v)) outs[size_t(d)].insert(value_name(p, v));
      } else {
        use(v, at);
      }
    }
  }
  for (const OutputDecl& o : p.outputs) use(o.value, int(out.size()));
  for (size_t s = 0; s < out.size(); ++s) {
    out[s].inputs.assign(ins[s].begin(), ins[s].end());
    out[s].outputs.assign(outs[s].begin(), outs[s].end());
  }
  return out;
}

Json tensor_json(const std::string& name, const TensorType& t) {
  return Json{{"name", name}, {"dtype", dtype_word(t.dtype)}, {"shape", t.shape}};
}

// Builds, checks and serialises one segment's model.
std::string segment_model(const Program& p, const Segment& seg, const TensorMap& weights, const OnnxOptions& options,
                          const std::string& data_file, std::string& data) {
  ox::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("cutcheck");
  model.set_producer_version(std::string(exporter_version));
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  ox::GraphProto* g = model.mutable_graph();
  g->set_name(p.label.empty() ? "cutcheck" : p.label);
  std::map<std::string, ValueId> by_name;
  for (size_t v = 0; v < p.values.size(); ++v) by_name.emplace(value_name(p, ValueId(v)), ValueId(v));
  for (const std::string& name : seg.inputs) set_type(g->add_input(), name, p.type(by_name.at(name)));
  for (const std::string& name : seg.outputs) set_type(g->add_output(), name, p.type(by_name.at(name)));
  std::set<ValueId> used;
  for (size_t i = seg.begin; i < seg.end; ++i)
    for (ValueId v : p.ops[i].operands) used.insert(v);
  for (const WeightDecl& w : p.weights)
    if (used.count(w.value)) add_weight(g, value_name(p, w.value), weights.at(p.name(w.value)));
  for (size_t i = seg.begin; i < seg.end; ++i) {
    const Operation& op = p.ops[i];
    Graph named(g, value_name(p, op.result));
    Lowering l(p, named, options.precision);
    l.lower(op);
  }
  try {
    ox::checker::check_model(model);
    ox::shape_inference::InferShapes(model, ox::OpSchemaRegistry::Instance(), ox::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception& e) {
    throw Error(fmt::format("the ONNX export of {} does not check (an exporter bug): {}", p.label, e.what()));
  }
  move_to_external_data(g, options.external_from_bytes, data_file, data);
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw Error(fmt::format("could not serialise the ONNX model of {}", p.label));
  return bytes;
}

}  // namespace

fs::path export_onnx(const std::vector<ChipProgram>& chips, const fs::path& out, const OnnxOptions& options) {
  if (chips.empty()) throw Error("nothing to export");
  const fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  const std::string stem = out.stem().string();
  Json plan{{"format", exporter_version}, {"tp", chips.size()}, {"chips", Json::array()}};
  struct File {
    fs::path path;
    std::string bytes;
  };
  std::vector<File> files;
  const bool single = chips.size() == 1 && segments_of(*chips[0].program).size() == 1;
  for (size_t c = 0; c < chips.size(); ++c) {
    const Program& p = *chips[c].program;
    for (const WeightDecl& w : p.weights)
      if (is_quantized(p.type(w.value).dtype))
        throw NotYet(fmt::format("weight %{} is {}: quantized weights have no ONNX form here (ONNX's block-quantized "
                                 "DequantizeLinear is not ggml's formats)",
                                 p.name(w.value), p.type(w.value).str()));
    const TensorMap weights = load_weights(*chips[c].manifest, chips[c].folder);
    Json chip{{"inputs", Json::array()}, {"outputs", Json::array()}, {"steps", Json::array()}};
    for (const InputDecl& in : p.inputs) chip["inputs"].push_back(tensor_json(p.name(in.value), p.type(in.value)));
    for (const OutputDecl& o : p.outputs) {
      Json j = tensor_json(o.name, p.type(o.value));
      j["value"] = value_name(p, o.value);
      chip["outputs"].push_back(j);
    }
    const std::vector<Segment> segments = segments_of(p);
    for (size_t s = 0; s < segments.size(); ++s) {
      const Segment& seg = segments[s];
      if (s > 0) {  // the collective before this segment
        const Operation& op = p.ops[seg.begin - 1];
        Json step{{"collective", op_info(op.kind).name}, {"operand", value_name(p, op.operands[0])},
                  {"result", value_name(p, op.result)}, {"groups", op.int_lists("replica_groups")},
                  {"dtype", dtype_word(p.type(op.result).dtype)}, {"shape", p.type(op.operands[0]).shape}};
        if (op.kind == OpKind::all_gather) step["dim"] = op.integer("all_gather_dim");
        chip["steps"].push_back(step);
      }
      if (seg.outputs.empty()) {  // nothing later needs it (or it has no ops)
        chip["steps"].push_back(Json{{"model", nullptr}});
        continue;
      }
      const std::string name = single ? out.filename().string() : fmt::format("{}.chip{}.seg{}.onnx", stem, c, s);
      std::string data;
      std::string bytes = segment_model(p, seg, weights, options, name + ".data", data);
      files.push_back({dir / name, std::move(bytes)});
      if (!data.empty()) files.push_back({dir / (name + ".data"), std::move(data)});
      chip["steps"].push_back(Json{{"model", name}, {"inputs", seg.inputs}, {"outputs", seg.outputs}});
    }
    plan["chips"].push_back(chip);
  }
  fs::create_directories(dir);
  for (const File& f : files) write_file_atomic(f.path, f.bytes);
  const fs::path plan_path = dir / (stem + ".plan.json");
  write_file_atomic(plan_path, plan.dump(1) + "\n");
  return plan_path;
}

namespace {

struct Loaded {
  std::vector<ProgramFolder> folders;
  std::vector<fs::path> paths;
};

Loaded load(const fs::path& folder) {
  Loaded l;
  l.paths = chip_folders(folder);
  if (l.paths.empty()) l.paths.push_back(folder);
  for (const fs::path& p : l.paths) l.folders.push_back(ProgramFolder::read(p));
  return l;
}

std::vector<ChipProgram> chips_of(const Loaded& l) {
  std::vector<ChipProgram> chips;
  for (size_t i = 0; i < l.folders.size(); ++i) chips.push_back({&l.folders[i].program, &l.folders[i].manifest, l.paths[i]});
  return chips;
}

}  // namespace

fs::path export_onnx_folder(const fs::path& folder, const fs::path& out, const OnnxOptions& options) {
  Loaded l = load(folder);
  return export_onnx(chips_of(l), out, options);
}

fs::path export_onnx_cached(const fs::path& folder, const fs::path& cache, const OnnxOptions& options) {
  Loaded l = load(folder);
  uint64_t h = fnv1a(exporter_version);
  auto mix = [&](std::string_view s) {  // FNV-1a over everything, with lengths between the parts
    for (unsigned char c : std::to_string(s.size()) + ":") h = (h ^ c) * 0x100000001b3ULL;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  };
  mix(__DATE__ " " __TIME__);  // this exporter's build: a changed exporter never reuses old exports
  mix(options.precision == OnnxPrecision::spec ? "spec" : "f32");
  mix(std::to_string(options.external_from_bytes));
  for (size_t i = 0; i < l.folders.size(); ++i) {
    mix(l.folders[i].text);
    mix(l.folders[i].manifest.to_json().dump());
    const TensorMap weights = load_weights(l.folders[i].manifest, l.paths[i]);
    for (const ManifestWeight& w : l.folders[i].manifest.weights) {
      const auto bytes = weights.at(w.name).raw();
      mix(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    }
  }
  const fs::path dir = cache / fmt::format("{:016x}", h);
  const fs::path plan = dir / "model.plan.json";
  if (fs::exists(plan)) return plan;
  // Built in a folder of its own and renamed into place: concurrent runs cannot clash.
  const fs::path building = cache / fmt::format("{:016x}.{}.tmp", h, uint64_t(::getpid()));
  fs::remove_all(building);
  export_onnx(chips_of(l), building / "model.onnx", options);
  std::error_code ec;
  fs::rename(building, dir, ec);
  if (ec) fs::remove_all(building);  // another run got there first
  if (!fs::exists(plan)) throw Error(fmt::format("could not place the ONNX export in {}", dir.string()));
  return plan;
}

}  // namespace cutcheck
