#include "cli/interrupt.h"

#include <csignal>

namespace lumen::cli {

namespace {

// SIGINTs the process may still absorb: 1 while armed, 0 otherwise. A signal handler may only
// touch lock-free atomics of this kind.
volatile std::sig_atomic_t g_absorb = 0;
volatile std::sig_atomic_t g_interrupted = 0;
struct sigaction g_previous {};

extern "C" void on_sigint(int signo) {
  if (g_absorb > 0) {
    g_absorb = 0;
    g_interrupted = 1;
    return;
  }
  // Not absorbed: die of SIGINT, so the shell sees the usual status (130).
  std::signal(signo, SIG_DFL);
  std::raise(signo);
}

}  // namespace

InterruptHandler::InterruptHandler() {
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &g_previous);
}

InterruptHandler::~InterruptHandler() {
  sigaction(SIGINT, &g_previous, nullptr);
  g_absorb = 0;
}

void InterruptHandler::arm() {
  g_interrupted = 0;
  g_absorb = 1;
}

void InterruptHandler::disarm() { g_absorb = 0; }

bool InterruptHandler::interrupted() const { return g_interrupted != 0; }

}  // namespace lumen::cli
