#include "reference/exp_f32.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/ieee.h"
#include "reference/vector_clones.h"

// The project builds without contraction (-ffp-contract=off, CMakeLists.txt): every clone
// below computes the polynomial with the same roundings, so one check of the bound covers
// them all.

namespace cutcheck {
namespace {

// e^x for |x| <= 88, a few units in the last place of double from exact; no branches, so
// that the loops over a block vectorise. x = k ln 2 + r with k an integer and |r| <= 0.35
// (ln 2 in two parts: k times the first, of 32 bits, is exact for |k| <= 128), e^r by its
// Taylor series to r^13 (the next term is under 2^-57 of it), times 2^k made from bits.
// The series goes by Estrin's scheme (pairs of terms, then pairs of pairs with r^2, r^4,
// r^8): four multiply-add levels deep rather than Horner's thirteen, whose chain of
// dependent roundings held each vector for about 80 cycles (2 ns an element). Each level
// adds at most a unit or two; the total stays far inside the guard's margin below.
[[gnu::always_inline]] inline double exp_near(double x) {
  constexpr double log2e = 0x1.71547652b82fep0, ln2_hi = 0x1.62e42feep-1, ln2_lo = 0x1.a39ef35793c76p-33;
  constexpr double shifter = 0x1.8p52;  // adding it rounds to an integer, kept in the low bits
  const double t = x * log2e + shifter;
  const double k = t - shifter;
  const double r = (x - k * ln2_hi) - k * ln2_lo;
  // a[j] = 1 / j!
  constexpr double a[] = {1.0,         1.0,          0.5,           1.0 / 6.0,        1.0 / 24.0,
                          1.0 / 120.0, 1.0 / 720.0,  1.0 / 5040.0,  1.0 / 40320.0,    1.0 / 362880.0,
                          1.0 / 3628800.0, 1.0 / 39916800.0, 1.0 / 479001600.0, 1.0 / 6227020800.0};
  const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  const double p01 = a[0] + a[1] * r, p23 = a[2] + a[3] * r, p45 = a[4] + a[5] * r, p67 = a[6] + a[7] * r;
  const double p89 = a[8] + a[9] * r, p1011 = a[10] + a[11] * r, p1213 = a[12] + a[13] * r;
  const double p0_3 = p01 + p23 * r2, p4_7 = p45 + p67 * r2, p8_11 = p89 + p1011 * r2;
  const double p0_7 = p0_3 + p4_7 * r4, p8_13 = p8_11 + p1213 * r4;
  const double p = p0_7 + p8_13 * r8;
  int64_t t_bits, shifter_bits;
  std::memcpy(&t_bits, &t, sizeof t);
  std::memcpy(&shifter_bits, &shifter, sizeof shifter);
  const uint64_t scale_bits = uint64_t(t_bits - shifter_bits + 1023) << 52;
  double scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return p * scale;
}

// Whether v (a normal f32 magnitude) rounds to f32 as everything within `margin` units in
// the last place of double of it does: its 29 bits below f32's precision are not within
// margin of the halfway pattern 1000...0. The polynomial and libm are each a few units
// from exact; 2^10 leaves room many times over and sends about one element in 2^18 to
// the definition.
[[gnu::always_inline]] inline bool clear_of_halfway(double v) {
  constexpr int64_t margin = 1 << 10, halfway = int64_t(1) << 28, low = (int64_t(1) << 29) - 1;
  int64_t bits;
  std::memcpy(&bits, &v, sizeof v);
  const int64_t d = (bits & low) - halfway;
  return (d > margin) | (d < -margin);
}

constexpr size_t block = 256;

// exp_elements and logistic_elements run in a clone per vector width (vector_clones.h);
// the helpers above and `elements` are inlined into each by force (called out of line
// they ran one element at a time: exp took 14% of a stories260K generate so).

// Per block: the fast values and whether each is sure, in a loop that vectorises; then
// the definition called for the elements that are not.
template <class Fast>
[[gnu::always_inline]] inline void elements(std::span<const float> x, std::span<float> y, float lo, float hi, Fast fast, Definition definition) {
  const int32_t key_lo = f32_order_key(lo), key_hi = f32_order_key(hi);
  bool sure[block];
  float result[block];  // y may be x itself (an op written over its operand): x is read first
  for (size_t i0 = 0; i0 < y.size(); i0 += block) {
    const size_t n = std::min(block, y.size() - i0);
    // The range test clamps integers: with a floating-point compare (which may trap on NaN,
    // as GCC keeps it) or a branch, the loop does not vectorise.
    int32_t unsure = 0;
    for (size_t i = 0; i < n; ++i) {
      int32_t bits;
      std::memcpy(&bits, &x[i0 + i], sizeof bits);
      const int32_t key = f32_order_key(bits), clamped = std::min(std::max(key, key_lo), key_hi);
      const int32_t inside_bits = f32_order_key(clamped);
      float inside;
      std::memcpy(&inside, &inside_bits, sizeof inside);
      const double value = fast(double(inside));
      // Both definitions are +0 at -inf (exp(-inf) = +0 in C Annex F, 1 / (1 + inf) = +0):
      // the masked scores of an attention, often most of its cache, need no call.
      const int32_t minus_inf = -int32_t(bits == int32_t(0xff800000u));  // all ones if so
      const float rounded = float(value);
      int32_t result_bits;
      std::memcpy(&result_bits, &rounded, sizeof result_bits);
      result_bits &= ~minus_inf;
      sure[i] = ((key == clamped) & clear_of_halfway(value)) | (minus_inf != 0);
      unsure += !sure[i];
      std::memcpy(&result[i], &result_bits, sizeof result_bits);
    }
    for (size_t i = 0; unsure > 0 && i < n; ++i)
      if (!sure[i]) result[i] = float(definition(double(x[i0 + i])));
    std::memcpy(&y[i0], result, n * sizeof(float));
  }
}

}  // namespace

// e^x for x in [-87, 88] is a normal f32 (2^-126 is e^-87.3, 2^128 is e^88.7).
CUTCHECK_CLONES void exp_elements(std::span<const float> x, std::span<float> y, Definition definition) {
  elements(x, y, -87.0f, 88.0f, [](double v) { return exp_near(v); }, definition);
}

// For x in [-87, 87], e^-x is within exp_near's range and 1 / (1 + e^-x), at least e^-87,
// a normal f32; 1 + e and the division each add at most half a unit.
CUTCHECK_CLONES void logistic_elements(std::span<const float> x, std::span<float> y, Definition definition) {
  elements(x, y, -87.0f, 87.0f, [](double v) { return 1.0 / (1.0 + exp_near(-v)); }, definition);
}

}  // namespace cutcheck
