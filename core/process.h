// Running a command under a time limit, in its own process group, keeping the tail of
// what it prints. Whatever the command does (crash, hang, print forever), this returns.
#pragma once

#include <sys/types.h>

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
  void set_wait_status(int status);  // exit_code and signal from a waitpid status
};

// Runs `command` with /bin/sh -c, stdin from /dev/null, below a keeper process of its own
// (a child subreaper). When it ends (or times out, or a signal asks cutcheck to stop:
// then it throws Interrupted), everything below the keeper is killed, descendants that
// left the command's group or session included, and nothing of another run: several
// threads may run commands at once.
// `tail_bytes` bounds what is kept of stdout and stderr, which come back as clean text
// (core/text.h).
ProcessResult run_process(const std::string& command, double timeout_seconds, size_t tail_bytes = 4096);

// A command started as run_process starts it (below a keeper of its own, in its own process
// group), with pipes the caller drives: its stdout and stderr, its stdin when asked for
// (else /dev/null), and `ended`, which becomes readable when the command itself exits.
// For a command that lives across many exchanges (a backend server). Destroying it kills
// everything below the keeper, as a run's end does. If cutcheck itself ends without
// doing that (killed with SIGKILL, say), the keeper kills the command's process group and
// itself; what left the group is not found then.
class KeptProcess {
 public:
  KeptProcess(const std::string& command, bool pipe_stdin);
  ~KeptProcess() { kill(); }
  KeptProcess(const KeptProcess&) = delete;
  KeptProcess& operator=(const KeptProcess&) = delete;

  int stdin_fd() const { return in_; }  // -1 unless pipe_stdin, or once closed
  int stdout_fd() const { return out_; }
  int stderr_fd() const { return err_; }
  int ended_fd() const { return ended_; }
  void close_stdin();
  // Once ended_fd() is readable: the command's wait status. SIGKILL when the keeper
  // itself was killed from outside (what it kept is then killed too).
  int wait_status();
  // Kills the command and everything it started, and reaps the keeper; closes the pipes.
  // Idempotent.
  void kill();

 private:
  pid_t keeper_ = 0;
  int in_ = -1, out_ = -1, err_ = -1, ended_ = -1;
  int life_ = -1;  // the keeper's lifeline (keep() in process.cpp): held open, never written
};

// 'it''s' -> quoted for /bin/sh.
std::string shell_quote(const std::string& word);

}  // namespace cutcheck
