#include "program/activations.h"

namespace cutcheck {

std::vector<bool> activations(const Program& program) {
  std::vector<bool> out(program.values.size(), false);
  std::vector<bool> data(program.values.size(), false);  // computed from a float input or weight, of any type
  auto leaf = [&](ValueId v) {
    const DType d = program.type(v).dtype;
    out[size_t(v)] = d == DType::f32;
    data[size_t(v)] = d == DType::f32 || is_half(d) || is_quantized(d);  // a bf16 weight widened to f32 is an activation too
  };
  for (const InputDecl& in : program.inputs) leaf(in.value);
  for (const WeightDecl& w : program.weights) leaf(w.value);
  for (const Operation& op : program.ops)
    for (ValueId v : op.operands)
      if (data[size_t(v)]) data[size_t(op.result)] = true;
  for (const Operation& op : program.ops) out[size_t(op.result)] = data[size_t(op.result)] && program.type(op.result).dtype == DType::f32;
  return out;
}

}  // namespace cutcheck
