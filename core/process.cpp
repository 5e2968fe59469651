#include "core/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "core/error.h"

namespace cutcheck {
namespace {

using Clock = std::chrono::steady_clock;

void keep_tail(std::string& tail, const char* data, size_t n, size_t limit) {
  tail.append(data, n);
  if (tail.size() > limit) tail.erase(0, tail.size() - limit);
}

}  // namespace

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
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) throw IoError(fmt::format("cannot create pipes: {}", std::strerror(errno)));
  const auto start = Clock::now();
  pid_t pid = fork();
  if (pid < 0) throw IoError(fmt::format("cannot fork: {}", std::strerror(errno)));
  if (pid == 0) {
    setpgid(0, 0);
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
  while (true) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
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
  kill(-pid, SIGKILL);  // the command and anything it left running
  if (!exited) waitpid(pid, &status, 0);
  for (pollfd& f : fds)
    if (f.fd >= 0) close(f.fd);
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
