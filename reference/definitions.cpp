#include "reference/definitions.h"

namespace cutcheck {

Kernel definition_for(OpKind kind) {
  switch (kind) {
    case OpKind::constant: return eval_constant;
    case OpKind::iota: return eval_iota;
    case OpKind::convert: return eval_convert;
    case OpKind::add:
    case OpKind::subtract:
    case OpKind::multiply:
    case OpKind::divide:
    case OpKind::maximum:
    case OpKind::minimum:
    case OpKind::power: return eval_binary;
    case OpKind::negate:
    case OpKind::exponential:  // libm's double result rounded once (OpInfo::scalar)
    case OpKind::log:
    case OpKind::sqrt:
    case OpKind::rsqrt:
    case OpKind::logistic:
    case OpKind::sine:
    case OpKind::cosine: return eval_unary;
    case OpKind::reduce_precision: return eval_reduce_precision;
    case OpKind::compare: return eval_compare;
    case OpKind::select: return eval_select;
    case OpKind::broadcast_in_dim: return eval_broadcast_in_dim;
    case OpKind::reshape: return eval_reshape;
    case OpKind::transpose: return eval_transpose;
    case OpKind::slice: return eval_slice;
    case OpKind::concatenate: return eval_concatenate;
    case OpKind::dynamic_update_slice: return eval_dynamic_update_slice;
    case OpKind::gather: return eval_gather;
    case OpKind::block_field: return eval_block_field;
    case OpKind::reduce: return eval_reduce;
    case OpKind::dot_general: return dot_general_naive;  // each element its own ordered sum
    case OpKind::all_reduce:
    case OpKind::all_gather: return nullptr;
  }
  return nullptr;
}

}  // namespace cutcheck
