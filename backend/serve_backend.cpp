#include "backend/serve_backend.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "core/interrupt.h"
#include "core/serve_protocol.h"
#include "core/text.h"

namespace cutcheck {
namespace {

using Clock = std::chrono::steady_clock;
using Deadline = std::chrono::time_point<Clock, std::chrono::duration<double>>;  // any finite timeout, without overflow

constexpr size_t stderr_tail_bytes = 4096;
constexpr size_t answer_max_bytes = 1 << 20;  // an answer is short; more without a newline is not one
// How long a server whose stdout or stdin ended may take to be reported ended (the keeper
// reports it within milliseconds; the rest is margin for a loaded machine).
constexpr double end_grace = 2;

// What a server wrote, quoted in a message: clean, one line, short.
std::string excerpt(const std::string& bytes) {
  std::string text = clean_text(bytes.substr(0, 200));
  for (char& c : text)
    if (c == '\n' || c == '\t') c = ' ';
  return bytes.size() > 200 ? text + "..." : text;
}

}  // namespace

// One server process and what it has written that was not consumed yet. Every failure
// kills it (exchange() throws and the server is dropped).
class ServeBackend::Server {
 public:
  explicit Server(const std::string& command) : process_(command + " --serve", true) {
    for (int fd : {process_.stdin_fd(), process_.stdout_fd(), process_.stderr_fd()}) fcntl(fd, F_SETFL, O_NONBLOCK);
  }

  // Sends `request` and returns the server's answer to it, or throws BackendFailed.
  ServeAnswer exchange(const ServeRequest& request, double timeout) {
    const auto start = Clock::now();
    const Deadline deadline = start + std::chrono::duration<double>(timeout);
    err_.clear();
    pump(0);  // anything since the last answer breaks the protocol
    if (!out_.empty())
      throw broken(fmt::format("the backend server wrote to stdout after its answer to request {}: '{}'", answered_,
                               excerpt(out_)));
    const std::string between = fmt::format("after its answer to request {}, before request {} was sent", answered_, request.id);
    if (ended_) throw exited(between);
    if (!out_open_) throw pipe_ended("closed its stdout", between, deadline);

    const std::string line = request_line(request);
    for (size_t sent = 0; sent < line.size();) {
      throw_if_stopped(request.id, deadline, start);
      ssize_t n = write(process_.stdin_fd(), line.data() + sent, line.size() - sent);
      if (n > 0) {
        sent += size_t(n);
      } else if (n < 0 && errno == EAGAIN) {
        pollfd writable{process_.stdin_fd(), POLLOUT, 0};
        poll(&writable, 1, 100);
      } else if (n < 0 && errno != EINTR) {  // EPIPE: it closed stdin or ended
        throw pipe_ended("closed its stdin", fmt::format("before reading request {}", request.id), deadline);
      }
    }

    while (true) {
      if (size_t newline = out_.find('\n'); newline != std::string::npos) {
        const std::string answer_text = out_.substr(0, newline);
        out_.erase(0, newline + 1);
        ServeAnswer answer;
        try {
          answer = parse_answer(answer_text);
        } catch (const FormatError& e) {
          throw broken(fmt::format("the backend server's stdout holds no answer to request {}: {}: '{}'", request.id,
                                   e.what(), excerpt(answer_text)));
        }
        if (answer.id != request.id)
          throw broken(fmt::format("the backend server answered request {} with id {}", request.id, answer.id));
        pump(0);  // the stderr it wrote with the answer
        if (!out_.empty())
          throw broken(fmt::format("the backend server wrote more than its answer to request {}: '{}'", request.id,
                                   excerpt(out_)));
        answered_ = request.id;
        return answer;
      }
      if (out_.size() > answer_max_bytes)
        throw broken(fmt::format("the backend server wrote more than {} bytes to stdout without a newline: '{}'",
                                 answer_max_bytes, excerpt(out_)));
      if (ended_) throw exited(fmt::format("while running request {}", request.id));
      if (!out_open_) throw pipe_ended("closed its stdout", fmt::format("while running request {}", request.id), deadline);
      throw_if_stopped(request.id, deadline, start);
      pump(int(std::clamp(std::chrono::duration<double>(deadline - Clock::now()).count() * 1000, 0.0, 100.0)) + 1);
    }
  }

  // This request's stderr (so far), as clean text.
  std::string stderr_tail() const { return clean_text(utf8_tail(err_, stderr_tail_bytes)); }

  // The end of the protocol: no more requests.
  void close_stdin() { process_.close_stdin(); }

  // Waits until the server exits or `deadline` passes (it is killed when destroyed).
  void wait_until_ended(Deadline deadline) {
    while (!ended_ && !interrupt_signal()) {
      const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
      if (left <= 0) return;
      pump(int(std::min(left * 1000, 100.0)) + 1);
    }
  }

 private:
  // Reads what is there (waiting up to `timeout_ms` for something), and the exit status
  // once the server ended.
  void pump(int timeout_ms) {
    pollfd fds[3] = {{out_open_ ? process_.stdout_fd() : -1, POLLIN, 0},
                     {err_open_ ? process_.stderr_fd() : -1, POLLIN, 0},
                     {ended_ ? -1 : process_.ended_fd(), POLLIN, 0}};
    if (poll(fds, 3, timeout_ms) <= 0) return;
    drain();
    if (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) {
      status_ = process_.wait_status();
      ended_ = true;
      drain();  // what it wrote just before it ended
    }
  }

  void drain() {
    char buffer[65536];
    ssize_t n = -1;
    while (out_open_ && (n = read(process_.stdout_fd(), buffer, sizeof buffer)) != 0) {
      if (n < 0) break;  // EAGAIN: nothing more now
      out_.append(buffer, size_t(n));
      if (out_.size() > answer_max_bytes) break;
    }
    if (out_open_ && n == 0) out_open_ = false;
    while (err_open_ && (n = read(process_.stderr_fd(), buffer, sizeof buffer)) != 0) {
      if (n < 0) break;
      err_.append(buffer, size_t(n));
      if (err_.size() > 2 * stderr_tail_bytes) err_.erase(0, err_.size() - stderr_tail_bytes - 4);  // +4: a whole character
    }
    if (err_open_ && n == 0) err_open_ = false;
  }

  void throw_if_stopped(int64_t id, Deadline deadline, Clock::time_point start) {
    if (interrupt_signal()) {
      process_.kill();
      throw_if_interrupted();
    }
    if (Clock::now() < deadline) return;
    ProcessResult r;
    r.timed_out = true;
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    r.stderr_tail = stderr_tail();
    process_.kill();
    throw process_failed(r, fmt::format("the backend server {} (request {})", r.describe(), id));
  }

  // The server ended (`when`): a failure by its exit code or signal.
  BackendFailed exited(const std::string& when) {
    ProcessResult r;
    r.set_wait_status(status_);
    r.stderr_tail = stderr_tail();
    process_.kill();
    return process_failed(r, fmt::format("the backend server {} {}", r.describe(), when));
  }

  // One of the protocol's pipes ended (`what`: "closed its stdout"). A server that exits
  // closes its pipes a moment before its end is reported, so it is given `end_grace` (within
  // the request's time) to be reported as it ended: an exit or a crash. One still running
  // can answer nothing more: a protocol error now, not a wait for the timeout.
  BackendFailed pipe_ended(const std::string& what, const std::string& when, Deadline deadline) {
    wait_until_ended(std::min(deadline, Deadline(Clock::now() + std::chrono::duration<double>(end_grace))));
    if (interrupt_signal()) {
      process_.kill();
      throw_if_interrupted();
    }
    if (ended_) return exited(when);
    return broken(fmt::format("the backend server {} {} and still runs: it can answer nothing more", what, when));
  }

  // A protocol error: the server is out of step with cutcheck.
  BackendFailed broken(const std::string& what) {
    const std::string tail = stderr_tail();
    process_.kill();
    return BackendFailed(what, tail);
  }

  KeptProcess process_;
  std::string out_, err_;  // stdout not consumed yet; this request's stderr
  bool out_open_ = true, err_open_ = true, ended_ = false;
  int status_ = 0;
  int64_t answered_ = 0;  // the id of the last request answered
};

namespace {

class ServeLowered : public Lowered {
 public:
  ServeLowered(ServeBackend& backend, fs::path folder) : backend_(backend), folder_(std::move(folder)) {}
  TensorMap run(const TensorMap& inputs) override { return backend_.run(folder_, inputs); }

 private:
  ServeBackend& backend_;
  fs::path folder_;
};

}  // namespace

ServeBackend::ServeBackend(std::string command, double timeout_seconds)
    : command_(std::move(command)), timeout_(timeout_seconds) {
  // A server that ends makes writing a request fail with EPIPE, which is a failed run, not
  // a signal that takes cutcheck down. (The keeper restores SIGPIPE for what it starts.)
  signal(SIGPIPE, SIG_IGN);
}

ServeBackend::~ServeBackend() {
  for (auto& server : idle_) server->close_stdin();
  const Deadline deadline = Clock::now() + std::chrono::duration<double>(shutdown_grace);
  for (auto& server : idle_) server->wait_until_ended(deadline);
  idle_.clear();  // kills each server and whatever it left running
}

std::unique_ptr<Lowered> ServeBackend::lower(const fs::path& folder) {
  return std::make_unique<ServeLowered>(*this, folder);
}

std::unique_ptr<ServeBackend::Server> ServeBackend::take() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<Server> server = std::move(idle_.back());
      idle_.pop_back();
      return server;
    }
  }
  return std::make_unique<Server>(command_);
}

TensorMap ServeBackend::run(const fs::path& folder, const TensorMap& inputs) {
  RunFiles files(folder, inputs);
  const ServeRequest request{next_id_++, fs::absolute(folder).string(), fs::absolute(files.inputs()).string(),
                             fs::absolute(files.outputs()).string()};
  std::unique_ptr<Server> server = take();
  const ServeAnswer answer = server->exchange(request, timeout_);  // a server that fails is dropped: killed
  const std::string tail = server->stderr_tail();
  {
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(server));
  }
  switch (answer.status) {
    case ServeStatus::ok: return files.read_outputs("answered ok", tail);
    case ServeStatus::unsupported:
      throw NotYet(answer.message.empty()
                       ? std::string("the backend does not support this program (it answered unsupported)")
                       : fmt::format("the backend does not support this program: {}", answer.message));
    case ServeStatus::error: break;
  }
  throw BackendFailed(fmt::format("the backend answered error: {}", answer.message), tail, "answered error", "exit");
}

}  // namespace cutcheck
