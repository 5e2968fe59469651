#include "core/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/text.h"

namespace cutcheck {
namespace {

using Clock = std::chrono::steady_clock;

void keep_tail(std::string& tail, const char* data, size_t n, size_t limit) {
  tail.append(data, n);
  if (tail.size() > limit + 4) tail.erase(0, tail.size() - limit - 4);  // +4: utf8_tail cuts at a character
}

// Parent pids of every process on the machine, from /proc/N/stat ("pid (comm) state ppid").
std::map<pid_t, std::vector<pid_t>> children_by_parent() {
  std::map<pid_t, std::vector<pid_t>> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;  // it ended meanwhile
    const size_t close = line.rfind(')');     // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %ld", &state, &ppid) != 2) continue;
    out[pid_t(ppid)].push_back(pid_t(std::stol(name)));
  }
  return out;
}

// Everything below `roots` in the process tree.
std::set<pid_t> descendants(const std::vector<pid_t>& roots) {
  const auto tree = children_by_parent();
  std::set<pid_t> seen;
  std::vector<pid_t> todo = roots;
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    auto it = tree.find(p);
    if (it == tree.end()) continue;
    for (pid_t child : it->second)
      if (seen.insert(child).second) todo.push_back(child);
  }
  return seen;
}

// The keepers of the runs in progress, and cutcheck as the subreaper of last resort: when a
// keeper is killed from outside, what it kept is re-parented to cutcheck, found there as a
// child that is no live keeper, and killed with everything below it.
std::mutex keepers_mutex;
std::set<pid_t> live_keepers;

void sweep_orphans() {
  std::set<pid_t> orphans;
  {
    std::lock_guard lock(keepers_mutex);
    const auto tree = children_by_parent();
    if (auto it = tree.find(getpid()); it != tree.end())
      for (pid_t child : it->second)
        if (!live_keepers.count(child)) orphans.insert(child);
  }
  for (pid_t orphan : orphans) {
    for (int round = 0; round < 200; ++round) {
      std::set<pid_t> left = descendants({orphan});
      if (left.empty()) break;
      for (pid_t p : left) kill(p, SIGKILL);
      usleep(1000);
    }
    kill(orphan, SIGKILL);
    waitpid(orphan, nullptr, __WALL);
  }
}

// Kills what a backend left behind. Each run has a keeper process of its own (see
// run_process), a child subreaper: a process whose parent died is re-parented to the
// keeper rather than to init, even one that left the process group and session with
// setsid, so everything the backend started is below `keeper`, and nothing of another
// run is (runs of parallel workers each have their keeper). Kills all of it, waits until
// the keeper has reaped it, then kills and reaps the keeper. Loops because a process may
// fork while it is being killed; bounded, so it never hangs.
void kill_tree(pid_t keeper) {
  {
    std::lock_guard lock(keepers_mutex);
    live_keepers.erase(keeper);
  }
  for (int round = 0; round < 400; ++round) {
    std::set<pid_t> left = descendants({keeper});
    if (left.empty()) break;
    for (pid_t p : left) kill(p, SIGKILL);
    usleep(round < 10 ? 200 : 2000);  // the keeper reaps them (zombies still count as left)
  }
  kill(keeper, SIGKILL);
  waitpid(keeper, nullptr, __WALL);
}

void child_ended(int) {}  // only so that SIGCHLD interrupts the keeper's wait (ignored by default)

// The keeper: the child run_process forks. It makes itself a subreaper, starts the
// command, sends the command's wait status down `status_fd`, and then only reaps until
// it is killed, or until cutcheck is gone: `life_fd` is the read end of a pipe whose
// write end only cutcheck holds, so it ends when cutcheck does, however it ends. The
// keeper then kills its process group (the command's, and all it started that stayed in
// it) and so itself. (Without the pipe, a cutcheck killed with SIGKILL mid-run would leave
// each keeper waiting, with its backend, for as long as the backend ran, for ever if it
// hung; and a keeper that had reported already, paused for ever.) Runs between fork and
// exec in a process that may have threads, so it makes async-signal-safe calls only (and
// ppoll, a system call as poll is). `in_fd` < 0: stdin from /dev/null.
[[noreturn]] void keep(const char* command, int in_fd, int out_fd, int err_fd, int status_fd, int life_fd) {
  setpgid(0, 0);
  signal(SIGINT, SIG_DFL);  // cutcheck's own interrupt handling is not the backend's
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);  // cutcheck ignores it while it talks to servers; the backend must not inherit that
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  if (in_fd < 0) in_fd = open("/dev/null", O_RDONLY);
  // The lifeline first goes above 4, where no dup2 below can overwrite it before it is
  // moved to 4 (the others reach their places before anything is written over them).
  life_fd = fcntl(life_fd, F_DUPFD, 5);
  if (in_fd < 0 || life_fd < 0 || dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0 ||
      dup2(status_fd, 3) < 0 || dup2(life_fd, 4) < 0)
    _exit(127);
  // Nothing else of cutcheck's: not the pipes other workers' runs wait on for an end.
  if (close_range(5, ~0U, 0) != 0)
    for (int fd = 5; fd < 4096; ++fd) close(fd);
  fcntl(3, F_SETFD, FD_CLOEXEC);  // the status pipe and the lifeline are the keeper's alone
  fcntl(4, F_SETFD, FD_CLOEXEC);
  // vfork: the child only execs, and copying cutcheck's page tables again would cost more
  // than the command's own start-up.
  char* const argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"), const_cast<char*>(command), nullptr};
  pid_t backend = vfork();
  if (backend == 0) {
    execv("/bin/sh", argv);
    _exit(127);
  }
  close(0);  // so that the pipes end when the backend's processes close them
  close(1);
  close(2);
  // A status reported after cutcheck is gone fails quietly; the keeper must live on to see
  // the lifeline end and kill what is left of the backend's group.
  signal(SIGPIPE, SIG_IGN);
  auto report = [](int status) {
    (void)!write(3, &status, sizeof status);
    close(3);
  };
  if (backend < 0) report(127 << 8);  // as if the shell was not found
  // SIGCHLD is blocked but while ppoll waits, so that a child ending between the reaping
  // and the wait still ends the wait.
  signal(SIGCHLD, child_ended);
  sigset_t child, waiting;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  sigprocmask(SIG_BLOCK, &child, &waiting);
  sigdelset(&waiting, SIGCHLD);
  while (true) {
    int status = 0;
    for (pid_t ended; (ended = waitpid(-1, &status, WNOHANG)) > 0;)
      if (ended == backend) report(status);
    pollfd life{4, POLLIN, 0};
    if (ppoll(&life, 1, nullptr, &waiting) > 0) kill(0, SIGKILL);  // the lifeline ended: cutcheck is gone
  }
}

}  // namespace

std::string ProcessResult::describe() const {
  if (timed_out) return fmt::format("timed out after {:.1f} s and was killed", seconds);
  if (signal) return fmt::format("was killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exited with {}", exit_code);
}

void ProcessResult::set_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    exit_code = WEXITSTATUS(status);
    if (exit_code > 128 && exit_code < 128 + 65) signal = exit_code - 128;  // the shell reports a signal so
  }
}

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

KeptProcess::KeptProcess(const std::string& command, bool pipe_stdin) {
  static std::once_flag subreaper;
  std::call_once(subreaper, [] { prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); });
  // Close-on-exec everywhere, so that a backend another worker starts meanwhile does not
  // hold these pipes open; the keeper passes them on by dup2.
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, done[2] = {-1, -1}, life[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {in, out, err, done, life})
      for (int i = 0; i < 2; ++i)
        if (p[i] >= 0) close(p[i]);
  };
  if ((pipe_stdin && pipe2(in, O_CLOEXEC) != 0) || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
      pipe2(done, O_CLOEXEC) != 0 || pipe2(life, O_CLOEXEC) != 0) {
    const int e = errno;
    close_all();  // the pipes made before the one that failed
    throw IoError(fmt::format("cannot create pipes: {}", std::strerror(e)));
  }
  pid_t pid;
  {
    std::lock_guard lock(keepers_mutex);  // registered before a sweep can see it
    pid = fork();
    if (pid == 0) keep(command.c_str(), in[0], out[1], err[1], done[1], life[0]);
    if (pid > 0) live_keepers.insert(pid);
  }
  if (pid < 0) {
    const int e = errno;
    close_all();
    throw IoError(fmt::format("cannot fork: {}", std::strerror(e)));
  }
  setpgid(pid, pid);  // also here, so the group exists before we might kill it
  if (pipe_stdin) close(in[0]);
  close(out[1]);
  close(err[1]);
  close(done[1]);
  close(life[0]);
  keeper_ = pid;
  life_ = life[1];
  in_ = in[1];
  out_ = out[0];
  err_ = err[0];
  ended_ = done[0];
}

void KeptProcess::close_stdin() {
  if (in_ >= 0) close(in_);
  in_ = -1;
}

int KeptProcess::wait_status() {
  int status = 0;
  if (read(ended_, &status, sizeof status) == sizeof status) return status;
  // No status: the keeper itself was killed (from outside); the run counts as killed by
  // that signal, and what the keeper kept is now cutcheck's to kill.
  if (keeper_ > 0) {
    if (waitpid(keeper_, &status, __WALL) != keeper_) status = SIGKILL;
    {
      std::lock_guard lock(keepers_mutex);
      live_keepers.erase(keeper_);
    }
    keeper_ = 0;
    sweep_orphans();
  }
  return status;
}

void KeptProcess::kill() {
  if (keeper_ > 0) kill_tree(keeper_);
  keeper_ = 0;
  for (int* fd : {&in_, &out_, &err_, &ended_, &life_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

ProcessResult run_process(const std::string& command, double timeout_seconds, size_t tail_bytes) {
  throw_if_interrupted();
  const auto start = Clock::now();
  KeptProcess process(command, false);
  ProcessResult r;
  const auto deadline = start + std::chrono::duration<double>(timeout_seconds);
  pollfd fds[3] = {{process.stdout_fd(), POLLIN, 0}, {process.stderr_fd(), POLLIN, 0}, {process.ended_fd(), POLLIN, 0}};
  std::string* tails[2] = {&r.stdout_tail, &r.stderr_tail};
  int status = 0;
  bool interrupted = false;
  while (true) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (interrupt_signal()) {
      interrupted = true;
      break;
    }
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    poll(fds, 3, int(std::min(left * 1000, 100.0)) + 1);
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[4096];
      ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        keep_tail(*tails[i], buffer, size_t(n), tail_bytes);
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;  // at its end (the process closes it)
        fds[i].events = 0;
      }
    }
    if (!(fds[2].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    status = process.wait_status();  // the command ended
    // Drain what its pipes hold (a child of it may keep them open: not waited for).
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0) continue;
      fcntl(fds[i].fd, F_SETFL, O_NONBLOCK);
      char buffer[4096];
      ssize_t n;
      while ((n = read(fds[i].fd, buffer, sizeof buffer)) > 0) keep_tail(*tails[i], buffer, size_t(n), tail_bytes);
    }
    break;
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();  // the run's, not the clean-up's
  process.kill();  // the command, and anything it left running
  if (interrupted) throw_if_interrupted();
  for (std::string* tail : tails) *tail = clean_text(utf8_tail(*tail, tail_bytes));
  if (!r.timed_out) r.set_wait_status(status);
  return r;
}

}  // namespace cutcheck
