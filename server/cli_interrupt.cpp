#include "server/cli_interrupt.hpp"

#include <csignal>

namespace kernelscan {
namespace {

volatile std::sig_atomic_t g_received = 0;
struct sigaction g_previous_int, g_previous_term;

extern "C" void record_signal(int signal_number) {
  g_received = signal_number;
}

}  // namespace

interrupt_watch::interrupt_watch() {
  g_received = 0;
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // the wait looks at the flag; no system call need fail for it
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
  m_installed = true;
}

interrupt_watch::~interrupt_watch() {
  restore();
}

int interrupt_watch::received() const {
  return g_received;
}

void interrupt_watch::restore() {
  if (!m_installed) return;
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
  m_installed = false;
}

}  // namespace kernelscan
