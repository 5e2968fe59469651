// The reference interpreter. A verified program is planned once: weights bound (mapped,
// not copied), every result buffer allocated, values from nothing computed; then each
// run checks the inputs and executes the ops in order, one kernel each (kernels.h).
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "program/program.h"
#include "reference/kernels.h"

namespace cutcheck {

struct RunOptions {
  // Threads a kernel may split its output between (dot_general, for large specs). The
  // results are the same bits whatever the count.
  int threads = 1;
};

class Executable {
 public:
  // `weights` must hold every weight the program declares, with its declared type.
  Executable(Program program, TensorMap weights, RunOptions options = {});
  Executable(Executable&&) = default;
  Executable(const Executable&) = delete;

  const Program& program() const { return program_; }

  // Runs the whole program. Throws InputError when an input is missing, unknown,
  // mis-typed, or outside its declared range.
  TensorMap run(const TensorMap& inputs);

  // Step-wise execution, for running the chips of a tp split together: bind the inputs,
  // then advance() runs ops up to the next collective (or the end) and returns its index
  // in program().ops, or ops.size() when the program has finished.
  void bind(const TensorMap& inputs);
  size_t advance();
  // The operand and result buffers of the collective advance() stopped at; finish it by
  // writing the result, then call advance() again.
  const Tensor& collective_operand() const;
  Tensor& collective_result();
  TensorMap outputs() const;

 private:
  struct Step {
    const Operation* op;
    Kernel kernel;  // nullptr for collectives
    std::vector<const Tensor*> operands;
    Tensor* result;
  };

  void finish(Step& step) const;

  Program program_;
  RunOptions options_;
  std::vector<Tensor> slots_;  // one per value; never resized after planning
  std::vector<Step> steps_;
  size_t next_ = 0;
  bool at_collective_ = false;  // advance() stopped at steps_[next_], a collective
};

}  // namespace cutcheck
