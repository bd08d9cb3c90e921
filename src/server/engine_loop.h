#pragma once
// The one thread that drives the engine: it steps while there is work and sleeps in
// wait_for_work when there is none. HTTP threads only submit, abort and read streams.
#include <atomic>
#include <thread>

#include "lumen/engine.h"

namespace lumen::server {

class EngineLoop {
 public:
  explicit EngineLoop(Engine& engine);
  ~EngineLoop();  // stop()
  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  // Returns once the thread has exited; requests still in the engine stay there.
  void stop();

 private:
  void run();

  Engine& engine_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace lumen::server
