#include "cli/serve_until_stopped.h"

#include <fmt/format.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

namespace lumen::cli {

sigset_t block_stop_signals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return stop_signals;
}

void serve_until_stopped(const sigset_t& stop_signals, double grace_s, const std::function<void()>& serve,
                         const std::function<void()>& shutdown) {
  std::atomic<bool> served{false};
  std::thread draining;
  std::thread signals([&] {
    const timespec poll_interval{0, 200'000'000};
    bool drain_started = false;
    while (!served) {
      siginfo_t info;
      if (sigtimedwait(&stop_signals, &info, &poll_interval) < 0) continue;
      const char* signal_name = info.si_signo == SIGTERM ? "SIGTERM" : "SIGINT";
      if (drain_started) {
        fmt::print(stderr, "lumen serve: second {}: exiting now, without finishing in-flight requests\n", signal_name);
        std::fflush(stderr);
        std::_Exit(128 + info.si_signo);
      }
      fmt::print(stderr, "lumen serve: {}: finishing in-flight requests (grace {} s; a second signal exits now)\n",
                 signal_name, grace_s);
      std::fflush(stderr);
      drain_started = true;
      draining = std::thread([&] {
        shutdown();
        // shutdown() has aborted what was left and shut every connection down, so the handlers
        // return within moments. Should one still hang (a stuck engine step), exit anyway.
        const auto hard_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!served && std::chrono::steady_clock::now() < hard_deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        if (!served) {
          fmt::print(stderr, "lumen serve: the drain did not finish 10 s after the grace period; exiting now\n");
          std::fflush(stderr);
          std::_Exit(1);
        }
      });
    }
  });
  serve();
  served = true;
  signals.join();
  if (draining.joinable()) draining.join();
}

}  // namespace lumen::cli
