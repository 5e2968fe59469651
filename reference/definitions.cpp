#include "reference/definitions.h"

namespace cutcheck {

Kernel definition_for(OpKind kind) {
  switch (kind) {
    case OpKind::exponential:
    case OpKind::logistic: return eval_unary;  // libm's double result rounded once (OpInfo::scalar)
    case OpKind::dot_general: return dot_general_naive;  // each element its own ordered sum
    case OpKind::constant:
    case OpKind::iota:
    case OpKind::convert:
    case OpKind::add:
    case OpKind::subtract:
    case OpKind::multiply:
    case OpKind::divide:
    case OpKind::maximum:
    case OpKind::minimum:
    case OpKind::power:
    case OpKind::negate:
    case OpKind::log:
    case OpKind::sqrt:
    case OpKind::rsqrt:
    case OpKind::sine:
    case OpKind::cosine:
    case OpKind::reduce_precision:
    case OpKind::compare:
    case OpKind::select:
    case OpKind::broadcast_in_dim:
    case OpKind::reshape:
    case OpKind::transpose:
    case OpKind::slice:
    case OpKind::concatenate:
    case OpKind::dynamic_update_slice:
    case OpKind::gather:
    case OpKind::reduce:
    case OpKind::all_reduce:
    case OpKind::all_gather: return kernel_for(kind);  // the fast kernel is the definition itself
  }
  return nullptr;
}

}  // namespace cutcheck
