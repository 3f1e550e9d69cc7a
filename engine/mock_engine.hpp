#pragma once
// The mock: a simulated device backend that imitates a catalog GPU without one, so that
// everything but device code runs in CI exactly as in production, through the same point runner
// as the real backends. The time of a launch comes from a roofline model (launch latency plus
// the slower of compute and memory time, with size-dependent efficiency and caches that help
// when they were not flushed), and each sample from the launches it timed times seeded
// log-normal noise with occasional outliers. Its clock is simulated: a point costs no wall time
// unless the job asks for mock.delay_ms. Buffers hold nothing and no device code runs, so
// verification reports `skipped` unless the job says through mock.output what the simulated
// kernel writes; mock.speedup makes the candidate faster than its model; mock.fault crashes or
// hangs the worker (tests only).
//
// Threading: one thread (the worker's).

#include <cstdint>
#include <random>

#include "engine/device_backend.hpp"
#include "engine/point_runner.hpp"

namespace kernelscan {

class mock_backend final : public device_backend {
 public:
  mock_backend(const device_model& model, int index);

  const device_info& device() const override { return m_info; }
  double launch_latency_us() const override { return m_model.launch_latency_us; }
  std::string gemm_library() const override { return "simulated library"; }
  bool supports_gemm(gemm_algorithm algorithm, dtype t) const override;

  void begin_point(const point_context& point) override;
  bool usable() const override { return true; }
  bool runs_device_code() const override { return false; }
  verification_result simulate_verification(const job_spec& spec,
                                            const kernel_instance& k) override;

  std::uint64_t free_memory() override { return m_model.memory_bytes; }
  std::uint64_t max_allocation() const override { return m_model.memory_bytes; }
  device_buffer allocate_guarded(std::uint64_t bytes, std::uint64_t guard) override;
  void fill(const device_buffer&, const fill_request&) override {}
  void write(const device_buffer&, std::uint64_t, const void*, std::uint64_t) override {}
  void read(const device_buffer& b, std::uint64_t offset, void* dst, std::uint64_t bytes) override;
  void copy(const device_buffer&, const device_buffer&, std::uint64_t) override {}
  // No storage: guards read as zeros, like the data.
  void write_guard(const device_buffer&, guard_side, const void*) override {}
  void read_guard(const device_buffer& b, guard_side side, void* dst) override;

  kernel_id compile(const custom_kernel&) override { return 0; }
  void launch(const kernel_call& call) override;
  void gemm(const gemm_call& call) override;
  void stream(const stream_call& call) override;
  void fma(const device_buffer& out, std::int64_t threads, int iterations) override;
  void synchronize() override {}

  void flush_caches() override;
  timed_sample time_launches(kernel_role role, const std::function<void()>& enqueue) override;
  double clock_ms() override { return m_clock_us / 1e3; }

  // The model's noise-free time of one launch, in microseconds.
  double model_time_us(const kernel_instance& k, l2_mode l2) const;

 private:
  void release(const device_buffer&) noexcept override {}
  void launched(double model_us);

  const device_model& m_model;
  device_info m_info;
  std::mt19937_64 m_rng;
  const mock_options* m_options = nullptr;
  double m_clock_us = 0;
  double m_pending_us = 0;  // model time of the launches of the sample being timed
  bool m_flushed = false;   // the caches were flushed before the sample being timed
  std::uintptr_t m_next_handle = 1;
};

// A point runner over a mock_backend, for the worker and the tests.
class mock_engine final : public point_runner {
 public:
  mock_engine(const device_model& model, int index);
  double model_time_us(const kernel_instance& k, l2_mode l2) const {
    return m_mock->model_time_us(k, l2);
  }

 private:
  mock_backend* m_mock;
};

}  // namespace kernelscan
