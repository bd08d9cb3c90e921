#pragma once
// How `lumen serve` (every role) stops: the first SIGTERM or SIGINT drains (no new requests,
// in-flight ones get the grace period), a second one exits at once with status 128 + the signal,
// and a drain that has not ended 10 s after shutdown() returned exits with status 1 rather than
// outlive its operator's patience. Signals are taken by one thread with sigwait: a handler could
// only set a flag, while the waiting thread can start the drain.
#include <signal.h>

#include <functional>

namespace lumen::cli {

// Blocks SIGTERM and SIGINT (so only the waiting thread takes them) and ignores SIGPIPE (a peer
// that vanishes mid-write must not kill the process). Call before any thread starts: threads
// inherit the mask.
sigset_t block_stop_signals();

// Runs serve() on this thread until it returns; on the first signal, shutdown() runs on a thread
// of its own (it waits out the grace period of grace_s seconds, named in the message).
void serve_until_stopped(const sigset_t& stop_signals, double grace_s, const std::function<void()>& serve,
                         const std::function<void()>& shutdown);

}  // namespace lumen::cli
