#include "core/worker_processes.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/interrupt.h"

namespace cutcheck {

void run_in_worker_processes(size_t count, int jobs, const std::function<std::function<Json(size_t task)>()>& make_worker,
                             const std::function<void(size_t task, const Json& result)>& done, const WorkerNames& names) {
  jobs = std::min<int>(jobs, int(count));
  if (jobs <= 1) {
    const std::function<Json(size_t)> run = make_worker();
    for (size_t i = 0; i < count; ++i) done(i, run(i));
    return;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  struct Child {
    pid_t pid;
    int fd;
    std::string buffer;
  };
  std::vector<Child> children;
  for (int k = 0; k < jobs; ++k) {
    int fds[2];
    if (pipe(fds) != 0) throw IoError(names.command + ": cannot make a pipe");
    const pid_t pid = fork();
    if (pid < 0) throw IoError(names.command + ": cannot fork");
    if (pid == 0) {
      close(fds[0]);
      for (const Child& c : children) close(c.fd);
      int status = 0;
      try {
        const std::function<Json(size_t)> run = make_worker();
        for (size_t i = size_t(k); i < count; i += size_t(jobs)) {
          const std::string line = run(i).dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
          for (size_t at = 0; at < line.size();) {
            const ssize_t n = ::write(fds[1], line.data() + at, line.size() - at);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) throw IoError(names.command + ": cannot write to the parent");
            at += size_t(n);
          }
        }
      } catch (const Interrupted& e) {
        status = 128 + e.signal;
      } catch (const std::exception& e) {
        fmt::print(stderr, "cutcheck {} worker: {}\n", names.worker, e.what());
        status = 2;
      }
      close(fds[1]);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(status);
    }
    close(fds[1]);
    children.push_back({pid, fds[0], ""});
  }
  // Results arrive in any order; they are passed on in the tasks'.
  std::map<size_t, Json> arrived;
  std::vector<size_t> next_of;  // the index of each worker's next result
  for (int k = 0; k < jobs; ++k) next_of.push_back(size_t(k));
  size_t next_done = 0;
  size_t open = children.size();
  bool forwarded = false;
  while (open > 0) {
    std::vector<pollfd> fds;
    for (const Child& c : children)
      if (c.fd >= 0) fds.push_back({c.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) throw IoError(names.command + ": poll failed");
    if (const int signal = interrupt_signal(); signal && !forwarded) {  // the workers stop as well, and report
      for (const Child& c : children) kill(c.pid, signal);
      forwarded = true;
    }
    for (size_t k = 0; k < children.size(); ++k) {
      Child& c = children[k];
      if (c.fd < 0) continue;
      auto it = std::find_if(fds.begin(), fds.end(), [&](const pollfd& p) { return p.fd == c.fd; });
      if (it == fds.end() || !(it->revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char chunk[65536];
      const ssize_t n = read(c.fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(c.fd);
        c.fd = -1;
        --open;
        continue;
      }
      c.buffer.append(chunk, size_t(n));
      for (size_t at; (at = c.buffer.find('\n')) != std::string::npos;) {
        arrived.emplace(next_of[k], parse_json(c.buffer.substr(0, at), "a " + names.worker + " worker"));
        next_of[k] += size_t(jobs);
        c.buffer.erase(0, at + 1);
      }
    }
    for (auto it = arrived.find(next_done); it != arrived.end(); it = arrived.find(++next_done)) {
      done(next_done, it->second);
      arrived.erase(it);
    }
  }
  bool failed = false;
  for (const Child& c : children) {
    int status = 0;
    while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  throw_if_interrupted();
  if (failed || next_done != count)
    throw Error(fmt::format("{}: a worker stopped after {} of {} {} (its error is above)", names.command, next_done, count,
                            names.tasks));
}

}  // namespace cutcheck
