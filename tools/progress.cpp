#include "tools/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

namespace cutcheck::cli {

Progress::Progress(std::FILE* out)
    : out_(out),
      tty_(isatty(fileno(out))),
      colour_(tty_ && !(std::getenv("NO_COLOR") && *std::getenv("NO_COLOR"))),
      start_(std::chrono::steady_clock::now()) {}

std::string Progress::paint(const std::string& text, const char* colour) const {
  return colour_ ? fmt::format("\033[{}m{}\033[0m", colour, text) : text;
}

void Progress::show(const std::string& line) {
  if (tty_) {
    fmt::print(out_, "\r\033[K{}", line);  // the line, in place of the last one
    open_line_ = true;
  } else {
    fmt::print(out_, "{}\n", line);
  }
  std::fflush(out_);
}

void Progress::on_case(const ConformReport& so_far) {
  const int done = int(so_far.results.size()), total = so_far.planned;
  const int failed = so_far.count(Verdict::failed);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int tenth = total > 0 ? done * 10 / total : 10;
  if (!tty_ && tenth == last_tenth_ && done != total) return;
  last_tenth_ = tenth;
  const std::string failures =
      failed ? paint(fmt::format("{} failed", failed), "31") : paint("0 failed", colour_ ? "32" : "");
  std::string line = fmt::format("[{}/{}] {}, {:.1f} s", done, total, failures, elapsed);
  if (done > 0 && done < total) line += fmt::format(", about {:.0f} s left", elapsed / done * (total - done));
  show(line);
}

void Progress::on_shrink(const ShrinkProgress& p) {
  const bool first = shrinking_ != p.index;
  shrinking_ = p.index;
  if (!tty_ && !first) return;
  show(fmt::format("{} case {}: run {} of at most {}, now {}", paint("shrinking", "33"), p.index, p.runs + 1, p.budget,
                   case_size(p.smallest)));
}

void Progress::done() {
  if (open_line_) fmt::print(out_, "\r\033[K");
  open_line_ = false;
  std::fflush(out_);
}

std::string case_size(const Case& c) {
  std::string out = fmt::format("{}: layers {}, dim {}, vocab {}", cut_kind_name(c.cut.kind), c.spec.layers, c.spec.dim,
                                c.spec.vocab);
  if (c.cut.ctx > 0) out += fmt::format(", ctx {}", c.cut.ctx);
  if (c.cut.row_count() > 1) out += fmt::format(", rows {}", c.cut.row_count());
  if (c.tp > 1) out += fmt::format(", tp {}", c.tp);
  return out;
}

}  // namespace cutcheck::cli
