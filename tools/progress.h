// A campaign's progress on stderr. On a terminal one line, rewritten in place: cases done
// of all, failures so far, elapsed time and an estimate of what is left; while a failure
// shrinks, the run it is at of at most how many, and the size of the smallest failing
// case so far. Elsewhere (a CI log) a line at every tenth of the cases and one per shrink.
// Colour only on a terminal, and not when NO_COLOR is set (no-color.org).
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "campaign/campaign.h"

namespace cutcheck::cli {

class Progress {
 public:
  explicit Progress(std::FILE* out);
  void on_case(const ConformReport& so_far);
  void on_shrink(const ShrinkProgress& p);
  void done();  // ends the line on a terminal

 private:
  void show(const std::string& line);
  std::string paint(const std::string& text, const char* colour) const;

  std::FILE* out_;
  bool tty_, colour_;
  bool open_line_ = false;
  int last_tenth_ = 0;
  int shrinking_ = -1;
  std::chrono::steady_clock::time_point start_;
};

// A case's size in words: "layers 2, dim 16, vocab 32, ctx 17, rows 4, tp 2".
std::string case_size(const Case& c);

}  // namespace cutcheck::cli
