#pragma once

#include "server/config.hpp"

namespace kernelscan {

// `kernelscan worker`: serves one device over the worker protocol on stdin/stdout until stdin
// closes. Started by the daemon, never by hand.
int run_worker(const worker_config& config);

}  // namespace kernelscan
