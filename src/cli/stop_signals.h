#pragma once
// SIGINT and SIGTERM during `lumen pull`. Left to their default, they end the process where it
// stands, and the pull's cleanups (its lock file, its temporary file) never run: the `.lock`
// stayed in the cache after every Ctrl-C. While a StopSignals lives, a signal only records
// itself; the download polls stop_requested() (libcurl's progress callback runs at least once a
// second, even on a stalled connection), so the pull unwinds through its cleanups, keeping the
// partial wheel for the next run; the command then dies of the same signal, as the shell expects.
namespace lumen::cli {

class StopSignals {
 public:
  StopSignals();   // installs the handlers
  ~StopSignals();  // restores the previous ones
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal received while one was installed (SIGINT or SIGTERM), or 0.
  static int received();
  // Restores the default actions and raises received(): Ctrl-C ends with status 130.
  [[noreturn]] void die_of_received();
};

// Whether a StopSignals has seen a signal: the work in progress should stop.
inline bool stop_requested() { return StopSignals::received() != 0; }

}  // namespace lumen::cli
