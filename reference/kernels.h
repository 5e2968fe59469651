// The kernels of every op: one function per op. Most are plain loop nests and are the
// op's definition too; the contraction (tiled), exp and logistic (a polynomial) have fast
// kernels here beside their definitions, and definition_for (definitions.h) names the
// definitions, which the property `definitions` holds the fast kernels to, bit for bit.
//
// Numerics: tensors hold f32; every f32 op computes in double and rounds the result to
// f32 once. Element-wise +, -, *, / and sqrt are therefore exactly the IEEE f32 ops;
// exp, log, sine, cosine, power, rsqrt and logistic are the double results rounded.
// reduce(add) and dot_general accumulate in double, in ascending index order (row-major
// over the reduced or contracted dimensions), and round once. So every output element
// is computed the same way whatever the tensor's other elements or its layout, which is
// what makes the composition, batch and chunking properties hold bitwise.
#pragma once

#include <functional>
#include <span>

#include "core/tensor.h"
#include "program/program.h"

namespace cutcheck {

using Operands = std::span<const Tensor* const>;
using Kernel = std::function<void(const Operation& op, Operands in, Tensor& out)>;

// The kernel the interpreter runs for an op, its fastest: a fast kernel where the op has
// one (exp, logistic, dot_general), else its definition (definitions.h); collectives have
// none (the multi-chip runner carries them out).
Kernel kernel_for(OpKind kind);
// Whether kernel_for(kind) still computes its result when the result's buffer is operand
// `operand`'s (of the same bytes and element width), as OpInfo::in_place says: the kernel
// reads each element of it before writing the same element of the result, or leaves it as
// it is. The interpreter then writes the result over an operand that dies at the op
// (interpreter.h).
bool may_write_over(OpKind kind, size_t operand);

// A table of kernels: the reference's is kernel_for. Another table computes the same ops
// another way (harness/variants.h: other summation orders, other precisions).
using KernelTable = std::function<Kernel(OpKind kind)>;

// The kernels, grouped as in docs/language.md.
void eval_constant(const Operation& op, Operands in, Tensor& out);
void eval_iota(const Operation& op, Operands in, Tensor& out);
void eval_convert(const Operation& op, Operands in, Tensor& out);
void eval_binary(const Operation& op, Operands in, Tensor& out);  // OpClass::binary, by OpInfo::scalar
void eval_unary(const Operation& op, Operands in, Tensor& out);   // OpClass::unary, by OpInfo::scalar
// eval_unary's exponential and logistic, by a polynomial checked against the definition (exp_f32.h).
void eval_exponential(const Operation& op, Operands in, Tensor& out);
void eval_logistic(const Operation& op, Operands in, Tensor& out);
void eval_reduce_precision(const Operation& op, Operands in, Tensor& out);
// x rounded to `mantissa_bits` and clamped to `exponent_bits` as reduce_precision does.
float reduce_precision(float x, int64_t exponent_bits, int64_t mantissa_bits);
void eval_compare(const Operation& op, Operands in, Tensor& out);
void eval_select(const Operation& op, Operands in, Tensor& out);
void eval_broadcast_in_dim(const Operation& op, Operands in, Tensor& out);
void eval_reshape(const Operation& op, Operands in, Tensor& out);
void eval_transpose(const Operation& op, Operands in, Tensor& out);
void eval_slice(const Operation& op, Operands in, Tensor& out);
void eval_concatenate(const Operation& op, Operands in, Tensor& out);
void eval_dynamic_update_slice(const Operation& op, Operands in, Tensor& out);
void eval_gather(const Operation& op, Operands in, Tensor& out);
void eval_block_field(const Operation& op, Operands in, Tensor& out);
void eval_reduce(const Operation& op, Operands in, Tensor& out);
void eval_dot_general(const Operation& op, Operands in, Tensor& out);  // dot_general_tiled, widest tile kernel

// dot_general two ways (kernels_contract.cpp). The naive one is the definition: each
// result element its own ordered sum, one term at a time. The tiled one computes the
// same sums, blocked, vectorised across result elements and threaded, with any of this
// machine's tile kernels (contract_tile.h); the tests hold the two to equal bits.
// Both also take an rhs of bf16 (a weight as stored, handed over without its convert to
// f32): its values are widened exactly as they are read, so the sums are those of the
// converted weight. And a quantized rhs [N, K] in the layout contracts_stored accepts, each
// row dequantized as convert does, then summed as the definition sums.
struct TileKernel;
// Whether a dot_general of these operand types reads its rhs as x . w^T (no batching, lhs
// contracted over its last dimension, the rank-2 rhs over its rows): the only layout in
// which a quantized rhs may be handed over as stored.
bool contracts_stored(const Operation& op, const TensorType& lhs, const TensorType& rhs);
void dot_general_naive(const Operation& op, Operands in, Tensor& out);
void dot_general_tiled(const TileKernel& tile, const Operation& op, Operands in, Tensor& out);
// eval_dot_general for operands of these types, which offsets each result row, column
// and term reads worked out once, here, rather than on every call (where they are few; a
// large contraction works them out each call): the interpreter plans each of a program's
// contractions with it (the shapes are the program's).
Kernel dot_general_planned(const Operation& op, const TensorType& lhs, const TensorType& rhs, const TensorType& out);

}  // namespace cutcheck
