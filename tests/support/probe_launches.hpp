#pragma once
// Runs a probe kernel's launches one after another on a backend, as the tests of local memory
// scrubs do: launch i is point i of the probe's plan, on buffers of its own, optionally after a
// scrub of local memory; what each launch left in its first buffer (u32 words) is handed to the
// caller. Header-only.

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/device_backend.hpp"
#include "engine/job_plan.hpp"
#include "engine/point_kernel.hpp"

namespace kernelscan::testing {

// `seen(i, words)` gets launch i's first buffer, `words` u32 long, after it ran.
inline void probe_launches(
    device_backend& backend, const job_plan& plan, int launches, bool scrub, std::size_t words,
    const std::function<void(int, const std::vector<std::uint32_t>&)>& seen) {
  std::vector<kernel_instance> instances;
  for (int i = 0; i < launches; ++i)
    instances.push_back(plan.resolve(std::uint64_t(i)));
  std::vector<std::uint32_t> out(words);
  for (int i = 0; i < launches; ++i) {
    point_kernel k(backend, instances[std::size_t(i)]);
    const auto buffers = k.own_buffers();
    if (scrub) backend.scrub_local_memory();
    k.launch(buffers);
    backend.synchronize();
    backend.read(*buffers[0], 0, out.data(), out.size() * 4);
    seen(i, out);
  }
}

}  // namespace kernelscan::testing
