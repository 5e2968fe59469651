#include "reference/interpreter.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/checked.h"
#include "core/error.h"
#include "core/limits.h"
#include "program/activations.h"
#include "quant/block_fields.h"
#include "program/inputs.h"
#include "reference/contract_tile.h"
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
    if (is_quantized(it->second.dtype()))  // refused here, not mid-run in a kernel
      check_scales(it->second, fmt::format("weight '{}'", name));
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
    Step step{&op, options_.kernels ? options_.kernels(op.kind) : kernel_for(op.kind), {}, &slots_[size_t(op.result)]};
    for (ValueId v : op.operands) step.operands.push_back(&slots_[size_t(v)]);
    // Ops that read nothing give the same value on every run: compute them now, once. A
    // large one without keep_values (a splat as wide as a kv cache, one per layer in an
    // authored decode) is instead computed each run into its place among the
    // intermediates: held for the program's life, those would add up to a second set of
    // caches.
    if (op.operands.empty() && (options_.keep_values || program_.type(op.result).bytes() <= computed_once_max_bytes)) {
      *step.result = Tensor(program_.type(op.result));
      finish(step);
    } else {
      if (options_.keep_values) *step.result = Tensor(program_.type(op.result));
      steps_.push_back(std::move(step));
    }
  }
  if (!options_.keep_values) read_narrow_as_stored();
  hold_small_weights_transposed();
  plan_contractions();
  if (!options_.keep_values) plan_arena();
}

// A bf16 or quantized value converted to f32 only to be a dot_general's rhs (a weight, in
// authored programs) is handed to the contraction as stored: the kernel widens each
// element (dequantizes each row) as it reads it, exactly as convert does, so the sums are
// the same bits and the widened copy is never written. A quantized one only where every
// such contraction reads it as x . w^T (contracts_stored). Not with keep_values (value()
// promises the copy), nor with another kernel table (not known to take a narrow rhs) or a
// store (it would see the copy).
void Executable::read_narrow_as_stored() {
  if (options_.kernels || options_.store) return;
  const size_t n = program_.values.size();
  std::vector<int> readers(n), as_rhs(n);  // per value: how often it is read, and as a dot_general's rhs
  for (const Step& step : steps_)
    for (size_t i = 0; i < step.op->operands.size(); ++i) {
      const size_t v = size_t(step.op->operands[i]);
      ++readers[v];
      if (step.op->kind == OpKind::dot_general && i == 1) ++as_rhs[v];
    }
  for (const OutputDecl& o : program_.outputs) ++readers[size_t(o.value)];
  std::vector<bool> dropped(n, false);
  for (const Step& convert : steps_) {
    const Operation& op = *convert.op;
    const size_t wide = size_t(op.result);
    if (op.kind != OpKind::convert) continue;
    const DType from = program_.type(op.operands[0]).dtype;
    if ((from != DType::bf16 && !is_quantized(from)) ||
        program_.type(op.result).dtype != DType::f32 || readers[wide] != as_rhs[wide])
      continue;
    if (is_quantized(from) && std::any_of(steps_.begin(), steps_.end(), [&](const Step& step) {
          return step.op->kind == OpKind::dot_general && size_t(step.op->operands[1]) == wide &&
                 !contracts_stored(*step.op, program_.type(step.op->operands[0]), program_.type(op.result));
        }))
      continue;
    for (Step& step : steps_)
      if (step.op->kind == OpKind::dot_general && size_t(step.op->operands[1]) == wide)
        step.operands[1] = convert.operands[0];
    dropped[wide] = true;
  }
  std::erase_if(steps_, [&](const Step& step) { return dropped[size_t(step.op->result)]; });
}

// A decode step's contraction of a few rows against a weight [N, K] (x . w^T, the
// projections) reads each of the weight's rows whole for one output column, and a vector
// of columns' sums has to gather its terms from as many rows. When the program's weights
// are few enough to stay in cache from step to step (transposed_weights_max_bytes), the
// interpreter keeps a transposed copy [K, N] of each such weight, made once, widened to
// f32 if stored as bf16, and runs the contraction on it with the contracting dimension
// 0: term k of every column is then one run of memory (the side-by-side kernel). The
// same sums, each over the same terms in the same order, so the same bits; the weight
// itself stays as it is. Larger models stream their weights from memory, where a copy
// would only add to the bytes read. Not with another kernel table, which is not known
// to take the rewritten operand.
void Executable::hold_small_weights_transposed() {
  if (options_.kernels) return;
  if (!options_.transposed) options_.transposed = std::make_shared<TransposedWeights>();
  std::vector<const Tensor*> weights;
  int64_t bytes = 0;
  for (const WeightDecl& w : program_.weights) {
    weights.push_back(&slots_[size_t(w.value)]);
    bytes += weights.back()->elements() * int64_t(sizeof(float));
  }
  if (bytes > transposed_weights_max_bytes) return;
  std::vector<Step*> steps;  // the contractions of a decode step's rows with a weight
  std::vector<const Tensor*> rhs;
  for (Step& step : steps_) {
    const Operation& op = *step.op;
    if (op.kind != OpKind::dot_general) continue;
    const Tensor& w = *step.operands[1];  // a weight is bound; the lhs's slot may not be allocated yet
    const auto& lc = op.ints("lhs_contracting_dimensions");
    if (std::find(weights.begin(), weights.end(), &w) == weights.end() || w.type().rank() != 2 ||
        (w.dtype() != DType::f32 && w.dtype() != DType::bf16) ||
        !op.ints("lhs_batching_dimensions").empty() || op.ints("rhs_contracting_dimensions") != std::vector<int64_t>{1} ||
        lc.size() != 1)
      continue;
    const int64_t K = w.shape()[1];
    const int64_t rows = K > 0 ? program_.type(op.operands[0]).elements() / K : 0;
    if (rows < 1 || rows > stream_rows_max) continue;
    steps.push_back(&step);
    rhs.push_back(&w);
  }
  const std::vector<const Tensor*> copies = options_.transposed->of(rhs);  // all at once: one block
  for (size_t i = 0; i < steps.size(); ++i) {
    Step& step = *steps[i];
    const Operation& op = *step.op;
    if (std::find(transposed_.begin(), transposed_.end(), copies[i]) == transposed_.end()) transposed_.push_back(copies[i]);
    Operation& rewritten = transposed_ops_.emplace_back(op);
    rewritten.attrs[size_t(&op.attr("rhs_contracting_dimensions") - op.attrs.data())] = ints({0});
    step.op = &rewritten;
    step.operands[1] = copies[i];
  }
}

// The reference's dot_general works out which offsets each result row, column and term
// reads from its operands' shapes; those are the program's, so each step's are worked
// out once, here (dot_general_planned). An operand handed over in place of the program's
// value (a bf16 weight as stored, a transposed copy) is bound already and has its own.
void Executable::plan_contractions() {
  if (options_.kernels) return;
  for (Step& step : steps_) {
    const Operation& op = *step.op;
    if (op.kind != OpKind::dot_general) continue;
    auto type_of = [&](size_t i) -> const TensorType& {
      const Tensor* given = step.operands[i];
      return given == &slots_[size_t(op.operands[i])] ? program_.type(op.operands[i]) : given->type();
    };
    step.kernel = dot_general_planned(op, type_of(0), type_of(1), program_.type(op.result));
  }
}

uint64_t Executable::transposed_bytes() const {
  uint64_t bytes = 0;
  for (const Tensor* t : transposed_) bytes += t->bytes();
  return bytes;
}

// Without keep_values: outputs get a new buffer each run (they are handed over), and
// every other result a place in the arena that no value alive at the same time uses.
// A result whose op may write over an operand (may_write_over) that dies at that op
// takes the operand's place, so an element-wise chain runs in one buffer; an input that
// dies at such an op lends its own buffer at run time (finish). Then the places are laid
// out largest first, each at the lowest offset clear of the places alive with it.
void Executable::plan_arena() {
  const size_t n = program_.values.size(), never = SIZE_MAX;
  std::vector<size_t> last(n, never);  // the last step reading each value
  for (size_t s = 0; s < steps_.size(); ++s)
    for (ValueId v : steps_[s].op->operands) last[size_t(v)] = s;
  std::vector<bool> output(n, false), input(n, false);
  for (const OutputDecl& o : program_.outputs) output[size_t(o.value)] = true;
  for (const InputDecl& in : program_.inputs) input[size_t(in.value)] = true;
  fresh_.assign(n, false);
  transient_.assign(n, false);

  struct Place {
    size_t first, last;
    uint64_t bytes, offset = 0;
  };
  std::vector<Place> places;
  std::vector<int> place_of(n, -1);
  const bool in_place = !options_.kernels;  // another table's kernels are not known to allow it
  for (size_t s = 0; s < steps_.size(); ++s) {
    Step& step = steps_[s];
    const Operation& op = *step.op;
    const size_t r = size_t(op.result);
    const TensorType& type = program_.type(op.result);
    // The operand this result may be written over: it dies here and is laid out alike.
    auto overwritable = [&](size_t i) {
      const size_t u = size_t(op.operands[i]);
      const TensorType& t = program_.type(op.operands[i]);
      return in_place && step.kernel && may_write_over(op.kind, i) && last[u] == s && !output[u] &&
             !is_quantized(t.dtype) && t.bytes() == type.bytes() && dtype_size(t.dtype) == dtype_size(type.dtype);
    };
    if (output[r]) {
      step.fresh = fresh_[r] = true;
      for (size_t i = 0; i < op.operands.size() && !step.overwrites; ++i)
        if (overwritable(i) && input[size_t(op.operands[i])] && program_.type(op.operands[i]) == type)
          step.overwrites = &slots_[size_t(op.operands[i])];
      continue;
    }
    transient_[r] = true;
    int place = -1;
    for (size_t i = 0; i < op.operands.size() && place < 0; ++i)
      if (overwritable(i) && place_of[size_t(op.operands[i])] >= 0) place = place_of[size_t(op.operands[i])];
    if (place < 0) {
      place = int(places.size());
      places.push_back({s, s, type.bytes()});
    }
    place_of[r] = place;
    places[size_t(place)].last = std::max(places[size_t(place)].last, last[r] == never ? s : last[r]);
  }

  constexpr uint64_t align = 64;
  std::vector<size_t> order(places.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return places[a].bytes > places[b].bytes; });
  std::vector<size_t> laid;
  std::vector<std::pair<uint64_t, uint64_t>> taken;  // [offset, end) of places alive with p
  uint64_t total = 0;
  for (size_t i : order) {
    Place& p = places[i];
    taken.clear();
    for (size_t j : laid)
      if (places[j].first <= p.last && p.first <= places[j].last)
        taken.emplace_back(places[j].offset, places[j].offset + places[j].bytes);
    std::sort(taken.begin(), taken.end());
    uint64_t at = 0;
    for (const auto& [begin, end] : taken) {
      if (at + p.bytes <= begin) break;
      at = std::max(at, (end + align - 1) / align * align);
    }
    p.offset = at;
    total = std::max(total, checked_add(at, p.bytes, program_.label));
    laid.push_back(i);
  }
  check_memory(total, fmt::format("{}: the program's intermediates", program_.label));
  arena_ = Tensor::uninitialized({DType::i1, {int64_t(total)}});
  for (size_t v = 0; v < n; ++v)
    if (transient_[v]) slots_[v] = Tensor::part_of(program_.type(ValueId(v)), arena_, places[size_t(place_of[v])].offset);
}

const Tensor& Executable::value(ValueId id) const {
  const Tensor& t = slots_.at(size_t(id));
  if (t.type() != program_.type(id) || t.elements() != t.type().elements() || (!transient_.empty() && transient_[size_t(id)]))
    throw Error(fmt::format("{}: value %{} is not kept (RunOptions::keep_values is off)", program_.label, program_.name(id)));
  return t;
}

void Executable::finish(Step& step) {
  // An output gets a new buffer each run (the caller keeps the last one), or the buffer of
  // an input that dies here when no one else holds it: the kernel then writes over it.
  const bool over = step.overwrites && step.overwrites->sole_owner();
  if (step.fresh) *step.result = over ? *step.overwrites : Tensor::uninitialized(program_.type(step.op->result));
  step.kernel(*step.op, step.operands, *step.result);
  if (over) *step.overwrites = Tensor();  // dead: the result holds the buffer alone
  if (options_.store && activation_[size_t(step.op->result)]) options_.store(*step.result);
}

Tensor Executable::stored(ValueId v, const Tensor& t) const {
  if (!options_.store || !activation_[size_t(v)]) return t;
  Tensor copy = t.clone();
  options_.store(copy);
  return copy;
}

// The caller keeps its tensors: the slots share their storage, which is then never
// written over in place (Tensor::sole_owner).
void Executable::bind(const TensorMap& inputs) { bind(TensorMap(inputs)); }

void Executable::bind(TensorMap&& inputs) {
  check_inputs(program_, inputs);
  for (const InputDecl& in : program_.inputs) {
    Tensor& given = inputs.at(program_.name(in.value));
    slots_[size_t(in.value)] = options_.store ? stored(in.value, given) : std::move(given);
  }
  inputs.clear();
  next_ = 0;
  at_collective_ = false;
}

size_t Executable::advance() {
  if (at_collective_) ++next_;  // the collective we stopped at has been carried out
  at_collective_ = false;
  KernelThreads threads(options_.threads);
  while (next_ < steps_.size()) {
    Step& step = steps_[next_];
    if (!step.kernel) {
      if (step.fresh) *step.result = Tensor(program_.type(step.op->result));
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
  // outputs into fresh buffers, so they are handed over as they are.
  for (const OutputDecl& o : program_.outputs)
    out.emplace(o.name, fresh_.empty() || !fresh_[size_t(o.value)] ? slots_[size_t(o.value)].clone() : slots_[size_t(o.value)]);
  return out;
}

TensorMap Executable::run_bound() {
  if (advance() != program_.ops.size())
    throw Error(fmt::format("{}: the program holds collectives; run it with its other chips", program_.label));
  TensorMap out = outputs();
  // The caller holds the fresh outputs now: dropping our references leaves it their sole
  // owner, so they can be written over when given back as inputs.
  for (const OutputDecl& o : program_.outputs)
    if (!fresh_.empty() && fresh_[size_t(o.value)]) slots_[size_t(o.value)] = Tensor();
  return out;
}

TensorMap Executable::run(const TensorMap& inputs) {
  bind(inputs);
  return run_bound();
}

TensorMap Executable::run(TensorMap&& inputs) {
  bind(std::move(inputs));
  return run_bound();
}

}  // namespace cutcheck
