#include "mlir/export.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "core/error.h"

namespace cutcheck {
namespace {

using Body = std::function<std::string(const std::vector<std::string>& args)>;  // returns the yielded value

std::string elem(DType d) { return std::string(dtype_name(d)); }  // f32, i32, i1, bf16, f16: MLIR's own words

std::string type_of(const TensorType& t) {
  std::string dims;
  for (int64_t d : t.shape) dims += fmt::format("{}x", d);
  return fmt::format("tensor<{}{}>", dims, elem(t.dtype));
}

std::string dims(int rank) {
  std::vector<std::string> d;
  for (int i = 0; i < rank; ++i) d.push_back(fmt::format("d{}", i));
  return fmt::format("{}", fmt::join(d, ", "));
}

std::string affine(int rank, const std::vector<std::string>& results) {
  return fmt::format("affine_map<({}) -> ({})>", dims(rank), fmt::join(results, ", "));
}

std::string identity(int rank) {
  std::vector<std::string> r;
  for (int i = 0; i < rank; ++i) r.push_back(fmt::format("d{}", i));
  return affine(rank, r);
}

// f32 bits as MLIR's hexadecimal float literal: exact, and fine for inf and NaN.
std::string f32_literal(double v) {
  float f = float(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return fmt::format("0x{:08X}", bits);
}

// A tensor value in the module, with its MLIR type and element type.
struct Value {
  std::string name, type, elem;
};

Value value_of(const std::string& name, const TensorType& t) { return {name, type_of(t), elem(t.dtype)}; }

// The same shape with f64 elements: where sums accumulate.
Value wide_of(const std::string& name, const TensorType& t) {
  std::string type = type_of(t);
  type.replace(type.rfind("f32"), 3, "f64");
  return {name, type, "f64"};
}

class Emitter {
 public:
  explicit Emitter(MlirPrecision precision) : precision_(precision) {}

  std::string fresh() { return fmt::format("%t{}", next_++); }
  void line(const std::string& s) { out_ += "    " + s + "\n"; }
  const std::string& out() const { return out_; }
  bool spec() const { return precision_ == MlirPrecision::spec; }

  Value empty(const Value& like) {
    Value v{fresh(), like.type, like.elem};
    line(fmt::format("{} = tensor.empty() : {}", v.name, v.type));
    return v;
  }

  // Every element `literal` (an MLIR scalar literal of the element type).
  Value filled(const Value& like, const std::string& literal) {
    std::string c = fresh();
    line(fmt::format("{} = arith.constant {} : {}", c, literal, like.elem));
    Value init = empty(like), v{fresh(), like.type, like.elem};
    line(fmt::format("{} = linalg.fill ins({} : {}) outs({} : {}) -> {}", v.name, c, like.elem, init.name, init.type,
                     init.type));
    return v;
  }

  // linalg.generic: `ins` with their maps, an init tensor (whose type is the result's)
  // with its map, iterators, and a body over the block arguments (ins, then the init).
  Value generic(const std::vector<Value>& ins, const std::vector<std::string>& in_maps, const Value& init,
                const std::string& out_map, const std::vector<std::string>& iterators, const Body& body) {
    std::vector<std::string> names, types, maps = in_maps, quoted, block, args;
    for (const Value& v : ins) names.push_back(v.name), types.push_back(v.type);
    maps.push_back(out_map);
    for (const std::string& it : iterators) quoted.push_back("\"" + it + "\"");
    Value r{fresh(), init.type, init.elem};
    std::string ins_text = ins.empty() ? "" : fmt::format("ins({} : {}) ", fmt::join(names, ", "), fmt::join(types, ", "));
    line(fmt::format("{} = linalg.generic {{indexing_maps = [{}], iterator_types = [{}]}} {}outs({} : {}) {{", r.name,
                     fmt::join(maps, ", "), fmt::join(quoted, ", "), ins_text, init.name, init.type));
    for (const Value& v : ins) {
      args.push_back(fresh());
      block.push_back(fmt::format("{}: {}", args.back(), v.elem));
    }
    args.push_back(fresh());
    block.push_back(fmt::format("{}: {}", args.back(), init.elem));
    out_ += fmt::format("    ^bb0({}):\n", fmt::join(block, ", "));
    line(fmt::format("  linalg.yield {} : {}", body(args), init.elem));
    line(fmt::format("}} -> {}", r.type));
    return r;
  }

  // Element-wise: every operand and the result share one shape.
  Value elementwise(const Value& result, const std::vector<Value>& ins, const Body& body, int rank) {
    std::vector<std::string> maps(ins.size(), identity(rank)), iterators(size_t(rank), "parallel");
    return generic(ins, maps, empty(result), identity(rank), iterators, body);
  }

  // One line of a body, returning its value.
  std::string body_op(const std::string& rhs) {
    std::string v = fresh();
    line("  " + v + " = " + rhs);
    return v;
  }

 private:
  MlirPrecision precision_;
  std::string out_;
  int next_ = 0;
};

// The scalar form of an element-wise op on block arguments.
std::string scalar(Emitter& e, const Operation& op, DType dtype, const std::vector<std::string>& a) {
  const bool f = dtype == DType::f32;
  auto wide = [&](const std::string& x) { return e.body_op(fmt::format("arith.extf {} : f32 to f64", x)); };
  auto narrow = [&](const std::string& x) { return e.body_op(fmt::format("arith.truncf {} : f64 to f32", x)); };
  // A function of f32: in f64 then rounded (spec), or in f32.
  auto function = [&](const std::function<std::string(const std::string&, const std::string&)>& fn) {
    if (!e.spec()) return fn(a[0], "f32");
    return narrow(fn(wide(a[0]), "f64"));
  };
  switch (op.kind) {
    case OpKind::add: return e.body_op(fmt::format("arith.{} {}, {} : {}", f ? "addf" : "addi", a[0], a[1], elem(dtype)));
    case OpKind::subtract: return e.body_op(fmt::format("arith.{} {}, {} : {}", f ? "subf" : "subi", a[0], a[1], elem(dtype)));
    case OpKind::multiply: return e.body_op(fmt::format("arith.{} {}, {} : {}", f ? "mulf" : "muli", a[0], a[1], elem(dtype)));
    case OpKind::divide: return e.body_op(fmt::format("arith.divf {}, {} : f32", a[0], a[1]));
    case OpKind::maximum: return e.body_op(fmt::format("arith.{} {}, {} : {}", f ? "maximumf" : "maxsi", a[0], a[1], elem(dtype)));
    case OpKind::minimum: return e.body_op(fmt::format("arith.{} {}, {} : {}", f ? "minimumf" : "minsi", a[0], a[1], elem(dtype)));
    case OpKind::power:
      if (!e.spec()) return e.body_op(fmt::format("math.powf {}, {} : f32", a[0], a[1]));
      return narrow(e.body_op(fmt::format("math.powf {}, {} : f64", wide(a[0]), wide(a[1]))));
    case OpKind::negate:
      if (f) return e.body_op(fmt::format("arith.negf {} : f32", a[0]));
      return e.body_op(fmt::format("arith.subi {}, {} : i32", e.body_op("arith.constant 0 : i32"), a[0]));
    case OpKind::exponential: return function([&](auto x, auto t) { return e.body_op(fmt::format("math.exp {} : {}", x, t)); });
    case OpKind::log: return function([&](auto x, auto t) { return e.body_op(fmt::format("math.log {} : {}", x, t)); });
    case OpKind::sqrt: return function([&](auto x, auto t) { return e.body_op(fmt::format("math.sqrt {} : {}", x, t)); });
    case OpKind::sine: return function([&](auto x, auto t) { return e.body_op(fmt::format("math.sin {} : {}", x, t)); });
    case OpKind::cosine: return function([&](auto x, auto t) { return e.body_op(fmt::format("math.cos {} : {}", x, t)); });
    case OpKind::rsqrt:  // 1 / sqrt(x), as the reference computes it
      return function([&](auto x, auto t) {
        return e.body_op(fmt::format("arith.divf {}, {} : {}", e.body_op(fmt::format("arith.constant 1.0 : {}", t)),
                                     e.body_op(fmt::format("math.sqrt {} : {}", x, t)), t));
      });
    case OpKind::logistic:  // 1 / (1 + exp(-x))
      return function([&](auto x, auto t) {
        std::string one = e.body_op(fmt::format("arith.constant 1.0 : {}", t));
        std::string ex = e.body_op(fmt::format("math.exp {} : {}", e.body_op(fmt::format("arith.negf {} : {}", x, t)), t));
        return e.body_op(fmt::format("arith.divf {}, {} : {}", one, e.body_op(fmt::format("arith.addf {}, {} : {}", one, ex, t)), t));
      });
    case OpKind::constant: case OpKind::iota: case OpKind::convert: case OpKind::reduce_precision: case OpKind::compare:
    case OpKind::select: case OpKind::broadcast_in_dim: case OpKind::reshape: case OpKind::transpose: case OpKind::slice:
    case OpKind::concatenate: case OpKind::dynamic_update_slice: case OpKind::gather: case OpKind::block_field:
    case OpKind::reduce: case OpKind::dot_general: case OpKind::all_reduce: case OpKind::all_gather: break;
  }
  throw Error("not a unary or binary op");
}

std::string compare_predicate(const std::string& dir, bool f) {
  if (f) return dir == "EQ" ? "oeq" : dir == "NE" ? "une" : dir == "LT" ? "olt" : dir == "LE" ? "ole" : dir == "GT" ? "ogt" : "oge";
  return dir == "EQ" ? "eq" : dir == "NE" ? "ne" : dir == "LT" ? "slt" : dir == "LE" ? "sle" : dir == "GT" ? "sgt" : "sge";
}

// Collapses a tensor to one dimension (or expands a scalar to [1]).
Value flatten(Emitter& e, const Value& v, const TensorType& t) {
  if (t.rank() == 1) return v;
  Value flat = value_of(e.fresh(), TensorType{t.dtype, {t.elements()}});
  if (t.rank() == 0) {
    e.line(fmt::format("{} = tensor.expand_shape {} [] output_shape [1] : {} into {}", flat.name, v.name, v.type, flat.type));
  } else {
    std::vector<std::string> all;
    for (int64_t i = 0; i < t.rank(); ++i) all.push_back(std::to_string(i));
    e.line(fmt::format("{} = tensor.collapse_shape {} [[{}]] : {} into {}", flat.name, v.name, fmt::join(all, ", "), v.type,
                       flat.type));
  }
  return flat;
}

// An i32 scalar tensor as an index clamped into [0, hi].
std::string clamped_index(Emitter& e, const Value& scalar_tensor, int64_t hi) {
  std::string v = e.fresh(), i = e.fresh(), lo_c = e.fresh(), hi_c = e.fresh(), a = e.fresh(), b = e.fresh();
  e.line(fmt::format("{} = tensor.extract {}[] : tensor<i32>", v, scalar_tensor.name));
  e.line(fmt::format("{} = arith.index_cast {} : i32 to index", i, v));
  e.line(fmt::format("{} = arith.constant 0 : index", lo_c));
  e.line(fmt::format("{} = arith.constant {} : index", hi_c, hi));
  e.line(fmt::format("{} = arith.maxsi {}, {} : index", a, i, lo_c));
  e.line(fmt::format("{} = arith.minsi {}, {} : index", b, a, hi_c));
  return b;
}

std::vector<std::string> parallel(int rank) { return std::vector<std::string>(size_t(rank), "parallel"); }

class Lowering {
 public:
  Lowering(const Program& p, MlirPrecision precision) : p_(p), e_(precision), names_(p.values.size()) {}

  std::string run(const Manifest& manifest, MlirExport& out) {
    std::vector<std::string> args;
    auto argument = [&](ValueId id) {
      names_[size_t(id)] = fmt::format("%arg{}", args.size());
      args.push_back(fmt::format("{}: {} {{bufferization.writable = false}}", names_[size_t(id)], type_of(type(id))));
    };
    for (const ManifestWeight& w : manifest.weights) {
      std::optional<ValueId> id = p_.find(w.name);
      if (!id) throw Error(fmt::format("manifest weight '{}' is not in the program", w.name));
      argument(*id);
    }
    for (const InputDecl& in : p_.inputs) argument(in.value);
    for (const Operation& op : p_.ops) {
      e_.line(fmt::format("// %{} = {}", p_.name(op.result), op_info(op.kind).name));
      names_[size_t(op.result)] = lower(op).name;
    }
    std::vector<std::string> result_types, results;
    for (const OutputDecl& o : p_.outputs) {
      result_types.push_back(type_of(type(o.value)));
      results.push_back(names_[size_t(o.value)]);
    }
    out.function = "cutcheck_program";
    out.arguments = args.size();
    out.results = results.size();
    return fmt::format("// {} exported by cutcheck (docs/mlir.md)\nfunc.func @{}({}) -> ({}) attributes "
                       "{{llvm.emit_c_interface}} {{\n{}    return {} : {}\n}}\n",
                       p_.label, out.function, fmt::join(args, ", "), fmt::join(result_types, ", "), e_.out(),
                       fmt::join(results, ", "), fmt::join(result_types, ", "));
  }

 private:
  const TensorType& type(ValueId v) const { return p_.type(v); }
  Value operand(ValueId v) const { return value_of(names_[size_t(v)], type(v)); }

  // An f64 accumulation, rounded once to f32.
  Value narrow(const Value& wide, const TensorType& t) {
    return e_.elementwise(value_of("", t), {wide}, [&](const auto& a) {
      return e_.body_op(fmt::format("arith.truncf {} : f64 to f32", a[0]));
    }, int(t.rank()));
  }

  Value lower(const Operation& op) {
    const TensorType& t = type(op.result);
    const Value result = value_of("", t);
    const int rank = int(t.rank());
    switch (op.kind) {
      case OpKind::constant: {
        Value v = value_of(e_.fresh(), t);
        std::string literal = t.dtype == DType::f32 ? f32_literal(op.number("value")) : fmt::format("{}", int64_t(op.number("value")));
        e_.line(fmt::format("{} = arith.constant dense<{}> : {}", v.name, literal, v.type));
        return v;
      }
      case OpKind::iota: {
        const int64_t d = op.integer("iota_dimension");
        return e_.generic({}, {}, e_.empty(result), identity(rank), parallel(rank), [&](const auto&) {
          std::string n = e_.body_op(fmt::format("arith.index_cast {} : index to i32", e_.body_op(fmt::format("linalg.index {} : index", d))));
          return t.dtype == DType::f32 ? e_.body_op(fmt::format("arith.sitofp {} : i32 to f32", n)) : n;
        });
      }
      case OpKind::convert: return convert(op, t);
      case OpKind::add: case OpKind::subtract: case OpKind::multiply: case OpKind::divide: case OpKind::maximum:
      case OpKind::minimum: case OpKind::power:
        return e_.elementwise(result, {operand(op.operands[0]), operand(op.operands[1])},
                              [&](const auto& a) { return scalar(e_, op, t.dtype, a); }, rank);
      case OpKind::negate: case OpKind::exponential: case OpKind::log: case OpKind::sqrt: case OpKind::rsqrt:
      case OpKind::logistic: case OpKind::sine: case OpKind::cosine:
        return e_.elementwise(result, {operand(op.operands[0])}, [&](const auto& a) { return scalar(e_, op, t.dtype, a); }, rank);
      case OpKind::reduce_precision:
        return e_.elementwise(result, {operand(op.operands[0])}, [&](const auto& a) { return reduce_precision(op, a[0]); }, rank);
      case OpKind::compare: {
        const DType from = type(op.operands[0]).dtype;
        const bool f = from == DType::f32;
        return e_.elementwise(result, {operand(op.operands[0]), operand(op.operands[1])}, [&](const auto& a) {
          return e_.body_op(fmt::format("arith.{} {}, {}, {} : {}", f ? "cmpf" : "cmpi",
                                        compare_predicate(op.word("comparison_direction"), f), a[0], a[1], elem(from)));
        }, rank);
      }
      case OpKind::select:
        return e_.elementwise(result, {operand(op.operands[0]), operand(op.operands[1]), operand(op.operands[2])},
                              [&](const auto& a) {
                                return e_.body_op(fmt::format("arith.select {}, {}, {} : {}", a[0], a[1], a[2], elem(t.dtype)));
                              }, rank);
      case OpKind::broadcast_in_dim: {
        const TensorType& from = type(op.operands[0]);
        const auto& bd = op.ints("broadcast_dimensions");
        std::vector<std::string> map;  // a size-1 operand dimension reads index 0
        for (size_t k = 0; k < bd.size(); ++k) map.push_back(from.shape[k] == 1 ? "0" : fmt::format("d{}", bd[k]));
        return e_.generic({operand(op.operands[0])}, {affine(rank, map)}, e_.empty(result), identity(rank), parallel(rank),
                          [&](const auto& a) { return a[0]; });
      }
      case OpKind::reshape: {  // through one dimension: collapse everything, expand to the result
        const Value flat = flatten(e_, operand(op.operands[0]), type(op.operands[0]));
        if (rank == 1) return flat;
        Value r = value_of(e_.fresh(), t);
        if (rank == 0) {
          e_.line(fmt::format("{} = tensor.collapse_shape {} [] : {} into {}", r.name, flat.name, flat.type, r.type));
        } else {
          std::vector<std::string> all;
          for (int i = 0; i < rank; ++i) all.push_back(std::to_string(i));
          e_.line(fmt::format("{} = tensor.expand_shape {} [[{}]] output_shape [{}] : {} into {}", r.name, flat.name,
                              fmt::join(all, ", "), fmt::join(t.shape, ", "), flat.type, r.type));
        }
        return r;
      }
      case OpKind::transpose: {
        // The identity (every rank-0 transpose among them) is the operand itself: MLIR 22's
        // mlir-opt crashes on a rank-0 linalg.transpose.
        const auto& perm = op.ints("permutation");
        bool identity = true;
        for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == int64_t(d);
        if (identity) return operand(op.operands[0]);
        const Value x = operand(op.operands[0]), init = e_.empty(result);
        Value r = value_of(e_.fresh(), t);
        e_.line(fmt::format("{} = linalg.transpose ins({} : {}) outs({} : {}) permutation = [{}]", r.name, x.name, x.type,
                            init.name, init.type, fmt::join(perm, ", ")));
        return r;
      }
      case OpKind::slice: {
        const Value x = operand(op.operands[0]);
        Value r = value_of(e_.fresh(), t);
        e_.line(fmt::format("{} = tensor.extract_slice {}[{}] [{}] [{}] : {} to {}", r.name, x.name,
                            fmt::join(op.ints("start_indices"), ", "), fmt::join(t.shape, ", "),
                            fmt::join(op.ints("strides"), ", "), x.type, r.type));
        return r;
      }
      case OpKind::concatenate: {  // each part inserted at its offset into an empty result
        const size_t d = size_t(op.integer("dimension"));
        Value acc = e_.empty(result);
        int64_t offset = 0;
        for (ValueId id : op.operands) {
          const Value part = operand(id);
          std::vector<int64_t> offsets(size_t(rank), 0), ones(size_t(rank), 1);
          offsets[d] = offset;
          Value r = value_of(e_.fresh(), t);
          e_.line(fmt::format("{} = tensor.insert_slice {} into {}[{}] [{}] [{}] : {} into {}", r.name, part.name, acc.name,
                              fmt::join(offsets, ", "), fmt::join(type(id).shape, ", "), fmt::join(ones, ", "), part.type,
                              r.type));
          acc = r;
          offset += type(id).shape[d];
        }
        return acc;
      }
      case OpKind::dynamic_update_slice: {  // start indices clamped as in StableHLO
        const Value base = operand(op.operands[0]), update = operand(op.operands[1]);
        const TensorType& u = type(op.operands[1]);
        std::vector<std::string> offsets;
        for (size_t d = 0; d < size_t(rank); ++d)
          offsets.push_back(clamped_index(e_, operand(op.operands[2 + d]), t.shape[d] - u.shape[d]));
        std::vector<int64_t> ones(size_t(rank), 1);
        Value r = value_of(e_.fresh(), t);
        e_.line(fmt::format("{} = tensor.insert_slice {} into {}[{}] [{}] [{}] : {} into {}", r.name, update.name, base.name,
                            fmt::join(offsets, ", "), fmt::join(u.shape, ", "), fmt::join(ones, ", "), update.type, r.type));
        return r;
      }
      case OpKind::gather: return gather(op, t);
      case OpKind::block_field:  // its operand is quantized, and export_mlir refuses those first
        throw NotYet(fmt::format("%{} = block_field: quantized values have no MLIR form here", p_.name(op.result)));
      case OpKind::reduce: return reduce(op, t);
      case OpKind::dot_general: return dot_general(op, t);
      case OpKind::all_reduce:
      case OpKind::all_gather:
        throw NotYet(fmt::format("%{} = {}: collectives have no MLIR form here (tp splits are not exported)",
                                 p_.name(op.result), op_info(op.kind).name));
    }
    throw NotYet(fmt::format("%{}: op {} has no MLIR form", p_.name(op.result), op_info(op.kind).name));
  }

  Value convert(const Operation& op, const TensorType& t) {
    const DType from = type(op.operands[0]).dtype, to = t.dtype;
    return e_.elementwise(value_of("", t), {operand(op.operands[0])}, [&](const auto& a) -> std::string {
      if (from == to) return a[0];
      // Widening a bf16 or f16 weight is exact; narrowing to one rounds to nearest even.
      if (is_half(from)) return e_.body_op(fmt::format("arith.extf {} : {} to f32", a[0], elem(from)));
      if (is_half(to)) return e_.body_op(fmt::format("arith.truncf {} : f32 to {}", a[0], elem(to)));
      if (from == DType::i32 && to == DType::f32) return e_.body_op(fmt::format("arith.sitofp {} : i32 to f32", a[0]));
      if (from == DType::i1)
        return e_.body_op(fmt::format("arith.{} {} : i1 to {}", to == DType::f32 ? "uitofp" : "extui", a[0], elem(to)));
      // f32 -> i32: toward zero, saturating, NaN to 0.
      std::string big = e_.body_op("arith.constant 0x4F000000 : f32"), small = e_.body_op("arith.constant 0xCF000000 : f32");
      std::string nan = e_.body_op(fmt::format("arith.cmpf uno, {}, {} : f32", a[0], a[0]));
      std::string high = e_.body_op(fmt::format("arith.cmpf oge, {}, {} : f32", a[0], big));
      std::string low = e_.body_op(fmt::format("arith.cmpf olt, {}, {} : f32", a[0], small));
      std::string outside = e_.body_op(fmt::format("arith.ori {}, {} : i1", e_.body_op(fmt::format("arith.ori {}, {} : i1", nan, high)), low));
      std::string safe = e_.body_op(fmt::format("arith.select {}, {}, {} : f32", outside, e_.body_op("arith.constant 0.0 : f32"), a[0]));
      std::string i = e_.body_op(fmt::format("arith.fptosi {} : f32 to i32", safe));
      std::string r1 = e_.body_op(fmt::format("arith.select {}, {}, {} : i32", high, e_.body_op("arith.constant 2147483647 : i32"), i));
      return e_.body_op(fmt::format("arith.select {}, {}, {} : i32", low, e_.body_op("arith.constant -2147483648 : i32"), r1));
    }, int(t.rank()));
  }

  // reduce_precision on the f32's bits, as reference/kernels_elementwise.cpp states it:
  // round the mantissa to nearest even, then clamp the exponent range; NaN passes.
  std::string reduce_precision(const Operation& op, const std::string& x) {
    const int64_t exponent_bits = op.integer("exponent_bits"), mantissa_bits = op.integer("mantissa_bits");
    auto i32 = [&](uint32_t v) { return e_.body_op(fmt::format("arith.constant {} : i32", int32_t(v))); };
    std::string bits = e_.body_op(fmt::format("arith.bitcast {} : f32 to i32", x));
    if (mantissa_bits < 23) {
      const int drop = int(23 - mantissa_bits);
      std::string lsb = e_.body_op(fmt::format("arith.andi {}, {} : i32",
                                               e_.body_op(fmt::format("arith.shrui {}, {} : i32", bits, i32(uint32_t(drop)))), i32(1)));
      std::string bias = e_.body_op(fmt::format("arith.addi {}, {} : i32", lsb, i32((1u << (drop - 1)) - 1u)));
      std::string sum = e_.body_op(fmt::format("arith.addi {}, {} : i32", bits, bias));
      bits = e_.body_op(fmt::format("arith.andi {}, {} : i32", sum, i32(~((1u << drop) - 1u))));
    }
    if (exponent_bits < 8) {
      const uint32_t reach = (1u << (exponent_bits - 1)) - 1u;
      std::string sign = e_.body_op(fmt::format("arith.andi {}, {} : i32", bits, i32(0x80000000u)));
      std::string exponent = e_.body_op(fmt::format("arith.andi {}, {} : i32", bits, i32(0x7f800000u)));
      std::string over = e_.body_op(fmt::format("arith.cmpi ugt, {}, {} : i32", exponent, i32((127u + reach) << 23)));
      std::string under = e_.body_op(fmt::format("arith.cmpi ule, {}, {} : i32", exponent, i32((127u - reach) << 23)));
      std::string inf = e_.body_op(fmt::format("arith.ori {}, {} : i32", sign, i32(0x7f800000u)));
      bits = e_.body_op(fmt::format("arith.select {}, {}, {} : i32", over, inf, bits));
      bits = e_.body_op(fmt::format("arith.select {}, {}, {} : i32", under, sign, bits));
    }
    std::string rounded = e_.body_op(fmt::format("arith.bitcast {} : i32 to f32", bits));
    std::string nan = e_.body_op(fmt::format("arith.cmpf uno, {}, {} : f32", x, x));
    return e_.body_op(fmt::format("arith.select {}, {}, {} : f32", nan, x, rounded));
  }

  // Each result element reads the table row its index names, clamped as in StableHLO.
  Value gather(const Operation& op, const TensorType& t) {
    const Value table = operand(op.operands[0]);
    const int64_t rows = type(op.operands[0]).shape[0];
    const int rank = int(t.rank()), index_rank = int(type(op.operands[1]).rank());
    std::vector<std::string> index_map;
    for (int i = 0; i < index_rank; ++i) index_map.push_back(fmt::format("d{}", i));
    return e_.generic({operand(op.operands[1])}, {affine(rank, index_map)}, e_.empty(value_of("", t)), identity(rank),
                      parallel(rank), [&](const auto& a) {
                        std::string row = e_.body_op(fmt::format("arith.index_cast {} : i32 to index", a[0]));
                        std::string lo = e_.body_op("arith.constant 0 : index");
                        std::string hi = e_.body_op(fmt::format("arith.constant {} : index", rows - 1));
                        row = e_.body_op(fmt::format("arith.maxsi {}, {} : index", row, lo));
                        row = e_.body_op(fmt::format("arith.minsi {}, {} : index", row, hi));
                        std::vector<std::string> at{row};
                        for (int d = index_rank; d < rank; ++d) at.push_back(e_.body_op(fmt::format("linalg.index {} : index", d)));
                        return e_.body_op(fmt::format("tensor.extract {}[{}] : {}", table.name, fmt::join(at, ", "), table.type));
                      });
  }

  // Loops over the operand's dimensions in order; an f32 sum accumulates in f64 (spec).
  Value reduce(const Operation& op, const TensorType& t) {
    const TensorType& from = type(op.operands[0]);
    const std::string& kind = op.word("kind");
    const auto& dims = op.ints("dimensions");
    const int rank = int(from.rank());
    std::vector<std::string> out_map, iterators;
    for (int d = 0; d < rank; ++d) {
      const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
      iterators.push_back(reduced ? "reduction" : "parallel");
      if (!reduced) out_map.push_back(fmt::format("d{}", d));
    }
    const bool f = from.dtype == DType::f32, wide = f && kind == "add" && e_.spec();
    const std::string start = kind == "add" ? (f ? "0.0" : "0")
                              : kind == "max" ? (f ? "0xFF800000" : "-2147483648")
                                              : (f ? "0x7F800000" : "2147483647");
    const Value init = e_.filled(wide ? wide_of("", t) : value_of("", t), start);
    const std::string fn = kind == "add" ? (f ? "addf" : "addi") : kind == "max" ? (f ? "maximumf" : "maxsi") : (f ? "minimumf" : "minsi");
    Value r = e_.generic({operand(op.operands[0])}, {identity(rank)}, init, affine(rank, out_map), iterators, [&](const auto& a) {
      std::string x = wide ? e_.body_op(fmt::format("arith.extf {} : f32 to f64", a[0])) : a[0];
      return e_.body_op(fmt::format("arith.{} {}, {} : {}", fn, a[1], x, init.elem));
    });
    return wide ? narrow(r, t) : r;
  }

  // Loops: the result's dimensions, then the contracting ones, innermost and ascending.
  Value dot_general(const Operation& op, const TensorType& t) {
    const TensorType &lhs = type(op.operands[0]), &rhs = type(op.operands[1]);
    const auto &lb = op.ints("lhs_batching_dimensions"), &rb = op.ints("rhs_batching_dimensions");
    const auto &lc = op.ints("lhs_contracting_dimensions"), &rc = op.ints("rhs_contracting_dimensions");
    const int result_rank = int(t.rank()), loops = result_rank + int(lc.size());
    auto map_of = [&](const TensorType& x, const std::vector<int64_t>& batch, const std::vector<int64_t>& contract, int free) {
      std::vector<std::string> m(size_t(x.rank()));
      for (size_t i = 0; i < batch.size(); ++i) m[size_t(batch[i])] = fmt::format("d{}", i);
      for (size_t i = 0; i < contract.size(); ++i) m[size_t(contract[i])] = fmt::format("d{}", result_rank + int(i));
      for (auto& s : m)
        if (s.empty()) s = fmt::format("d{}", free++);
      return affine(loops, m);
    };
    const int lhs_free = int(lhs.rank()) - int(lb.size() + lc.size());
    std::vector<std::string> iterators = parallel(result_rank), out_map;
    iterators.insert(iterators.end(), lc.size(), "reduction");
    for (int i = 0; i < result_rank; ++i) out_map.push_back(fmt::format("d{}", i));
    const bool wide = e_.spec();
    const Value init = e_.filled(wide ? wide_of("", t) : value_of("", t), "0.0");
    Value r = e_.generic({operand(op.operands[0]), operand(op.operands[1])},
                         {map_of(lhs, lb, lc, int(lb.size())), map_of(rhs, rb, rc, int(lb.size()) + lhs_free)}, init,
                         affine(loops, out_map), iterators, [&](const auto& a) {
                           std::string x = a[0], y = a[1];
                           if (wide) {
                             x = e_.body_op(fmt::format("arith.extf {} : f32 to f64", x));
                             y = e_.body_op(fmt::format("arith.extf {} : f32 to f64", y));
                           }
                           std::string p = e_.body_op(fmt::format("arith.mulf {}, {} : {}", x, y, init.elem));
                           return e_.body_op(fmt::format("arith.addf {}, {} : {}", a[2], p, init.elem));
                         });
    return wide ? narrow(r, t) : r;
  }

  const Program& p_;
  Emitter e_;
  std::vector<std::string> names_;
};

}  // namespace

MlirPrecision parse_mlir_precision(const std::string& name) {
  if (name == "spec") return MlirPrecision::spec;
  if (name == "f32") return MlirPrecision::f32;
  throw Error(fmt::format("--precision '{}': choose spec (f64 sums, as the language says) or f32", name));
}

MlirExport export_mlir(const Program& program, const Manifest& manifest, MlirPrecision precision) {
  if (program.replica)
    throw NotYet(fmt::format("{} is chip {} of a {}-way split: tp splits are not exported", program.label,
                             program.replica->index, program.replica->count));
  for (const WeightDecl& w : program.weights)
    if (is_quantized(program.type(w.value).dtype))
      throw NotYet(fmt::format("weight %{} is {}: quantized weights have no MLIR form here (its blocks would need "
                               "a dequantizing lowering)",
                               program.name(w.value), program.type(w.value).str()));
  MlirExport out;
  Lowering lowering(program, precision);
  out.text = lowering.run(manifest, out);
  return out;
}

}  // namespace cutcheck
