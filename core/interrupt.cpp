#include "core/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <csignal>

namespace cutcheck {
namespace {

volatile std::sig_atomic_t requested = 0;
struct sigaction previous_int, previous_term;

void on_signal(int sig) {
  // A second signal while the first is being handled: the user insists; stop at once,
  // by the conventional code, without the clean-up (which is what is taking too long).
  if (requested) _exit(128 + sig);
  requested = sig;
}

}  // namespace

InterruptScope::InterruptScope() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocking call returns EINTR and the caller looks at the flag
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
}

int interrupt_signal() { return requested; }

void throw_if_interrupted() {
  if (requested) throw Interrupted{int(requested)};
}

}  // namespace cutcheck
