#include "reference/kernels.h"

#include "reference/definitions.h"

namespace cutcheck {

Kernel kernel_for(OpKind kind) {
  switch (kind) {
    case OpKind::exponential: return eval_exponential;  // a polynomial, with the definition's bits (exp_f32.h)
    case OpKind::logistic: return eval_logistic;
    case OpKind::dot_general: return eval_dot_general;  // tiled, vectorised and threaded
    default: return definition_for(kind);               // the definition is the kernel
  }
}

bool may_write_over(OpKind kind, size_t operand) {
  switch (op_info(kind).in_place) {
    case InPlace::none: return false;
    case InPlace::any: return true;
    case InPlace::first: return operand == 0;
  }
  return false;
}

}  // namespace cutcheck
