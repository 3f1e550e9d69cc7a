#pragma once
// Ctrl-C (SIGINT) and SIGTERM while the command-line client waits on a job. The handler only
// records the signal (async-signal-safe); the wait looks at it between and during its long polls
// and decides what becomes of the job: `bench` cancels the job it submitted, `submit --wait`
// leaves it running and says how to stop it.
//
// Ownership: an interrupt_watch installs its handlers for SIGINT and SIGTERM while it lives and
// puts the previous ones back when it is destroyed or restore() is called. Threading: one at a
// time per process, made, restored and destroyed on the main thread; received() may be called
// from any thread.

namespace kernelscan {

class interrupt_watch {
 public:
  interrupt_watch();
  ~interrupt_watch();
  interrupt_watch(const interrupt_watch&) = delete;
  interrupt_watch& operator=(const interrupt_watch&) = delete;

  // The signal received since the watch was made (SIGINT or SIGTERM), or 0.
  int received() const;
  // The previous handlers again: a second Ctrl-C ends the process as it would have.
  void restore();

 private:
  bool m_installed = false;
};

}  // namespace kernelscan
