#include "reference/interpreter.h"

#include <fmt/format.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/limits.h"
#include "program/activations.h"
#include "program/inputs.h"
#include "reference/parallel.h"

namespace cutcheck {

Executable::Executable(Program program, TensorMap weights, RunOptions options)
    : program_(std::move(program)), options_(options), slots_(program_.values.size()) {
  if (options_.store) activation_ = activations(program_);
  for (const WeightDecl& w : program_.weights) {
    const std::string& name = program_.name(w.value);
    auto it = weights.find(name);
    if (it == weights.end()) throw InputError(fmt::format("weight '{}' was not given", name));
    if (it->second.type() != program_.type(w.value))
      throw InputError(fmt::format("weight '{}' is {}, the program declares {}", name, it->second.type().str(),
                                   program_.type(w.value).str()));
    slots_[size_t(w.value)] = stored(w.value, it->second);
  }
  if (options_.keep_values) {  // every value at once (the verifier checked the fewest a run needs)
    uint64_t bytes = 0;
    for (const Operation& op : program_.ops)
      bytes = checked_add(bytes, program_.type(op.result).bytes(), program_.label);
    check_memory(bytes, fmt::format("{}: the program's values, every one kept", program_.label));
  }
  KernelThreads threads(options_.threads);
  for (const Operation& op : program_.ops) {
    Step step{&op, options_.kernels ? options_.kernels(op.kind) : kernel_for(op.kind), {}, &slots_[size_t(op.result)], {}};
    for (ValueId v : op.operands) step.operands.push_back(&slots_[size_t(v)]);
    // Ops that read nothing give the same value on every run: compute them now.
    if (op.operands.empty()) {
      *step.result = Tensor(program_.type(op.result));
      finish(step);
    } else {
      if (options_.keep_values) *step.result = Tensor(program_.type(op.result));
      steps_.push_back(std::move(step));
    }
  }
  if (!options_.keep_values) {
    // Each run computes into fresh buffers; an intermediate is released by the last step
    // that reads it; outputs stay, and are handed over.
    fresh_.assign(program_.values.size(), false);
    for (const Step& step : steps_) fresh_[size_t(step.op->result)] = true;
    std::vector<bool> transient = fresh_;
    for (const OutputDecl& o : program_.outputs) transient[size_t(o.value)] = false;
    std::vector<Step*> last(program_.values.size(), nullptr);
    for (Step& step : steps_)
      for (ValueId v : step.op->operands) last[size_t(v)] = &step;
    for (size_t v = 0; v < last.size(); ++v)
      if (transient[v] && last[v]) last[v]->last_read.push_back(&slots_[v]);
  }
}

const Tensor& Executable::value(ValueId id) const {
  const Tensor& t = slots_.at(size_t(id));
  if (t.type() != program_.type(id) || t.elements() != t.type().elements())
    throw Error(fmt::format("{}: value %{} is not kept (RunOptions::keep_values is off)", program_.label, program_.name(id)));
  return t;
}

void Executable::finish(Step& step) const {
  // A fresh buffer each run: outputs() handed out the last one.
  if (!options_.keep_values && !step.op->operands.empty()) *step.result = Tensor(program_.type(step.op->result));
  step.kernel(*step.op, step.operands, *step.result);
  if (options_.store && activation_[size_t(step.op->result)]) options_.store(*step.result);
  release(step);
}

void Executable::release(Step& step) const {
  for (Tensor* t : step.last_read) *t = Tensor();
}

Tensor Executable::stored(ValueId v, const Tensor& t) const {
  if (!options_.store || !activation_[size_t(v)]) return t;
  Tensor copy = t.clone();
  options_.store(copy);
  return copy;
}

void Executable::bind(const TensorMap& inputs) {
  check_inputs(program_, inputs);
  for (const InputDecl& in : program_.inputs) slots_[size_t(in.value)] = stored(in.value, inputs.at(program_.name(in.value)));
  next_ = 0;
  at_collective_ = false;
}

size_t Executable::advance() {
  if (at_collective_) release(steps_[next_++]);  // the collective we stopped at has been carried out
  at_collective_ = false;
  KernelThreads threads(options_.threads);
  while (next_ < steps_.size()) {
    Step& step = steps_[next_];
    if (!step.kernel) {
      if (!options_.keep_values) *step.result = Tensor(program_.type(step.op->result));
      at_collective_ = true;
      return size_t(step.op - program_.ops.data());
    }
    finish(step);
    ++next_;
  }
  return program_.ops.size();
}

const Tensor& Executable::collective_operand() const { return *steps_.at(next_).operands.at(0); }
Tensor& Executable::collective_result() { return *steps_.at(next_).result; }

TensorMap Executable::outputs() const {
  TensorMap out;
  // Kept values are overwritten by the next run: copies. Otherwise the next run computes
  // into fresh buffers, so the outputs are handed over as they are.
  for (const OutputDecl& o : program_.outputs)
    out.emplace(o.name, fresh_.empty() || !fresh_[size_t(o.value)] ? slots_[size_t(o.value)].clone() : slots_[size_t(o.value)]);
  return out;
}

TensorMap Executable::run(const TensorMap& inputs) {
  bind(inputs);
  if (advance() != program_.ops.size())
    throw Error(fmt::format("{}: the program holds collectives; run it with its other chips", program_.label));
  return outputs();
}

}  // namespace cutcheck
