// The reference interpreter. A verified program is planned once: weights bound (mapped,
// not copied), every result buffer allocated (or, without RunOptions::keep_values, each
// allocated when its op runs and released after its last reader), values from nothing
// computed; then each run checks the inputs and executes the ops in order, one kernel
// each (kernels.h).
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
  // The kernels that compute each op; empty means the reference's (kernel_for).
  KernelTable kernels;
  // How every activation (program/activations.h) is stored: each f32 input and weight as
  // it is bound, each op result as it is computed. Empty in the reference (f32 as
  // computed); a variant computing in bf16 rounds here (harness/variants.h).
  std::function<void(Tensor&)> store;
  // Keep every value until the next run (value() reads them; the error-bound pass needs
  // them). false: allocate each intermediate when its op runs and release it after its
  // last reader, so memory holds the weights, the inputs and the live values only: a
  // bf16 weight widened to f32 exists while its dot_general runs (cutcheck run, generate).
  bool keep_values = true;
};

class Executable {
 public:
  // `weights` must hold every weight the program declares, with its declared type.
  Executable(Program program, TensorMap weights, RunOptions options = {});
  Executable(Executable&&) = default;
  Executable(const Executable&) = delete;

  const Program& program() const { return program_; }
  // A value as the last run left it: with keep_values every value of the program is kept
  // until the next run (the error-bound pass reads them all); without it only the weights,
  // inputs, outputs and values from nothing are.
  const Tensor& value(ValueId id) const;

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
    std::vector<Tensor*> last_read;  // without keep_values: intermediates no later step reads
  };

  void finish(Step& step) const;
  void release(Step& step) const;
  Tensor stored(ValueId v, const Tensor& t) const;  // a leaf as options_.store keeps it

  Program program_;
  RunOptions options_;
  std::vector<Tensor> slots_;  // one per value; never resized after planning
  std::vector<Step> steps_;
  std::vector<bool> activation_;  // per value, when options_.store is set
  std::vector<bool> fresh_;       // per value, without keep_values: computed into a new buffer each run
  size_t next_ = 0;
  bool at_collective_ = false;  // advance() stopped at steps_[next_], a collective
};

}  // namespace cutcheck
