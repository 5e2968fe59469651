// The reference interpreter. A verified program is planned once: weights bound (mapped,
// not copied), every result buffer allocated (or, without RunOptions::keep_values, every
// intermediate given a place in one arena by its lifetime, and outputs a new buffer each
// run), small values from nothing computed; then each run checks the inputs and executes the
// ops in order, one kernel each (kernels.h). No run allocates for an intermediate.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "program/program.h"
#include "reference/kernels.h"
#include "reference/transposed_weights.h"

namespace cutcheck {

// The largest value from nothing (a constant, an iota) an executable without keep_values
// computes once and holds; larger ones are computed each run among the intermediates.
constexpr uint64_t computed_once_max_bytes = uint64_t(64) << 10;

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
  // them). false: intermediates share one arena, each in a place no value alive at the
  // same time uses, so memory holds the weights, the inputs and about the most bytes
  // alive at once (cutcheck run, generate); a bf16 weight converted to f32 only to be a
  // dot_general's rhs is read by the contraction as stored, never widened as a whole. An
  // element-wise op, a reshape or a dynamic_update_slice then writes its result over an
  // operand that dies at it (docs/numerics.md, "In place").
  bool keep_values = true;
  // Where the small weights' transposed copies are kept (hold_small_weights_transposed
  // in interpreter.cpp): executables given the same one share the copies of the weights
  // they share. Empty: each executable makes its own.
  std::shared_ptr<TransposedWeights> transposed;
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
  // the inputs (but those run(TensorMap&&) wrote over) and values from nothing of at most
  // computed_once_max_bytes are.
  const Tensor& value(ValueId id) const;
  // Without keep_values: the bytes every run's intermediates share (the arena); 0 with it.
  uint64_t arena_bytes() const { return arena_.bytes(); }
  // The bytes of the small weights' transposed copies this executable's decode-step
  // contractions read (hold_small_weights_transposed); 0 with another kernel table.
  uint64_t transposed_bytes() const;

  // Runs the whole program. Throws InputError when an input is missing, unknown,
  // mis-typed, or outside its declared range.
  TensorMap run(const TensorMap& inputs);
  // The same, on inputs the caller gives up: without keep_values, an op whose result
  // may overwrite an operand (an element-wise op, a reshape, dynamic_update_slice) writes
  // into an input that dies at it, when no other tensor shares that input's storage.
  // That is how generation updates its kv caches without copying them. Same outputs.
  TensorMap run(TensorMap&& inputs);

  // Step-wise execution, for running the chips of a tp split together: bind the inputs,
  // then advance() runs ops up to the next collective (or the end) and returns its index
  // in program().ops, or ops.size() when the program has finished.
  void bind(const TensorMap& inputs);
  void bind(TensorMap&& inputs);
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
    // Without keep_values: the result is an output, given a new buffer each run (the
    // caller keeps the last one)...
    bool fresh = false;
    // ... or, when this input dies here and nothing else shares its storage, the input's
    // own buffer, the op writing over it.
    Tensor* overwrites = nullptr;
  };

  void finish(Step& step);
  void read_narrow_as_stored();
  void hold_small_weights_transposed();
  void plan_contractions();
  void plan_arena();
  TensorMap run_bound();
  Tensor stored(ValueId v, const Tensor& t) const;  // a leaf as options_.store keeps it

  Program program_;
  RunOptions options_;
  std::vector<Tensor> slots_;  // one per value; never resized after planning
  std::vector<Step> steps_;
  std::vector<bool> activation_;  // per value, when options_.store is set
  std::vector<bool> transient_;   // per value, without keep_values: lives in the arena, overwritten within a run
  std::vector<bool> fresh_;       // per value, without keep_values: computed into a new buffer each run
  Tensor arena_;                  // without keep_values: every intermediate's bytes
  // The small weights' transposed copies the steps read (options_.transposed holds
  // them), and the contractions rewritten to read them, in a deque so that the steps'
  // pointers into it stay put.
  std::vector<const Tensor*> transposed_;
  std::deque<Operation> transposed_ops_;
  size_t next_ = 0;
  bool at_collective_ = false;  // advance() stopped at steps_[next_], a collective
};

}  // namespace cutcheck
