#pragma once
// Ctrl-C for the commands that stream text to a terminal (`lumen run`, `lumen chat`). While an
// Interruptible is armed, the first SIGINT only raises a flag the generating loop polls, so the
// output ends cleanly (a newline, the speeds, the next prompt); a second SIGINT before the loop
// re-arms ends the process as SIGINT normally does. Disarmed (chat at its prompt), the first
// SIGINT ends the process.
namespace lumen::cli {

class InterruptHandler {
 public:
  InterruptHandler();   // installs the SIGINT handler
  ~InterruptHandler();  // restores the previous one
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;

  // The next SIGINT stops the current output instead of the process.
  void arm();
  // The next SIGINT ends the process.
  void disarm();
  // Whether a SIGINT arrived since arm().
  bool interrupted() const;
};

}  // namespace lumen::cli
