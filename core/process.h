// Running a command under a time limit, in its own process group, keeping the tail of
// what it prints. Whatever the command does (crash, hang, print forever), this returns.
#pragma once

#include <string>

namespace cutcheck {

struct ProcessResult {
  int exit_code = -1;  // when it exited; -1 otherwise
  int signal = 0;      // when a signal ended it (including 128+N exit codes from the shell)
  bool timed_out = false;
  double seconds = 0;
  std::string stdout_tail, stderr_tail;  // the last bytes it wrote

  bool ok() const { return exit_code == 0 && !timed_out; }
  std::string describe() const;  // "exited with 3", "killed by signal 11 (Segmentation fault)", "timed out after 5 s"
};

// Runs `command` with /bin/sh -c, stdin from /dev/null, below a keeper process of its own
// (a child subreaper). When it ends (or times out, or a signal asks cutcheck to stop:
// then it throws Interrupted), everything below the keeper is killed, descendants that
// left the command's group or session included, and nothing of another run: several
// threads may run commands at once.
// `tail_bytes` bounds what is kept of stdout and stderr, which come back as clean text
// (core/text.h).
ProcessResult run_process(const std::string& command, double timeout_seconds, size_t tail_bytes = 4096);

// 'it''s' -> quoted for /bin/sh.
std::string shell_quote(const std::string& word);

}  // namespace cutcheck
