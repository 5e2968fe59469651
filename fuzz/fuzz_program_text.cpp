// Program text: parse, verify, print, parse again; and run what verifies, on zero
// weights and random inputs, when it is small. Printing must be stable, and nothing but
// cutcheck's own errors may come out.
#include <cstdlib>

#include "core/error.h"
#include "core/limits.h"
#include "program/inputs.h"
#include "program/text.h"
#include "program/verifier.h"
#include "reference/interpreter.h"

using namespace cutcheck;

namespace {

// Multiply-adds the program would do, roughly: a bound on how long running it takes.
double work(const Program& p) {
  double total = 0;
  for (const Operation& op : p.ops) {
    double n = double(p.type(op.result).elements());
    if (op.kind == OpKind::dot_general)
      for (int64_t d : op.ints("lhs_contracting_dimensions")) n *= double(p.type(op.operands[0]).shape[size_t(d)]);
    if (op.kind == OpKind::reduce) n = double(p.type(op.operands[0]).elements());
    total += n;
  }
  return total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  set_memory_limit(16 << 20);
  const std::string text(reinterpret_cast<const char*>(data), size);
  Program p;
  try {
    p = parse(text, "fuzz");
  } catch (const Error&) {
    return 0;
  }
  const std::string once = print(p);
  Program again = parse(once, "printed");  // what the printer writes must parse
  if (print(again) != once) std::abort();
  try {
    verify(p, "fuzz");
    if (p.replica || work(p) > 2e6) return 0;
    TensorMap weights;
    for (const WeightDecl& w : p.weights) weights.emplace(p.name(w.value), Tensor(p.type(w.value)));
    Executable exe(p, weights);
    exe.run(random_inputs(exe.program(), 1));
  } catch (const Error&) {
  }
  return 0;
}
