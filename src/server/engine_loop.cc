#include "server/engine_loop.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <exception>

namespace lumen::server {

EngineLoop::EngineLoop(Engine& engine) : engine_(engine), thread_([this] { run(); }) {}

EngineLoop::~EngineLoop() { stop(); }

void EngineLoop::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void EngineLoop::run() {
  // wait_for_work wakes at once when a request arrives; the timeout only bounds how long a
  // stop() waits.
  constexpr auto kIdleWait = std::chrono::milliseconds(50);
  while (!stopping_) {
    bool worked = false;
    try {
      worked = engine_.step();
    } catch (const std::exception& e) {
      // Client input was validated by add_request; a failure here is the engine's own. Report
      // it and keep serving the other requests rather than leave every client hanging.
      fmt::print(stderr, "lumen serve: engine step failed: {}\n", e.what());
    }
    if (!worked) engine_.wait_for_work(kIdleWait);
  }
}

}  // namespace lumen::server
