#include "cli/stop_signals.h"

#include <csignal>
#include <cstdlib>

namespace lumen::cli {

namespace {

volatile std::sig_atomic_t g_received = 0;
struct sigaction g_previous_int {};
struct sigaction g_previous_term {};

extern "C" void record_signal(int signo) { g_received = signo; }

}  // namespace

StopSignals::StopSignals() {
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

int StopSignals::received() { return g_received; }

void StopSignals::die_of_received() {
  const int signo = g_received != 0 ? g_received : SIGINT;
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  std::raise(signo);
  std::_Exit(128 + signo);  // not reached: the default action ends the process
}

}  // namespace lumen::cli
