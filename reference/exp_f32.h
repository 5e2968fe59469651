// exp and logistic over f32 elements, with the reference's bits but without a libm call
// per element. The definitions are the ops' scalars in the op table (program/ops.cpp): libm's double
// exp, and 1 / (1 + exp(-x)), each rounded once to f32. Here each element is first
// computed by a polynomial in double, a few units in the last place of double from the
// exact value; an f32 result can differ from the definition's only where the exact value
// lies within those few units of a boundary between two f32 roundings (halfway between
// neighbouring f32 values). Every element whose fast value lies within `margin` units of
// such a boundary, or outside the range the polynomial covers (NaN, infinities, results
// that overflow or are subnormal in f32), takes the definition instead. So each result
// is the definition's, bit for bit; tests/test_exp_f32.cpp checks every f32 input with
// CUTCHECK_EXHAUSTIVE=1 (every 97th bit pattern otherwise).
#pragma once

#include <span>

namespace cutcheck {

using Definition = double (*)(double);

// y[i] = float(definition(x[i])), definition being libm's exp (or it with exp(-inf) = 0).
void exp_elements(std::span<const float> x, std::span<float> y, Definition definition);
// y[i] = float(definition(x[i])), definition being 1 / (1 + exp(-x)) with libm's exp.
void logistic_elements(std::span<const float> x, std::span<float> y, Definition definition);

}  // namespace cutcheck
