// The fast exp and logistic (reference/exp_f32.h) against their definitions, bit for bit:
// every 97th f32 bit pattern (all 2^32 with CUTCHECK_EXHAUSTIVE=1, about four minutes),
// and the inputs at the edges of the polynomial's range, the special values, and inputs
// whose results fall near a boundary between two f32 roundings.
#include <gmock/gmock.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "reference/exp_f32.h"

namespace cutcheck {
namespace {

double exp_definition(double x) { return x == -INFINITY ? 0.0 : std::exp(x); }
double logistic_definition(double x) { return 1.0 / (1.0 + std::exp(-x)); }

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Runs both functions over the inputs (in blocks, as the kernel gets them) and counts
// the elements whose bits differ from the definition's, printing the first few.
int64_t mismatches(const std::vector<float>& x) {
  std::vector<float> e(x.size()), l(x.size());
  exp_elements(x, e, exp_definition);
  logistic_elements(x, l, logistic_definition);
  int64_t wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want_e = float(exp_definition(double(x[i]))), want_l = float(logistic_definition(double(x[i])));
    const bool bad = bits_of(e[i]) != bits_of(want_e) || bits_of(l[i]) != bits_of(want_l);
    if (bad && wrong++ < 5)
      ADD_FAILURE() << "x = " << x[i] << " (bits " << std::hex << bits_of(x[i]) << "): exp " << bits_of(e[i]) << " want "
                    << bits_of(want_e) << ", logistic " << bits_of(l[i]) << " want " << bits_of(want_l);
  }
  return wrong;
}

TEST(ExpF32, EveryInputGivesTheDefinitionsBits) {
  const uint64_t stride = std::getenv("CUTCHECK_EXHAUSTIVE") ? 1 : 97;
  std::vector<float> x;
  x.reserve(1 << 22);
  int64_t wrong = 0;
  for (uint64_t b = 0; b < (uint64_t(1) << 32); b += stride) {
    x.push_back(from_bits(uint32_t(b)));
    if (x.size() == x.capacity()) wrong += mismatches(x), x.clear();
  }
  wrong += mismatches(x);
  EXPECT_EQ(wrong, 0);
}

TEST(ExpF32, EdgesAndSpecialValuesGiveTheDefinitionsBits) {
  std::vector<float> x = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-45f, -1e-45f, 1e-38f, 1.0f, -1.0f};
  for (float edge : {87.0f, 88.0f, -87.0f, 88.72f, -87.34f, -103.98f, 89.0f, -104.0f}) {
    x.push_back(edge);
    float up = edge, down = edge;
    for (int i = 0; i < 4; ++i) {
      x.push_back(up = std::nextafter(up, INFINITY));
      x.push_back(down = std::nextafter(down, -INFINITY));
    }
  }
  // Inputs whose exp lies nearest a halfway point among a million: the guard's own cases.
  std::vector<std::pair<double, float>> near;
  for (uint32_t b = 0; b < (1u << 20); ++b) {
    const float v = from_bits(0x3f000000u + b * 37u);  // 0.5 .. about 20
    double y = std::exp(double(v));
    uint64_t yb;
    std::memcpy(&yb, &y, sizeof y);
    const double d = std::fabs(double(int64_t(yb & ((1u << 29) - 1)) - double(1u << 28)));
    near.emplace_back(d, v);
  }
  std::partial_sort(near.begin(), near.begin() + 64, near.end());
  for (int i = 0; i < 64; ++i) x.push_back(near[size_t(i)].second);
  EXPECT_EQ(mismatches(x), 0);
}

// An op may write its result over its operand: the same span as input and output must
// give the definition's bits too, elements sent to the definition included (NaN, -inf,
// inputs out of range, an exp near a halfway point).
TEST(ExpF32, InPlaceGivesTheDefinitionsBits) {
  std::vector<float> x;
  for (uint32_t b = 0; b < (1u << 20); ++b) x.push_back(from_bits(b * 4099u));
  for (float special : {-INFINITY, INFINITY, NAN, -100.0f, 100.0f, 0.5f}) x.push_back(special);
  std::vector<float> e = x, l = x;
  exp_elements(e, e, exp_definition);
  logistic_elements(l, l, logistic_definition);
  int64_t wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want_e = float(exp_definition(double(x[i]))), want_l = float(logistic_definition(double(x[i])));
    if (bits_of(e[i]) != bits_of(want_e) || bits_of(l[i]) != bits_of(want_l)) ++wrong;
  }
  EXPECT_EQ(wrong, 0);
}

// The guard itself: an element whose value lies near a halfway point takes the
// definition, any other the polynomial. With a definition that answers 0, the nearest
// such inputs give 0 and the others their exp. (The polynomial agrees with libm on every
// f32 input even without the guard; the guard is what makes that hold by construction.)
TEST(ExpF32, ElementsNearAHalfwayPointTakeTheDefinition) {
  std::vector<float> near, clear;
  for (uint32_t b = 0; b < (1u << 24) && (near.size() < 16 || clear.size() < 16); ++b) {
    const float v = from_bits(0x3f000000u + b);
    const double y = std::exp(double(v));
    uint64_t yb;
    std::memcpy(&yb, &y, sizeof y);
    const int64_t d = int64_t(yb & ((1u << 29) - 1)) - int64_t(1u << 28);
    if (std::abs(d) < 512 && near.size() < 16) near.push_back(v);
    if (std::abs(d) > (1 << 20) && clear.size() < 16) clear.push_back(v);
  }
  ASSERT_EQ(near.size(), 16u);
  std::vector<float> y(near.size());
  exp_elements(near, y, [](double) { return 0.0; });
  for (size_t i = 0; i < near.size(); ++i) EXPECT_EQ(y[i], 0.0f) << near[i];
  exp_elements(clear, y, [](double) { return 0.0; });
  for (size_t i = 0; i < clear.size(); ++i) EXPECT_EQ(y[i], float(std::exp(double(clear[i])))) << clear[i];
}

}  // namespace
}  // namespace cutcheck
