// The OpenCL engine against a minimal raw OpenCL timing loop, on the first OpenCL device (PoCL's
// CPU device where there is no GPU), in one run:
//   - a STREAM triad and the builtin tiled GEMM, each timed by the daemon (a job, hot caches)
//     and by a raw loop of the same kernels built the same way (the engine's OpenCL C source,
//     the same build options and launch sizes), one event per launch; rounds alternate the two so
//     that drift of the machine affects both alike. Printed: each side's median with its noise
//     (relative standard error of the median, as the daemon reports it), and their ratio;
//   - the wall time from submitting a short custom kernel (3 verification trials, a 3-point
//     sweep) to its converged result.
//
//   build/tests/bench/bench_opencl [rounds]
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/opencl/builtin_kernels.hpp"
#include "engine/statistics.hpp"
#include "tests/support/axpy_spec.hpp"
#include "tests/support/daemon_process.hpp"

namespace {

using kernelscan::json;
using kernelscan::testing::daemon_process;
using namespace std::chrono_literals;

// STREAM's rule: each array at least four times the last-level cache, so that no launch finds
// part of its working set left in cache by the one before. At 2^22 (48 MiB in all) the two sides
// differed by 5-11% on a 2-core EPYC VM, by what else ran between launches, not by the timing.
constexpr std::int64_t k_triad_n = std::int64_t(1) << 24;
constexpr std::int64_t k_gemm_n = 256;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_opencl: %s\n", what.c_str());
  std::exit(1);
}

void check(cl_int e, const char* what) {
  if (e != CL_SUCCESS) die(std::string(what) + ": OpenCL status " + std::to_string(e));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The raw loop: one context and in-order profiling queue on OpenCL device 0 (the first device of
// the first platform that has one, as the engine numbers them).
class raw_opencl {
 public:
  raw_opencl() {
    cl_uint n = 0;
    check(clGetPlatformIDs(0, nullptr, &n), "platforms");
    std::vector<cl_platform_id> platforms(n);
    check(clGetPlatformIDs(n, platforms.data(), nullptr), "platforms");
    for (auto p : platforms) {
      cl_uint d = 0;
      if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &m_device, &d) == CL_SUCCESS && d > 0) break;
    }
    cl_int e = CL_SUCCESS;
    m_context = clCreateContext(nullptr, 1, &m_device, nullptr, nullptr, &e);
    check(e, "context");
    m_queue = clCreateCommandQueue(m_context, m_device, CL_QUEUE_PROFILING_ENABLE, &e);
    check(e, "queue");
    char ext[8192] = {};
    clGetDeviceInfo(m_device, CL_DEVICE_EXTENSIONS, sizeof ext, ext, nullptr);
    const bool fp64 = std::string(ext).find("cl_khr_fp64") != std::string::npos;
    const std::string source = kernelscan::opencl::element_prelude(kernelscan::dtype::f32, fp64) +
                               kernelscan::opencl::k_builtin_source;
    const char* text = source.c_str();
    m_program = clCreateProgramWithSource(m_context, 1, &text, nullptr, &e);
    check(e, "program");
    check(clBuildProgram(m_program, 1, &m_device, "-cl-std=CL1.2", nullptr, nullptr), "build");
  }

  cl_mem random_buffer(std::int64_t count) {
    std::vector<float> host(static_cast<std::size_t>(count));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto& v : host)
      v = u(rng);
    cl_int e = CL_SUCCESS;
    cl_mem m = clCreateBuffer(m_context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              host.size() * sizeof(float), host.data(), &e);
    check(e, "buffer");
    return m;
  }

  cl_kernel kernel(const char* name) {
    cl_int e = CL_SUCCESS;
    cl_kernel k = clCreateKernel(m_program, name, &e);
    check(e, name);
    return k;
  }

  // Times `launches` launches of `k`, each alone (enqueue, wait), from its event.
  std::vector<double> time(cl_kernel k, cl_uint dims, const std::size_t* global,
                           const std::size_t* local, int launches) {
    std::vector<double> us;
    for (int i = 0; i < launches + 3; ++i) {
      cl_event ev = nullptr;
      check(clEnqueueNDRangeKernel(m_queue, k, dims, nullptr, global, local, 0, nullptr, &ev),
            "launch");
      check(clWaitForEvents(1, &ev), "wait");
      cl_ulong start = 0, end = 0;
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr);
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
      clReleaseEvent(ev);
      if (i >= 3) us.push_back(double(end - start) / 1e3);  // three warm-ups
    }
    return us;
  }

 private:
  cl_device_id m_device{};
  cl_context m_context{};
  cl_command_queue m_queue{};
  cl_program m_program{};
};

struct figure {
  double median = 0, noise = 0;
};

figure summarise(std::vector<double> us) {
  const auto s = kernelscan::summarize(us);
  return {s.median, s.rel_noise.value_or(std::numeric_limits<double>::quiet_NaN())};
}

figure raw_triad(raw_opencl& cl, int launches) {
  // Fresh buffers every round, as the daemon has them here (it reuses a released buffer for the
  // next point only, and a GEMM point runs between two triad points): where the pages of a
  // buffer land decides a memory-bound kernel's time by up to 30% on a VM, so buffers kept for
  // the whole run would bias one side for every round.
  const cl_mem a = cl.random_buffer(k_triad_n), b = cl.random_buffer(k_triad_n),
               c = cl.random_buffer(k_triad_n);
  static cl_kernel k = cl.kernel("stream_op");
  const cl_int variant = 3;
  const cl_long n = k_triad_n;
  const float s = 3.0f;
  clSetKernelArg(k, 0, sizeof variant, &variant);
  clSetKernelArg(k, 1, sizeof n, &n);
  clSetKernelArg(k, 2, sizeof s, &s);
  clSetKernelArg(k, 3, sizeof a, &a);
  clSetKernelArg(k, 4, sizeof b, &b);
  clSetKernelArg(k, 5, sizeof c, &c);
  // The engine's launch: grid-stride, at most 65536 groups of 256.
  const std::size_t local = 256, global = std::size_t(std::min<std::int64_t>(n, 65536 * 256));
  const figure f = summarise(cl.time(k, 1, &global, &local, launches));
  for (cl_mem m : {a, b, c})
    clReleaseMemObject(m);
  return f;
}

figure raw_gemm(raw_opencl& cl, int launches) {
  const cl_mem a = cl.random_buffer(k_gemm_n * k_gemm_n), b = cl.random_buffer(k_gemm_n * k_gemm_n),
               c = cl.random_buffer(k_gemm_n * k_gemm_n);
  static cl_kernel k = cl.kernel("gemm_tiled");
  const cl_long n = k_gemm_n, one = 1;
  const float alpha = 1, beta = 0;
  // Row-major A and B: A(i,p) = a[i*k + p], B(p,j) = b[p*n + j].
  cl_long args_l[] = {n, n, n};
  for (cl_uint i = 0; i < 3; ++i)
    clSetKernelArg(k, i, sizeof(cl_long), &args_l[i]);
  clSetKernelArg(k, 3, sizeof a, &a);
  clSetKernelArg(k, 4, sizeof n, &n);
  clSetKernelArg(k, 5, sizeof one, &one);
  clSetKernelArg(k, 6, sizeof b, &b);
  clSetKernelArg(k, 7, sizeof n, &n);
  clSetKernelArg(k, 8, sizeof one, &one);
  clSetKernelArg(k, 9, sizeof c, &c);
  clSetKernelArg(k, 10, sizeof alpha, &alpha);
  clSetKernelArg(k, 11, sizeof beta, &beta);
  const std::size_t local[2] = {256, 1};
  const std::size_t global[2] = {std::size_t((n + 63) / 64) * 256, std::size_t((n + 63) / 64)};
  const figure f = summarise(cl.time(k, 2, global, local, launches));
  for (cl_mem m : {a, b, c})
    clReleaseMemObject(m);
  return f;
}

json timing() {
  return {{"l2", "hot"}, {"min_samples", 30}, {"max_time_ms", 3000}, {"target_rel_noise", 0.002}};
}

figure daemon_point(daemon_process& d, json kernel) {
  json spec = {{"engine", "opencl"},          {"device", 0},        {"cache", false},
               {"kernel", std::move(kernel)}, {"timing", timing()}, {"verify", {{"trials", 1}}}};
  const auto id = d.submit(spec);
  const json job = d.wait_job(id, 600s);
  if (job["status"] != "succeeded") die("daemon job failed: " + job.dump());
  const json row = d.get("/api/v1/jobs/" + std::to_string(id) + "/results").body["results"][0];
  return {row["time_us"]["median"].get<double>(), row["time_us"]["rel_noise"].get<double>()};
}

void report(const char* what, const std::vector<figure>& daemon, const std::vector<figure>& raw) {
  std::vector<double> dm, rm, dn, rn, ratios;
  for (std::size_t i = 0; i < daemon.size(); ++i) {
    dm.push_back(daemon[i].median);
    rm.push_back(raw[i].median);
    dn.push_back(daemon[i].noise);
    rn.push_back(raw[i].noise);
    ratios.push_back(daemon[i].median / raw[i].median);
  }
  std::printf(
      "%-28s daemon %10.1f us (noise %.2f%%)   raw loop %10.1f us (noise %.2f%%)   "
      "daemon/raw %.4f (rounds %.4f..%.4f)\n",
      what, median(dm), 100 * median(dn), median(rm), 100 * median(rn), median(ratios),
      *std::min_element(ratios.begin(), ratios.end()),
      *std::max_element(ratios.begin(), ratios.end()));
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  daemon_process::options o;
  o.engine = "opencl";
  daemon_process d(o);
  d.start();
  const json device = d.get("/api/v1/devices").body["devices"][0];
  std::printf("device: %s (%s), %s\n", device["name"].get<std::string>().c_str(),
              device["type"].get<std::string>().c_str(),
              device["driver"].get<std::string>().c_str());
  // The roofline is measured before the first job; let it finish first.
  const auto ready = std::chrono::steady_clock::now();
  while (d.get("/api/v1/devices").body["devices"][0]["measured"].is_null()) {
    if (std::chrono::steady_clock::now() - ready > 300s) die("no roofline after 300 s");
    std::this_thread::sleep_for(100ms);
  }

  raw_opencl cl;
  std::vector<figure> triad_daemon, triad_raw, gemm_daemon, gemm_raw;
  const json triad = {{"op", "stream"}, {"variant", "triad"}, {"n", k_triad_n}, {"dtype", "f32"}};
  const json gemm = {{"op", "gemm"},  {"m", k_gemm_n},  {"n", k_gemm_n},
                     {"k", k_gemm_n}, {"dtype", "f32"}, {"impl", "builtin"}};
  for (int r = 0; r < rounds; ++r) {
    triad_raw.push_back(raw_triad(cl, 100));
    triad_daemon.push_back(daemon_point(d, triad));
    gemm_raw.push_back(raw_gemm(cl, 100));
    gemm_daemon.push_back(daemon_point(d, gemm));
  }
  report("stream triad f32 2^24", triad_daemon, triad_raw);
  report("gemm builtin f32 256^3", gemm_daemon, gemm_raw);

  // Submit to converged result: a short custom kernel, 3 points, 3 verification trials each.
  const json axpy = {{"engine", "opencl"},
                     {"device", 0},
                     {"cache", false},
                     {"kernel", kernelscan::testing::opencl_axpy_kernel()},
                     {"sweep", {{"N", {4096, 16384, 65536}}}},
                     {"timing", {{"l2", "hot"}}}};
  std::vector<double> walls;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto id = d.submit(axpy);
    const json job = d.wait_job(id, 600s);
    walls.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (job["status"] != "succeeded") die("axpy job failed: " + job.dump());
    const json rows = d.get("/api/v1/jobs/" + std::to_string(id) + "/results").body["results"];
    for (const auto& row : rows) {
      if (!row["converged"].get<bool>())
        std::printf("  (a point did not converge: %s)\n",
                    row["stop_reason"].get<std::string>().c_str());
    }
  }
  std::printf("%-28s median %.0f ms (rounds %.0f..%.0f ms): 3 points, 3 verification trials each\n",
              "submit to converged result", median(walls),
              *std::min_element(walls.begin(), walls.end()),
              *std::max_element(walls.begin(), walls.end()));
  return 0;
}
