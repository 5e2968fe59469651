#include "reference/chips.h"

#include <fmt/format.h>

#include <cstring>

#include "core/error.h"

namespace cutcheck {
namespace {

void all_reduce(const std::vector<Executable*>& chips, const std::vector<int64_t>& group) {
  const Tensor& first = chips[size_t(group[0])]->collective_operand();
  Tensor sum(first.type());
  if (first.dtype() == DType::f32) {
    std::vector<double> acc(size_t(first.elements()), 0.0);
    for (int64_t c : group) {
      auto x = chips[size_t(c)]->collective_operand().as<float>();
      for (size_t i = 0; i < acc.size(); ++i) acc[i] += double(x[i]);
    }
    auto y = sum.as_mut<float>();
    for (size_t i = 0; i < acc.size(); ++i) y[i] = float(acc[i]);
  } else {
    auto y = sum.as_mut<int32_t>();
    for (int64_t c : group) {
      auto x = chips[size_t(c)]->collective_operand().as<int32_t>();
      for (size_t i = 0; i < y.size(); ++i) y[i] = int32_t(uint32_t(y[i]) + uint32_t(x[i]));  // wraps
    }
  }
  for (int64_t c : group) std::memcpy(chips[size_t(c)]->collective_result().raw_mut().data(), sum.raw().data(), sum.bytes());
}

void all_gather(const std::vector<Executable*>& chips, const std::vector<int64_t>& group, int64_t dim) {
  const Tensor& first = chips[size_t(group[0])]->collective_operand();
  const Shape& s = first.shape();
  int64_t outer = 1, inner = int64_t(dtype_size(first.dtype()));
  for (int64_t d = 0; d < dim; ++d) outer *= s[size_t(d)];
  for (size_t d = size_t(dim); d < s.size(); ++d) inner *= s[d];
  const size_t run = size_t(inner);
  for (int64_t c : group) {
    std::byte* y = chips[size_t(c)]->collective_result().raw_mut().data();
    for (int64_t o = 0; o < outer; ++o)
      for (size_t g = 0; g < group.size(); ++g)
        std::memcpy(y + (size_t(o) * group.size() + g) * run,
                    chips[size_t(group[g])]->collective_operand().raw().data() + size_t(o) * run, run);
  }
}

std::string where(const Executable& chip, size_t op) {
  const Program& p = chip.program();
  if (op >= p.ops.size()) return "the end";
  const Operation& o = p.ops[op];
  return fmt::format("%{} ({})", p.name(o.result), op_info(o.kind).name);
}

}  // namespace

std::vector<TensorMap> run_chips(const std::vector<Executable*>& chips, const std::vector<TensorMap>& inputs) {
  const size_t n = chips.size();
  if (inputs.size() != n) throw InputError(fmt::format("{} chips but {} input sets", n, inputs.size()));
  for (size_t c = 0; c < n; ++c) {
    const auto& r = chips[c]->program().replica;
    if (!r || r->index != int64_t(c) || r->count != int64_t(n))
      throw Error(fmt::format("program {} of {} is not 'chip {} of {}'", c, n, c, n));
  }
  for (size_t c = 0; c < n; ++c) chips[c]->bind(inputs[c]);
  while (true) {
    std::vector<size_t> at(n);
    for (size_t c = 0; c < n; ++c) at[c] = chips[c]->advance();
    bool finished = at[0] == chips[0]->program().ops.size();
    for (size_t c = 1; c < n; ++c) {
      bool done = at[c] == chips[c]->program().ops.size();
      if (done != finished)
        throw Error(fmt::format("chip {} reached {} while chip 0 reached {}: the chips' collectives do not match",
                                c, where(*chips[c], at[c]), where(*chips[0], at[0])));
    }
    if (finished) break;
    const Operation& op = chips[0]->program().ops[at[0]];
    for (size_t c = 1; c < n; ++c) {
      const Operation& other = chips[c]->program().ops[at[c]];
      if (other.kind != op.kind || other.attrs != op.attrs ||
          chips[c]->collective_operand().type() != chips[0]->collective_operand().type())
        throw Error(fmt::format("chip {} waits at {} on {}, chip 0 at {} on {}: the collectives do not match", c,
                                where(*chips[c], at[c]), chips[c]->collective_operand().type().str(),
                                where(*chips[0], at[0]), chips[0]->collective_operand().type().str()));
    }
    for (const std::vector<int64_t>& group : op.int_lists("replica_groups")) {
      if (op.kind == OpKind::all_reduce) all_reduce(chips, group);
      else all_gather(chips, group, op.integer("all_gather_dim"));
    }
  }
  std::vector<TensorMap> out;
  for (Executable* chip : chips) out.push_back(chip->outputs());
  return out;
}

}  // namespace cutcheck
