// A command backend that obeys the persistent protocol (docs/conformance.md, "Persistent
// backends", core/serve_protocol.h): cutcheck starts `COMMAND --serve` once and sends it
// one request per run, instead of starting a process per run. Runs fail as CommandBackend's
// do: a server that times out, crashes (or exits) or breaks the protocol fails the run in
// progress with the same process failure and failure type, is killed with everything it started,
// and a fresh server takes the next run.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.h"

namespace cutcheck {

class ServeBackend : public Backend {
 public:
  ServeBackend(std::string command, double timeout_seconds);
  // Closes each server's stdin, gives them `shutdown_grace` seconds to exit, kills what is left.
  ~ServeBackend() override;
  std::string name() const override { return command_ + " --serve"; }
  std::string command() const override { return command_; }  // by hand, it runs a process per run
  bool supports(const Cut&, int64_t) const override { return true; }  // it answers "unsupported"
  std::unique_ptr<Lowered> lower(const fs::path& folder) override;

  // One run on an idle server, or on a new one when every server is busy: with
  // `conform --jobs N`, N servers side by side.
  TensorMap run(const fs::path& folder, const TensorMap& inputs);

  static constexpr double shutdown_grace = 2;

 private:
  class Server;
  std::unique_ptr<Server> take();

  std::string command_;
  double timeout_;
  std::atomic<int64_t> next_id_{1};
  std::mutex mutex_;
  std::vector<std::unique_ptr<Server>> idle_;
};

}  // namespace cutcheck
