#pragma once
// What a worker is doing with a user's code, named in the word it leaves when that code takes
// its process down. On a CPU device (PoCL) a kernel runs in the worker's own process, so one
// that writes far out of its buffers, overflows its stack or holds more program-scope data than
// the device can place ends the worker with a signal, and all the daemon would otherwise know is
// the signal. A phase is set on the measuring thread around each step of a point and read by
// the worker's signal handler, hence a string literal behind a lock-free atomic pointer.
//
// Threading: scopes open and close on one thread; current() may be read from any thread and
// from a signal handler.

namespace kernelscan {

class fault_phase {
 public:
  // `what`: a string literal without quotes or backslashes ("the kernel's timed launches"); the
  // phase until this scope ends, when the enclosing one's is again.
  explicit fault_phase(const char* what) noexcept;
  ~fault_phase();
  fault_phase(const fault_phase&) = delete;
  fault_phase& operator=(const fault_phase&) = delete;

  // The innermost open phase, or nullptr outside every one.
  static const char* current() noexcept;

 private:
  const char* m_outer;
};

}  // namespace kernelscan
