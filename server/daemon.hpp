#pragma once

#include "server/config.hpp"

namespace kernelscan {

// `kernelscan serve`: opens the store, starts the workers and the HTTP API, and runs until
// SIGTERM or SIGINT, then drains (see scheduler::shutdown). Returns the process exit code.
int run_serve(serve_config config);

}  // namespace kernelscan
