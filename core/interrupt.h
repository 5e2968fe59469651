// SIGINT and SIGTERM as a request to stop: while an InterruptScope is alive the signal
// only sets a flag. The backend runner (core/process) kills the backend's process tree
// and throws Interrupted; campaigns stop at the next case. The stack then unwinds, so
// temporary folders are removed and the reports of what finished are written, and the
// command exits 128 + the signal (130, 143: docs/exit-codes.md).
#pragma once

namespace cutcheck {

// Thrown when a signal asked to stop. Not an Error nor a std::exception, so that the
// handlers that turn a backend's failure into a failed case let it through.
struct Interrupted {
  int signal;
};

class InterruptScope {
 public:
  InterruptScope();   // installs the handlers
  ~InterruptScope();  // restores the previous ones
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

// The signal that asked to stop, or 0.
int interrupt_signal();

// Throws Interrupted when a signal asked to stop.
void throw_if_interrupted();

}  // namespace cutcheck
