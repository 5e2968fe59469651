#include "program/activations.h"

namespace cutcheck {

std::vector<bool> activations(const Program& program) {
  std::vector<bool> out(program.values.size(), false);
  for (const InputDecl& in : program.inputs) out[size_t(in.value)] = program.type(in.value).dtype == DType::f32;
  for (const WeightDecl& w : program.weights) out[size_t(w.value)] = program.type(w.value).dtype == DType::f32;
  std::vector<bool> data = out;  // computed from an f32 input or weight, of any type
  for (const Operation& op : program.ops)
    for (ValueId v : op.operands)
      if (data[size_t(v)]) data[size_t(op.result)] = true;
  for (const Operation& op : program.ops) out[size_t(op.result)] = data[size_t(op.result)] && program.type(op.result).dtype == DType::f32;
  return out;
}

}  // namespace cutcheck
