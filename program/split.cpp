#include "program/split.h"

#include <fmt/format.h>

#include "core/error.h"

namespace cutcheck {
namespace {

std::vector<const Operation*> collectives(const Program& p) {
  std::vector<const Operation*> out;
  for (const Operation& op : p.ops)
    if (op.kind == OpKind::all_reduce || op.kind == OpKind::all_gather) out.push_back(&op);
  return out;
}

std::string describe(const Program& p, const Operation& op) {
  std::string where = op.loc.line > 0 ? fmt::format(" (line {})", op.loc.line) : "";
  return fmt::format("%{} = {} of {}{}", p.name(op.result), op_info(op.kind).name, p.type(op.operands[0]).str(), where);
}

}  // namespace

void verify_split(const std::vector<const Program*>& chips, const std::string& source) {
  const int64_t n = int64_t(chips.size());
  if (n == 0) throw VerifyError(fmt::format("{}: a split needs at least one chip", source));
  for (int64_t c = 0; c < n; ++c) {
    const auto& r = chips[size_t(c)]->replica;
    if (!r || r->index != c || r->count != n)
      throw VerifyError(fmt::format("{}: program {} must say 'chip {} of {}'", source, c, c, n));
  }
  const std::vector<const Operation*> first = collectives(*chips[0]);
  for (int64_t c = 1; c < n; ++c) {
    const Program& p = *chips[size_t(c)];
    const std::vector<const Operation*> mine = collectives(p);
    for (size_t i = 0; i < std::max(first.size(), mine.size()); ++i) {
      if (i >= mine.size())
        throw VerifyError(fmt::format("{}: chip {} ends after {} collectives, chip 0 goes on to {}", source, c, i,
                                      describe(*chips[0], *first[i])));
      if (i >= first.size())
        throw VerifyError(fmt::format("{}: chip {} has a collective chip 0 lacks: {}", source, c, describe(p, *mine[i])));
      const Operation &a = *first[i], &b = *mine[i];
      if (a.kind != b.kind || a.attrs != b.attrs || chips[0]->type(a.operands[0]) != p.type(b.operands[0]) ||
          chips[0]->type(a.result) != p.type(b.result))
        throw VerifyError(fmt::format("{}: collective {} differs: chip 0 has {}, chip {} has {}", source, i,
                                      describe(*chips[0], a), c, describe(p, b)));
    }
  }
}

}  // namespace cutcheck
