// `lumen serve --role proxy`. Signals are taken by one thread with sigwait, as `lumen serve`
// does: a handler could do nothing but set a flag, while the waiting thread can start the drain.
#include "cli/serve_proxy.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "proxy/proxy_server.h"

namespace lumen::cli {

namespace {

std::string joined(const std::vector<std::string>& urls) {
  std::string out;
  for (const std::string& url : urls) out += (out.empty() ? "" : " ") + url;
  return out;
}

}  // namespace

int serve_proxy(const proxy::ProxyOptions& options) {
  // Blocked before any thread starts, so every thread inherits the mask and only the waiting
  // thread below ever takes these signals. A client or instance that vanishes mid-write must
  // not kill the process (cpp-httplib writes without MSG_NOSIGNAL).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  proxy::ProxyServer server(options);  // checks the options (throws lumen::Error)
  const int port = server.bind();
  fmt::print(stderr, "lumen serve: proxy listening on http://{}:{} (prefill: {}, decode: {})\n", options.host, port,
             joined(options.prefill), joined(options.decode));
  std::fflush(stderr);

  // The first signal drains on a thread of its own (shutdown() waits out the grace period); a
  // second one while it runs exits at once, as an impatient operator's second Ctrl-C means.
  std::atomic<bool> served{false};
  std::thread draining;
  std::thread signals([&] {
    const timespec poll_interval{0, 200'000'000};
    bool drain_started = false;
    while (!served) {
      siginfo_t info;
      if (sigtimedwait(&stop_signals, &info, &poll_interval) < 0) continue;
      const char* name = info.si_signo == SIGTERM ? "SIGTERM" : "SIGINT";
      if (drain_started) {
        fmt::print(stderr, "lumen serve: second {}: exiting now, without finishing in-flight requests\n", name);
        std::fflush(stderr);
        std::_Exit(128 + info.si_signo);
      }
      fmt::print(stderr, "lumen serve: {}: finishing in-flight requests (grace {} s; a second signal exits now)\n",
                 name, options.shutdown_grace_s);
      std::fflush(stderr);
      drain_started = true;
      draining = std::thread([&server, &served, &options] {
        server.shutdown();
        // shutdown() has cut what was left, so the connections end within moments. Should one
        // still hang, the process exits anyway rather than outlive its operator's patience.
        const auto hard_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!served && std::chrono::steady_clock::now() < hard_deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        if (!served) {
          fmt::print(stderr,
                     "lumen serve: the proxy's drain did not finish 10 s after the grace period of {} s; "
                     "exiting now\n",
                     options.shutdown_grace_s);
          std::fflush(stderr);
          std::_Exit(1);
        }
      });
    }
  });
  server.serve();
  served = true;
  signals.join();
  if (draining.joinable()) draining.join();
  fmt::print(stderr, "lumen serve: proxy stopped\n");
  return 0;
}

}  // namespace lumen::cli
