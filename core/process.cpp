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

// Kills what a backend left behind. cutcheck is a subreaper (contain_descendants), so a
// process whose parent died is re-parented to cutcheck rather than to init, even one that
// left the process group and session with setsid: everything the backend started is
// below `root` or below cutcheck. cutcheck starts no process but backends (and runs one at
// a time), so every descendant of cutcheck is a backend's. Loops until none is left,
// because a process may fork while it is being killed; bounded, so it never hangs.
void kill_tree(pid_t root) {
  kill(-root, SIGKILL);
  for (int round = 0; round < 200; ++round) {
    std::set<pid_t> left = descendants({root, getpid()});
    left.erase(root);  // the caller reaps it, for its status
    for (pid_t p : left) kill(p, SIGKILL);
    // Reap the ones that are (or became) our children; the others are reaped by their parent,
    // which is among `left` and dies too, re-parenting them to us.
    while (true) {
      const pid_t reaped = waitpid(-1, nullptr, WNOHANG | __WALL);
      if (reaped <= 0 || reaped == root) break;
    }
    if (left.empty()) return;
    usleep(1000);
  }
}

}  // namespace

void contain_descendants() {
  static std::once_flag once;
  std::call_once(once, [] { prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); });
}

std::string ProcessResult::describe() const {
  if (timed_out) return fmt::format("timed out after {:.1f} s and was killed", seconds);
  if (signal) return fmt::format("was killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exited with {}", exit_code);
}

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

ProcessResult run_process(const std::string& command, double timeout_seconds, size_t tail_bytes) {
  contain_descendants();
  throw_if_interrupted();
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) throw IoError(fmt::format("cannot create pipes: {}", std::strerror(errno)));
  const auto start = Clock::now();
  pid_t pid = fork();
  if (pid < 0) throw IoError(fmt::format("cannot fork: {}", std::strerror(errno)));
  if (pid == 0) {
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);  // cutcheck's own interrupt handling is not the backend's
    signal(SIGTERM, SIG_DFL);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]), close(err[0]), close(out[1]), close(err[1]), close(devnull);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so the group exists before we might kill it
  close(out[1]);
  close(err[1]);
  ProcessResult r;
  const auto deadline = start + std::chrono::duration<double>(timeout_seconds);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* tails[2] = {&r.stdout_tail, &r.stderr_tail};
  int status = 0;
  bool exited = false;
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
    bool open_pipes = fds[0].fd >= 0 || fds[1].fd >= 0;
    if (open_pipes) {
      poll(fds, 2, int(std::min(left * 1000, 100.0)) + 1);
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buffer[4096];
        ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
        if (n > 0) {
          keep_tail(*tails[i], buffer, size_t(n), tail_bytes);
        } else if (n == 0 || errno != EINTR) {
          close(fds[i].fd);
          fds[i].fd = -1;
        }
      }
    } else {
      usleep(2000);
    }
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      if (fds[0].fd < 0 && fds[1].fd < 0) break;
      // Exited with pipes still open (a child of it holds them): drain what is there.
      for (pollfd& f : fds) {
        if (f.fd < 0) continue;
        fcntl(f.fd, F_SETFL, O_NONBLOCK);
        char buffer[4096];
        ssize_t n;
        while ((n = read(f.fd, buffer, sizeof buffer)) > 0) keep_tail(*tails[&f - fds], buffer, size_t(n), tail_bytes);
        close(f.fd);
        f.fd = -1;
      }
      break;
    }
  }
  kill(-pid, SIGKILL);  // the command and its process group at once
  if (!exited) waitpid(pid, &status, 0);
  kill_tree(pid);  // and anything else it left running
  for (pollfd& f : fds)
    if (f.fd >= 0) close(f.fd);
  if (interrupted) throw_if_interrupted();
  for (std::string* tail : tails) *tail = clean_text(utf8_tail(*tail, tail_bytes));
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (r.timed_out) return r;
  if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
    if (r.exit_code > 128 && r.exit_code < 128 + 65) r.signal = r.exit_code - 128;  // the shell reports a signal so
  }
  return r;
}

}  // namespace cutcheck
