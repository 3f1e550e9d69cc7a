// The point runner against a fake backend (fake_backend.hpp): verification order and poisoning,
// reference isolation, the batch decision, interleaving with a baseline, warm-up, error mapping,
// the memory check, throttled samples and the roofline recipe. This is the logic every backend
// shares, checked without a device.

#include "engine/point_runner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "api/job_spec_codec.hpp"
#include "api/result_codec.hpp"
#include "engine/fill_pattern.hpp"
#include "engine/job_plan.hpp"
#include "engine/sample_loop.hpp"
#include "point_runner_fixture.hpp"

namespace kernelscan {
namespace {

using testing::fake_backend;

// y = a*x + y over n elements; "axpy_half" writes only the first half, "axpy_none" nothing,
// "axpy_wrong" adds 1.
json axpy_job(const std::string& entry, int n = 1000, int trials = 3) {
  return json::parse(R"({
    "kernel": {"op": "custom", "language": "hip", "entry": ")" +
                     entry + R"(",
      "source": "extern \"C\" __global__ void k() {}",
      "block": [256, 1, 1], "grid": [4, 1, 1],
      "args": [{"name": "n", "type": "i32", "value": "N"},
               {"name": "a", "type": "f32", "value": 2.0},
               {"name": "x", "type": "f32*", "count": "N", "init": "random"},
               {"name": "y", "type": "f32*", "count": "N", "init": "random", "output": true}],
      "flops": "2*N", "bytes": "12*N",
      "reference": {"op": "custom", "entry": "axpy", "source": "extern \"C\" __global__ void k() {}",
                    "block": [256, 1, 1], "grid": [4, 1, 1]}},
    "sweep": {"N": [)" +
                     std::to_string(n) +
                     R"(]},
    "verify": {"trials": )" +
                     std::to_string(trials) + R"(},
    "timing": {"l2": "hot", "min_samples": 10, "max_time_ms": 50}
  })");
}

// y = 2*x with y written only (no init: it starts as the unwritten pattern).
json scale_job(const std::string& entry) {
  json j = axpy_job(entry);
  j["kernel"]["args"][3].erase("init");
  j["kernel"]["reference"]["entry"] = "scale";
  return j;
}

using testing::plan_of;
using testing::runner_fixture;

runner_fixture make_runner() {
  auto f = std::make_unique<fake_backend>();
  auto axpy = [](double bias, double share) {
    return [bias, share](const fake_backend::host_args& a) {
      const int n = int(a.scalars[0]);
      const double alpha = a.scalars[1];
      auto* x = static_cast<float*>(a.buffers[0]);
      auto* y = static_cast<float*>(a.buffers[1]);
      for (int i = 0; i < int(n * share); ++i)
        y[i] = float(alpha * x[i] + y[i] + bias);
    };
  };
  f->kernels["axpy"] = axpy(0, 1);
  f->kernels["axpy_wrong"] = axpy(1, 1);
  f->kernels["axpy_half"] = axpy(0, 0.5);
  f->kernels["axpy_none"] = axpy(0, 0);
  // Right but for two elements far into the output (in its second and third windows read back).
  f->kernels["axpy_far_wrong"] = [axpy](const fake_backend::host_args& a) {
    axpy(0, 1)(a);
    auto* y = static_cast<float*>(a.buffers[1]);
    const int n = int(a.scalars[0]);
    y[n - 1] += 3;
    y[n / 2 + 123] -= 1;
  };
  // y = a*x: y is written only, so it starts as the unwritten pattern.
  auto scale = [](double share) {
    return [share](const fake_backend::host_args& a) {
      const int n = int(a.scalars[0]);
      auto* x = static_cast<float*>(a.buffers[0]);
      auto* y = static_cast<float*>(a.buffers[1]);
      for (int i = 0; i < int(n * share); ++i)
        y[i] = float(a.scalars[1] * x[i]);
    };
  };
  f->kernels["scale"] = scale(1);
  f->kernels["scale_half"] = scale(0.5);
  f->kernels["scale_none"] = scale(0);
  f->kernel_time_us["axpy"] = 40;
  f->kernel_time_us["axpy_wrong"] = 40;
  f->kernel_time_us["axpy_half"] = 20;
  f->kernel_time_us["axpy_none"] = 1;
  return runner_fixture(std::move(f));
}

std::size_t position(const std::vector<std::string>& log, const std::string& entry,
                     std::size_t from = 0) {
  auto it = std::find(log.begin() + std::ptrdiff_t(from), log.end(), entry);
  return std::size_t(it - log.begin());
}

TEST(PointRunner, ACorrectKernelPassesEveryTrial) {
  auto t = make_runner();
  const auto plan = plan_of(axpy_job("axpy"));
  const auto r = t.runner.measure(plan, 0, 7);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.verification.status, "passed");
  EXPECT_EQ(r.verification.trials, 3);
  // One launch per trial, and as many as two more, as the point's seed picks.
  EXPECT_GE(r.verification.launches, 3);
  EXPECT_LE(r.verification.launches, 5);
  EXPECT_EQ(r.verification.max_abs_err, 0.0);
  EXPECT_EQ(r.verification.norm_rel_err, 0.0);
  EXPECT_TRUE(r.flags.empty());
  EXPECT_EQ(t.fake->live_buffers(), 0u);  // everything the point allocated is freed
}

TEST(PointRunner, EachTrialPoisonsOutputsAndRunsTheIsolatedReferenceFirst) {
  auto t = make_runner();
  const auto plan = plan_of(axpy_job("axpy", 1000, 2));
  (void)t.runner.measure(plan, 0, 7);
  const auto& log = t.fake->log;
  // Buffers 1 (x) and 2 (y) are the kernel's; each trial refills them: x random, y random
  // (its init), then the reference gets a copy of y, runs, is read back and freed before the
  // kernel runs; then the kernel's y is read and compared.
  std::size_t at = 0;
  for (int trial = 0; trial < 2; ++trial) {
    const std::size_t fill_x = position(log, "fill 1 random", at);
    const std::size_t fill_y = position(log, "fill 2 random", at);
    ASSERT_LT(fill_x, log.size()) << "trial " << trial;
    ASSERT_LT(fill_y, log.size());
    const std::size_t copy =
        std::find_if(log.begin() + std::ptrdiff_t(fill_y), log.end(),
                     [](const std::string& s) { return s.rfind("copy 2 ", 0) == 0; }) -
        log.begin();
    ASSERT_LT(copy, log.size());
    const std::string copy_handle = log[copy].substr(log[copy].rfind(' ') + 1);
    const std::size_t reference = position(log, "launch axpy", copy);
    const std::size_t read_reference = position(log, "read " + copy_handle, reference);
    const std::size_t freed = position(log, "release " + copy_handle, read_reference);
    const std::size_t kernel = position(log, "launch axpy", freed);
    const std::size_t read_kernel = position(log, "read 2", kernel);
    EXPECT_LT(reference, read_reference);
    EXPECT_LT(read_reference, freed);
    EXPECT_LT(freed, kernel) << "the reference's copy must be gone before the kernel runs";
    ASSERT_LT(read_kernel, log.size());
    at = read_kernel + 1;
  }
  // Each verification launch is timed as a sample; timing proper starts after verification,
  // with a fresh fill of the inputs.
  EXPECT_LT(position(log, "sample candidate"),
            position(log, "launch axpy", position(log, "release 3")));
  const std::size_t first_sample = position(log, "sample candidate", at);
  ASSERT_LT(first_sample, log.size());
  EXPECT_LT(position(log, "fill 1 random", at), first_sample);
}

// A kernel that is right for its first `honest` launches (verification) and then, unwatched,
// writes nothing: the outputs of timed samples are checked, so it scores 0.
TEST(PointRunner, AKernelCorrectOnlyWhileVerifiedIsCaughtInItsTimedSamples) {
  auto t = make_runner();
  int launches = 0;
  t.fake->kernels["scale_counter"] = [&launches](const fake_backend::host_args& a) {
    if (++launches > 3) return;  // the three verification trials compute
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    for (int i = 0; i < n; ++i)
      y[i] = float(a.scalars[1] * x[i]);
  };
  // A seed whose extra verification launches come after the last trial (or none): verification
  // passes, and the timed samples catch it.
  std::uint64_t seed = 1;
  for (;; ++seed) {
    launches = 0;
    t.fake->log.clear();
    const auto probe = t.runner.measure(plan_of(scale_job("scale_counter")), 0, seed);
    if (probe.verification.status == "passed") break;
  }
  launches = 0;
  const auto r = t.runner.measure(plan_of(scale_job("scale_counter")), 0, seed);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.verification.status, "passed");
  EXPECT_GE(r.verification.timed_checks, 1);
  EXPECT_EQ(r.verification.timed_wrong, 1000u * std::uint64_t(r.verification.timed_checks));
  EXPECT_NE(r.verification.note.find("timed samples checked"), std::string::npos)
      << r.verification.note;
  EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "timed_output_mismatch"), r.flags.end());
  EXPECT_FALSE(r.fitness.correct);
  EXPECT_EQ(r.fitness.combined_score, 0.0);
}

// Entries of `log` from `from` on that begin with `prefix`.
std::size_t count_from(const std::vector<std::string>& log, std::size_t from,
                       const std::string& prefix) {
  return std::size_t(std::count_if(log.begin() + std::ptrdiff_t(std::min(from, log.size())),
                                   log.end(),
                                   [&](const std::string& e) { return e.starts_with(prefix); }));
}

// Registers "scale_tiring": the scale kernel for its first `honest` launches from a fresh module
// (counted in `launches`, which the test sets to -1 until then), then writing nothing.
void add_tiring_scale(fake_backend& fake, int& launches, int honest) {
  fake.on_fresh_module = [&launches] { launches = 0; };
  fake.kernels["scale_tiring"] = [&launches, honest](const fake_backend::host_args& a) {
    if (launches >= 0 && ++launches > honest) return;
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    for (int i = 0; i < n; ++i)
      y[i] = float(a.scalars[1] * x[i]);
  };
}

// A job of the fake's scale kernel `kernel`, timed at a millisecond a launch and sampled 200
// times: a check afresh (microseconds of host work here) costs far less than a quarter of the
// sampling's time, so every drawn sample past the kept answers gets one.
json afresh_job(fake_backend& fake, const std::string& kernel) {
  fake.kernel_time_us[kernel] = 1000;
  json job = scale_job(kernel);
  job["timing"] = {
      {"l2", "hot"}, {"min_samples", 200}, {"max_samples", 200}, {"max_time_ms", 5000}};
  return job;
}

// A sample checked afresh (the kept answers spent, the reference run after it) moves the kernel's
// outputs once: they are read to the host before its set is made again for the reference, and
// compared there, not written back and read once more.
TEST(PointRunner, ASampleCheckedAfreshReadsItsOutputsOnce) {
  auto t = make_runner();
  t.fake->kernels["scale_same"] = t.fake->kernels["scale"];
  const auto r = t.runner.measure(plan_of(afresh_job(*t.fake, "scale_same")), 0, 5);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.verification.status, "passed");
  EXPECT_EQ(r.verification.timed_failed, 0);
  const auto& log = t.fake->log;
  const std::size_t sampling = position(log, "compile_fresh scale_same");
  ASSERT_LT(sampling, log.size());
  // In each stretch between two samples where the reference ran: the kernel's outputs, read
  // before it ran, are neither written back nor read again.
  int afresh = 0;
  std::set<std::string> outputs;
  bool reference = false;
  for (std::size_t i = sampling; i <= log.size(); ++i) {
    if (i == log.size() || log[i] == "sample candidate") {
      if (reference) ++afresh;
      outputs.clear();
      reference = false;
      continue;
    }
    const std::string& e = log[i];
    if (e == "launch scale") reference = true;
    for (const std::string op : {"read ", "write "}) {
      if (!e.starts_with(op)) continue;
      const std::string buffer = e.substr(op.size());
      if (!reference && op == "read ") {
        outputs.insert(buffer);
      } else {
        EXPECT_EQ(outputs.count(buffer), 0u) << e << " again, entry " << i;
      }
    }
  }
  EXPECT_GE(afresh, 10) << r.verification.timed_checks << " timed checks";
  EXPECT_GE(r.verification.timed_checks, afresh);
  EXPECT_TRUE(r.fitness.correct);
}

// On a device that screens outputs, a sample checked afresh is screened where the outputs and
// the reference's answer lie: a passing one reads nothing back, neither the kernel's outputs nor
// the reference's answer.
TEST(PointRunner, ASampleCheckedAfreshOnADeviceThatScreensReadsNothingBack) {
  auto t = make_runner();
  t.fake->screens = true;
  t.fake->kernels["scale_same"] = t.fake->kernels["scale"];
  const auto r = t.runner.measure(plan_of(afresh_job(*t.fake, "scale_same")), 0, 5);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.verification.timed_failed, 0);
  const auto& log = t.fake->log;
  const std::size_t sampling = position(log, "compile_fresh scale_same");
  ASSERT_LT(sampling, log.size());
  // Each stretch between two samples where the reference ran was screened and read nothing.
  int afresh = 0, screened = 0;
  bool reference = false, screen = false;
  std::vector<std::string> reads;
  for (std::size_t i = sampling; i <= log.size(); ++i) {
    if (i == log.size() || log[i] == "sample candidate") {
      if (reference) {
        ++afresh;
        screened += screen ? 1 : 0;
        for (const auto& e : reads)
          ADD_FAILURE() << e << " in a check afresh, before entry " << i;
      }
      reference = screen = false;
      reads.clear();
      continue;
    }
    if (log[i] == "launch scale") reference = true;
    if (log[i].starts_with("screen ")) screen = true;
    if (reference && log[i].starts_with("read ")) reads.push_back(log[i]);
  }
  EXPECT_GE(afresh, 10) << r.verification.timed_checks << " timed checks";
  EXPECT_EQ(screened, afresh);
  EXPECT_GE(r.verification.timed_checks, afresh);
  EXPECT_TRUE(r.fitness.correct);
}

// A screen on the device fails nothing by itself: a kernel that stops working in its timed
// samples fails its screens, and the host, reading the outputs back, counts what is wrong.
TEST(PointRunner, AScreenThatDoesNotPassIsDecidedOnTheHost) {
  auto t = make_runner();
  t.fake->screens = true;
  int launches = 0;  // since the fresh module, -1 before it
  add_tiring_scale(*t.fake, launches, 20);
  const json job = afresh_job(*t.fake, "scale_tiring");
  launches = -1;
  const auto r = t.runner.measure(plan_of(job), 0, 5);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.verification.status, "passed");
  EXPECT_GE(r.verification.timed_failed, 10);
  // Every element of every failed check, as the host counts them: 1000 a sample.
  EXPECT_EQ(r.verification.timed_wrong, 1000u * std::uint64_t(r.verification.timed_failed));
  EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "timed_output_mismatch"), r.flags.end());
  EXPECT_EQ(r.fitness.combined_score, 0.0);
  EXPECT_GE(count_from(t.fake->log, 0, "screen "), 10u);
}

// A timed sample checked on a kept answer, of a kernel whose bits are the same every launch,
// hashes as its verified launch on the same inputs did: nothing is read back after verification
// (whose end the fresh module marks) but for the checks whose inputs are new, where the
// reference runs, and it passes.
TEST(PointRunner, ACheckedSampleWithTheVerifiedBitsIsNotReadBack) {
  auto t = make_runner();
  t.fake->kernels["scale_same"] =
      t.fake->kernels["scale"];  // its launches told from the reference's
  const auto r = t.runner.measure(plan_of(scale_job("scale_same")), 0, 5);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.verification.status, "passed");
  EXPECT_GE(r.verification.timed_checks, 1);
  EXPECT_EQ(r.verification.timed_failed, 0);
  const auto& log = t.fake->log;
  const std::size_t sampling = position(log, "compile_fresh scale_same");
  ASSERT_LT(sampling, log.size());
  const auto afresh = std::size_t(
      std::count(log.begin() + std::ptrdiff_t(sampling), log.end(), std::string("launch scale")));
  EXPECT_GE(count_from(log, sampling, "hash "), std::size_t(r.verification.timed_checks) - afresh);
  // Between two samples, outputs are read back only where the reference ran.
  bool read = false, reference = false;
  for (std::size_t i = sampling; i <= log.size(); ++i) {
    if (i == log.size() || log[i] == "sample candidate") {
      EXPECT_TRUE(!read || reference) << "read back without a reference before entry " << i;
      read = reference = false;
      continue;
    }
    read = read || log[i].starts_with("read ");
    reference = reference || log[i] == "launch scale";
  }
  EXPECT_TRUE(r.fitness.correct);
}

// An honest kernel whose last bits differ from launch to launch (as with atomics) is within
// tolerance but not bit for bit what its verified launch wrote: its checked samples are read
// back and compared element by element, and pass.
TEST(PointRunner, AKernelWhoseBitsVaryFromLaunchToLaunchIsComparedAndPasses) {
  auto t = make_runner();
  int launches = 0;
  t.fake->kernels["scale_jitter"] = [&launches](const fake_backend::host_args& a) {
    const float jitter = ++launches % 2 ? 1.0f : 1.0f + 1e-6f;
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    for (int i = 0; i < n; ++i)
      y[i] = float(a.scalars[1] * x[i]) * jitter;
  };
  // Over seeds, some checked samples land on the other parity than their verified launch.
  std::size_t compared = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    t.fake->log.clear();
    const auto r = t.runner.measure(plan_of(scale_job("scale_jitter")), 0, seed);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    EXPECT_EQ(r.verification.status, "passed") << r.verification.note;
    EXPECT_GE(r.verification.timed_checks, 1);
    EXPECT_EQ(r.verification.timed_failed, 0) << r.verification.note;
    EXPECT_TRUE(r.flags.empty()) << r.flags.front();
    compared +=
        count_from(t.fake->log, position(t.fake->log, "compile_fresh scale_jitter"), "read ");
  }
  EXPECT_GT(compared, 0u);
}

// A kernel that computes its outputs right but also writes to an input: the inputs are checked
// around every verification launch, so it is flagged and scores 0.
TEST(PointRunner, AKernelWritingToItsInputIsFlagged) {
  auto t = make_runner();
  t.fake->kernels["scale_clobber"] = [](const fake_backend::host_args& a) {
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    for (int i = 0; i < n; ++i)
      y[i] = float(a.scalars[1] * x[i]);
    x[n / 2] = 0;  // after reading it: the output is still right
  };
  const auto r = t.runner.measure(plan_of(scale_job("scale_clobber")), 0, 3);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.verification.status, "passed");
  EXPECT_EQ(r.verification.inputs_written, std::vector<std::string>{"x"});
  EXPECT_NE(r.verification.note.find("wrote to its input x"), std::string::npos)
      << r.verification.note;
  EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "input_modified"), r.flags.end());
  EXPECT_FALSE(r.fitness.correct);
  EXPECT_EQ(r.fitness.combined_score, 0.0);

  // The same kernel honest: nothing is written but the output.
  const auto honest = t.runner.measure(plan_of(scale_job("scale")), 0, 3);
  EXPECT_TRUE(honest.verification.inputs_written.empty());
  EXPECT_EQ(std::find(honest.flags.begin(), honest.flags.end(), "input_modified"),
            honest.flags.end());
}

// A workspace the kernel writes is declared "scratch": it is not an input, so writing it is no
// violation, and it starts as the unwritten pattern before every launch.
TEST(PointRunner, AScratchBufferMayBeWritten) {
  auto t = make_runner();
  std::vector<float> seen;
  t.fake->kernels["scale_ws"] = [&seen](const fake_backend::host_args& a) {
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    auto* ws = static_cast<float*>(a.buffers[2]);
    seen.push_back(ws[0]);
    for (int i = 0; i < n; ++i) {
      ws[i] = float(a.scalars[1] * x[i]);
      y[i] = ws[i];
    }
  };
  json j = scale_job("scale_ws");
  j["kernel"]["args"].push_back(
      {{"name", "ws"}, {"type", "f32*"}, {"count", "N"}, {"scratch", true}});
  const auto r = t.runner.measure(plan_of(j), 0, 3);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.verification.status, "passed");
  EXPECT_TRUE(r.verification.inputs_written.empty());
  EXPECT_TRUE(r.flags.empty()) << r.flags.front();
  // Each verification launch found it holding the unwritten pattern (NaN), not the last answer.
  ASSERT_GE(seen.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(std::isnan(seen[i])) << i;
}

// A kernel that remembers its answer per output address (in its module's globals) and replays
// it: inputs get fresh values before every sample, so a replayed answer is wrong where a sample
// is checked, as the last one always is.
TEST(PointRunner, AKernelReplayingAnEarlierAnswerIsCaughtInItsTimedSamples) {
  auto t = make_runner();
  std::map<void*, std::vector<float>> cache;
  t.fake->on_fresh_module = [&cache] { cache.clear(); };
  t.fake->kernels["scale_cached"] = [&cache](const fake_backend::host_args& a) {
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    auto it = cache.find(y);
    if (it != cache.end()) {
      std::copy(it->second.begin(), it->second.end(), y);
      return;
    }
    for (int i = 0; i < n; ++i)
      y[i] = float(a.scalars[1] * x[i]);
    cache[y].assign(y, y + n);
  };
  auto j = scale_job("scale_cached");
  j["verify"]["trials"] = 1;
  for (const std::uint64_t seed : {5, 6, 7, 8}) {
    cache.clear();
    const auto r = t.runner.measure(plan_of(j), 0, seed);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    EXPECT_EQ(r.verification.status, "passed");
    EXPECT_GT(r.verification.timed_wrong, 0u);
    EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "timed_output_mismatch"), r.flags.end());
    EXPECT_EQ(r.fitness.combined_score, 0.0);
  }
}

// A kernel that works for its first 80 launches from a fresh module and then writes nothing: its
// last timed sample is always checked, so it is caught whichever samples the draw picked.
TEST(PointRunner, AKernelThatStopsWorkingAfterItsFirstTimedLaunchesIsCaught) {
  auto t = make_runner();
  int launches = 0;  // since the fresh module, -1 before it
  add_tiring_scale(*t.fake, launches, 80);
  t.fake->kernel_time_us["scale_tiring"] = 40;  // one launch per sample
  // 100 samples: the drawn checks all but surely come in its first 80.
  auto j = scale_job("scale_tiring");
  j["timing"]["min_samples"] = 100;
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    launches = -1;
    const auto r = t.runner.measure(plan_of(j), 0, seed);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    EXPECT_EQ(r.verification.status, "passed") << seed;
    EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "timed_output_mismatch"), r.flags.end())
        << "seed " << seed << ": " << r.verification.note;
    EXPECT_EQ(r.fitness.combined_score, 0.0);
  }
}

// The first drawn timed samples and the last check are compared with answers verification kept,
// each answer at most once (a kernel that met a check's inputs in an earlier sample would know
// the next for a check), so that no reference runs before a checked sample; the last kept answer
// is the last check's. Later drawn samples get inputs of their own, which the reference answers
// after the sample.
TEST(PointRunner, CheckedTimedSamplesUseTheAnswersVerificationKept) {
  auto t = make_runner();
  std::vector<float> firsts;  // the first input of each launch of the kernel
  t.fake->kernels["scale_seen"] = [&firsts](const fake_backend::host_args& a) {
    firsts.push_back(static_cast<float*>(a.buffers[0])[0]);
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    for (int i = 0; i < n; ++i)
      y[i] = float(a.scalars[1] * x[i]);
  };
  t.fake->kernel_time_us["scale_seen"] = 40;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    firsts.clear();
    t.fake->log.clear();
    const auto r = t.runner.measure(plan_of(scale_job("scale_seen")), 0, seed);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    EXPECT_TRUE(r.flags.empty());
    EXPECT_GE(r.verification.timed_checks, 1);
    const auto& log = t.fake->log;
    const auto fresh = std::find(log.begin(), log.end(), "compile_fresh scale_seen");
    ASSERT_NE(fresh, log.end());
    const auto references = std::size_t(std::count(fresh, log.end(), "launch scale"));
    // The last check (one launch here) is on a kept answer: no reference after it.
    const auto last_sample = std::find(log.rbegin(), log.rend(), "sample candidate");
    EXPECT_EQ(std::count(log.rbegin(), last_sample, "launch scale"), 0) << "seed " << seed;
    // The verification trials' inputs come back in timing once per check on a kept answer, each
    // once; every other check ran the reference.
    const std::set<float> trial_inputs(firsts.begin(), firsts.begin() + r.verification.launches);
    std::set<float> again;
    for (std::size_t i = std::size_t(r.verification.launches); i < firsts.size(); ++i) {
      if (trial_inputs.count(firsts[i])) {
        EXPECT_TRUE(again.insert(firsts[i]).second) << "a trial's inputs twice, seed " << seed;
      }
    }
    EXPECT_LE(again.size(), 3u) << "seed " << seed;
    EXPECT_TRUE(trial_inputs.count(firsts.back())) << "the last check's inputs, seed " << seed;
    EXPECT_EQ(again.size() + references, std::size_t(r.verification.timed_checks))
        << "seed " << seed;
  }
}

// The number of verification launches varies with the point's seed (the trials asked for, and up
// to two more, unchecked), so a kernel cannot count its launches to learn when verification ends.
TEST(PointRunner, TheNumberOfVerificationLaunchesVariesWithTheSeed) {
  auto t = make_runner();
  std::set<int> counts;
  for (std::uint64_t seed = 1; seed <= 24; ++seed) {
    t.fake->log.clear();
    const auto r = t.runner.measure(plan_of(scale_job("scale")), 0, seed);
    EXPECT_EQ(r.verification.trials, 3);
    counts.insert(r.verification.launches);
    // The kernel's launches before it is loaded afresh for timing: one reference launch and one
    // kernel launch per trial, and the extra launches.
    const auto& log = t.fake->log;
    const auto fresh = std::find(log.begin(), log.end(), "compile_fresh scale");
    EXPECT_EQ(std::count(log.begin(), fresh, "launch scale"), 3 + r.verification.launches);
  }
  EXPECT_EQ(counts, (std::set<int>{3, 4, 5}));
}

// A kernel that writes past the end of its output, into the canary region after every buffer:
// out_of_bounds_write, and no score.
TEST(PointRunner, AWritePastTheEndOfABufferIsFlagged) {
  auto t = make_runner();
  t.fake->kernels["scale_over"] = [](const fake_backend::host_args& a) {
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    for (int i = 0; i < n; ++i)
      y[i] = float(a.scalars[1] * x[i]);
    y[n + 3] = 1;  // a stray write just past the end
  };
  const auto r = t.runner.measure(plan_of(scale_job("scale_over")), 0, 3);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.verification.status, "passed");  // its outputs are right
  EXPECT_EQ(r.verification.written_out_of_bounds, std::vector<std::string>{"y"});
  EXPECT_NE(r.verification.note.find("past the end of y"), std::string::npos)
      << r.verification.note;
  EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "out_of_bounds_write"), r.flags.end());
  EXPECT_EQ(r.fitness.combined_score, 0.0);

  const auto honest = t.runner.measure(plan_of(scale_job("scale")), 0, 3);
  EXPECT_TRUE(honest.verification.written_out_of_bounds.empty());
  EXPECT_TRUE(honest.flags.empty());
}

// A kernel that writes before the start of its output, into the canary region before every
// buffer: just before it (y[-1]) or a whole canary region before it (its first byte):
// out_of_bounds_write, and no score.
TEST(PointRunner, AWriteBeforeTheStartOfABufferIsFlagged) {
  for (const int before : {1, int(k_canary_bytes / sizeof(float))}) {
    auto t = make_runner();
    t.fake->kernels["scale_under"] = [before](const fake_backend::host_args& a) {
      const int n = int(a.scalars[0]);
      auto* x = static_cast<float*>(a.buffers[0]);
      auto* y = static_cast<float*>(a.buffers[1]);
      for (int i = 0; i < n; ++i)
        y[i] = float(a.scalars[1] * x[i]);
      y[-before] = 1;  // a stray write before the start
    };
    const auto r = t.runner.measure(plan_of(scale_job("scale_under")), 0, 3);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    EXPECT_EQ(r.verification.status, "passed") << "y[-" << before << "]";  // its outputs are right
    EXPECT_EQ(r.verification.written_out_of_bounds, std::vector<std::string>{"y"});
    EXPECT_NE(r.verification.note.find("the kernel wrote before the start of y"), std::string::npos)
        << r.verification.note;
    EXPECT_EQ(r.verification.note.find("past the end"), std::string::npos) << r.verification.note;
    EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "out_of_bounds_write"), r.flags.end());
    EXPECT_EQ(r.fitness.combined_score, 0.0);

    const auto honest = t.runner.measure(plan_of(scale_job("scale")), 0, 3);
    EXPECT_TRUE(honest.verification.written_out_of_bounds.empty());
    EXPECT_TRUE(honest.flags.empty());
    EXPECT_GT(honest.fitness.combined_score, 0.0);
  }
}

// Writes on both sides of a buffer are named once in written_out_of_bounds, and the note says
// both; a write that only timed launches make (the module loaded for timing writes y[-2], on
// either buffer set) is found by the canaries checked after timing.
TEST(PointRunner, WritesOutsideABufferSayWhichSideAndWhen) {
  auto t = make_runner();
  t.fake->kernels["scale_around"] = [](const fake_backend::host_args& a) {
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    for (int i = 0; i < n; ++i)
      y[i] = float(a.scalars[1] * x[i]);
    y[-1] = 1;
    y[n] = 1;
  };
  const auto both = t.runner.measure(plan_of(scale_job("scale_around")), 0, 3);
  ASSERT_EQ(both.status, point_status::ok) << (both.error ? both.error->message : "");
  EXPECT_EQ(both.verification.written_out_of_bounds, std::vector<std::string>{"y"});
  EXPECT_NE(both.verification.note.find("wrote before the start of y and past the end of y"),
            std::string::npos)
      << both.verification.note;
  EXPECT_EQ(both.verification.note.find("timed launches"), std::string::npos)
      << "the canaries verification found changed are not the timed launches': "
      << both.verification.note;

  bool timing = false;
  t.fake->on_fresh_module = [&timing] { timing = true; };
  t.fake->kernels["scale_later"] = [&timing](const fake_backend::host_args& a) {
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    for (int i = 0; i < n; ++i)
      y[i] = float(a.scalars[1] * x[i]);
    if (timing) y[-2] = 1;
  };
  const auto later = t.runner.measure(plan_of(scale_job("scale_later")), 0, 3);
  ASSERT_EQ(later.status, point_status::ok) << (later.error ? later.error->message : "");
  EXPECT_EQ(later.verification.status, "passed");
  EXPECT_EQ(later.verification.written_out_of_bounds, std::vector<std::string>{"y"});
  EXPECT_NE(later.verification.note.find("timed launches wrote before the start of y"),
            std::string::npos)
      << later.verification.note;
  EXPECT_NE(std::find(later.flags.begin(), later.flags.end(), "out_of_bounds_write"),
            later.flags.end());
  EXPECT_EQ(later.fitness.combined_score, 0.0);
}

// Outputs so small that every element is within atol of zero: a kernel writing zeros passes the
// elementwise test but not the norm-relative one, and the reference is reported as low-signal
// (no score) until a smaller atol gives it meaning.
TEST(PointRunner, ALowSignalReferenceIsReportedAndZerosFailTheNormTest) {
  auto t = make_runner();
  t.fake->kernels["scale_zero"] = [](const fake_backend::host_args& a) {
    const int n = int(a.scalars[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    for (int i = 0; i < n; ++i)
      y[i] = 0;
  };
  auto tiny = [](const std::string& entry) {
    json j = scale_job(entry);
    j["kernel"]["args"][1]["value"] = 1e-6;  // y = 1e-6·x: every |y| below f32's atol of 1e-4
    return j;
  };
  const auto zeros = t.runner.measure(plan_of(tiny("scale_zero")), 0, 3);
  ASSERT_EQ(zeros.status, point_status::ok) << (zeros.error ? zeros.error->message : "");
  EXPECT_EQ(zeros.verification.status, "failed");
  EXPECT_DOUBLE_EQ(zeros.verification.norm_rel_err, 1.0);
  EXPECT_NE(zeros.verification.note.find("norm-relative error"), std::string::npos)
      << zeros.verification.note;
  EXPECT_NE(std::find(zeros.flags.begin(), zeros.flags.end(), "verification_failed"),
            zeros.flags.end());
  EXPECT_EQ(zeros.fitness.combined_score, 0.0);

  const auto honest = t.runner.measure(plan_of(tiny("scale")), 0, 3);
  EXPECT_EQ(honest.verification.status, "passed");
  EXPECT_GT(honest.verification.ref_near_zero, k_low_signal_share);
  EXPECT_NE(std::find(honest.flags.begin(), honest.flags.end(), "low_signal_reference"),
            honest.flags.end());
  EXPECT_EQ(honest.fitness.combined_score, 0.0);

  json strict = tiny("scale");
  strict["verify"]["atol"] = 1e-12;
  const auto meaningful = t.runner.measure(plan_of(strict), 0, 3);
  EXPECT_EQ(meaningful.verification.ref_near_zero, 0.0);
  EXPECT_TRUE(meaningful.flags.empty()) << meaningful.flags.front();
  EXPECT_GT(meaningful.fitness.combined_score, 0.0);
}

// f32 outputs carrying the rounding of f16 arithmetic are precision_mismatch even where a loose
// tolerance lets them pass.
TEST(PointRunner, HalfPrecisionResultsAreFlaggedEvenWhenTheyPass) {
  auto t = make_runner();
  t.fake->kernels["scale_f16"] = [](const fake_backend::host_args& a) {
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    for (int i = 0; i < n; ++i) {
      int e = 0;
      const double m = std::frexp(a.scalars[1] * x[i], &e);
      y[i] = float(std::ldexp(std::round(m * 2048) / 2048, e));  // 11 significant bits
    }
  };
  json j = scale_job("scale_f16");
  j["verify"]["rtol"] = 1e-2;
  const auto r = t.runner.measure(plan_of(j), 0, 3);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.verification.status, "passed");
  EXPECT_GT(r.verification.norm_rel_err, 1e-4);
  EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "precision_mismatch"), r.flags.end());
  EXPECT_EQ(r.fitness.combined_score, 0.0);

  j["kernel"]["entry"] = "scale";
  const auto honest = t.runner.measure(plan_of(j), 0, 3);
  EXPECT_TRUE(honest.flags.empty()) << honest.flags.front();
}

// The reference's copies of the outputs are poisoned before they are freed, so the answer does
// not linger in memory a later allocation may get; and timed launches use a module loaded afresh
// after verification.
TEST(PointRunner, TheReferencesAnswerIsPoisonedAndTimingUsesAFreshModule) {
  auto t = make_runner();
  (void)t.runner.measure(plan_of(scale_job("scale")), 0, 3);
  const auto& log = t.fake->log;
  std::size_t poisoned = 0;
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i].rfind("copy 2 ", 0) != 0) continue;
    const std::string copy = log[i].substr(log[i].rfind(' ') + 1);
    const std::size_t fill = position(log, "fill " + copy + " unwritten", i);
    EXPECT_LT(fill, position(log, "release " + copy, i));
    ++poisoned;
  }
  EXPECT_GE(poisoned, 3u);
  const std::size_t fresh = position(log, "compile_fresh scale");
  ASSERT_LT(fresh, log.size());
  // Local memory is scrubbed after the reference runs, before every verification launch, and
  // once more before the first launch from the fresh module; between the kernel's own timed
  // samples, which nothing else runs beside, it is not (nor before the last check, which a scrub
  // would tell apart).
  std::size_t scrubs_in_timing = 0;
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i] == "scrub" && i > fresh) ++scrubs_in_timing;
    if (log[i] != "sample candidate" || i > fresh) continue;
    ASSERT_GT(i, 0u);
    std::size_t j = i - 1;
    while (j > 0 && log[j] != "scrub" && log[j] != "sample candidate" &&
           log[j].rfind("launch", 0) != 0)
      --j;
    EXPECT_EQ(log[j], "scrub") << "before the verification launch at " << i;
  }
  EXPECT_EQ(scrubs_in_timing, 1u);
  const std::size_t first_launch = position(log, "launch scale", fresh);
  ASSERT_LT(first_launch, log.size());
  EXPECT_LT(position(log, "scrub", fresh), first_launch);
  // After the last verification launch (the last read of y before it), before the first sample
  // of timing proper.
  EXPECT_LT(position(log, "sample candidate"), fresh);
  EXPECT_LT(fresh, position(log, "sample candidate", fresh));
}

// The reference's answer is masked on the device before it is read back: the host never holds
// it in the clear, and the kernel, checked against it, passes all the same.
TEST(PointRunner, TheReferencesAnswerIsMaskedOnTheDeviceBeforeTheHostReadsIt) {
  auto t = make_runner();
  const auto r = t.runner.measure(plan_of(axpy_job("axpy", 1001, 2)), 0, 5);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.verification.status, "passed");
  const auto& log = t.fake->log;
  std::size_t masked = 0;
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i].rfind("copy 2 ", 0) != 0) continue;
    const std::string copy = log[i].substr(log[i].rfind(' ') + 1);
    const std::size_t reference = position(log, "launch axpy", i);
    const std::size_t xored = position(log, "xor_keystream " + copy, reference);
    const std::size_t read = position(log, "read " + copy, reference);
    ASSERT_LT(read, log.size());
    EXPECT_LT(xored, read);
    ++masked;
  }
  EXPECT_GE(masked, 2u);
  // The last answer, as the reference left it and as the host got it: whole words differ
  // (1001 f32 are 500 words and 4 bytes past them, masked on the host).
  ASSERT_FALSE(t.fake->plain_before_xor.empty());
  for (const auto& [h, plain] : t.fake->plain_before_xor) {
    ASSERT_EQ(plain.size(), 500u * 8);
    const auto& got = t.fake->first_read.at(h);
    ASSERT_EQ(got.size(), 1001u * 4);
    std::size_t same_words = 0;
    for (std::size_t w = 0; w < 500; ++w)
      same_words += std::memcmp(plain.data() + 8 * w, got.data() + 8 * w, 8) == 0 ? 1 : 0;
    EXPECT_LE(same_words, 1u);
  }
}

// Without the defences nothing is masked.
TEST(PointRunner, APlainRunnerReadsTheAnswerUnmasked) {
  auto f = std::make_unique<fake_backend>();
  f->kernels = make_runner().fake->kernels;
  fake_backend* fake = f.get();
  point_runner plain(std::move(f), false);
  const auto r = plain.measure(plan_of(axpy_job("axpy", 1001, 2)), 0, 5);
  EXPECT_EQ(r.verification.status, "passed");
  EXPECT_TRUE(std::none_of(fake->log.begin(), fake->log.end(),
                           [](const std::string& e) { return e.rfind("xor_keystream", 0) == 0; }));
  EXPECT_TRUE(fake->plain_before_xor.empty());
}

// An output the kernel reads before writing it (y = a·x + y) that has no init starts as the
// unwritten NaN: the reference answers NaN there, and a wrong kernel's NaN matches it. Such a
// reference is reported (low_signal_reference, which zeroes the score, and a note saying what to
// do); with an init the same wrong kernel fails, and the honest one passes unflagged.
TEST(PointRunner, AReferenceOfNaNFromAnOutputReadBeforeItIsWrittenIsReported) {
  auto t = make_runner();
  json read_first = axpy_job("axpy_wrong");
  read_first["kernel"]["args"][3].erase("init");
  const auto r = t.runner.measure(plan_of(read_first), 0, 3);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_GT(r.verification.ref_not_finite, k_low_signal_share);
  EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "low_signal_reference"), r.flags.end());
  EXPECT_NE(r.verification.note.find("NaN or infinite"), std::string::npos) << r.verification.note;
  EXPECT_EQ(r.fitness.combined_score, 0.0);

  const auto wrong = t.runner.measure(plan_of(axpy_job("axpy_wrong")), 0, 3);
  EXPECT_EQ(wrong.verification.status, "failed");
  const auto honest = t.runner.measure(plan_of(axpy_job("axpy")), 0, 3);
  EXPECT_EQ(honest.verification.status, "passed");
  EXPECT_EQ(honest.verification.ref_not_finite, 0.0);
  EXPECT_TRUE(honest.flags.empty()) << honest.flags.front();
}

TEST(PointRunner, TimedLaunchesAlternateTwoBufferSetsWithFreshInputs) {
  auto t = make_runner();
  std::vector<std::pair<void*, float>> seen;  // output address and first input, per launch
  t.fake->kernels["scale_seen"] = [&seen](const fake_backend::host_args& a) {
    seen.emplace_back(a.buffers[1], static_cast<float*>(a.buffers[0])[0]);
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    for (int i = 0; i < n; ++i)
      y[i] = float(a.scalars[1] * x[i]);
  };
  t.fake->kernel_time_us["scale_seen"] = 40;  // one launch per sample
  const auto r = t.runner.measure(plan_of(scale_job("scale_seen")), 0, 9);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_TRUE(r.flags.empty());
  EXPECT_EQ(r.verification.timed_wrong, 0u);
  EXPECT_GE(r.verification.timed_checks, 1);
  ASSERT_GT(seen.size(), 10u);
  std::set<void*> addresses;
  std::set<float> inputs;
  for (std::size_t i = 3; i < seen.size(); ++i) {  // after the three verification launches
    addresses.insert(seen[i].first);
    inputs.insert(seen[i].second);
  }
  EXPECT_EQ(addresses.size(), 2u);
  EXPECT_GT(inputs.size(), seen.size() / 2) << "inputs are refreshed before every sample";
  EXPECT_EQ(t.fake->live_buffers(), 0u);
}

// A short kernel is timed in batches of launches on one set of inputs; one that does its work
// on the first launch of a batch only (its outputs stay right) is far faster per launch than
// alone, which is flagged.
TEST(PointRunner, AKernelWorkingOncePerBatchIsFasterThanVerification) {
  auto t = make_runner();
  t.fake->kernels["scale_once"] = t.fake->kernels["scale"];
  t.fake->kernel_time_us["scale_once"] = 8;
  t.fake->launch_overhead_us = 0;
  auto honest = scale_job("scale_once");
  honest["timing"]["l2"] = "hot";
  const auto h = t.runner.measure(plan_of(honest), 0, 2);
  ASSERT_EQ(h.status, point_status::ok) << (h.error ? h.error->message : "");
  EXPECT_GT(h.batch, 1);
  EXPECT_TRUE(h.flags.empty()) << h.flags.size();

  // From now on every launch after the first of a sample takes no time.
  t.fake->kernel_time_us["scale_once"] = 0.01;
  t.fake->time_first_launch_only_us = 8;
  const auto c = t.runner.measure(plan_of(honest), 0, 2);
  ASSERT_EQ(c.status, point_status::ok);
  EXPECT_GT(c.batch, 1);
  EXPECT_NE(std::find(c.flags.begin(), c.flags.end(), "faster_than_verification"), c.flags.end());
}

// A kernel that returns at once where its output already holds an answer (not the unwritten
// NaN) would work on the first launch of a batch only if the batch's launches shared one set of
// buffers, and time several times faster per launch with its outputs right. Each launch of a
// batch has a set of its own, with inputs of its own and poisoned outputs: it works every time.
TEST(PointRunner, EachLaunchOfABatchHasBuffersOfItsOwn) {
  auto t = make_runner();
  fake_backend* fake = t.fake;
  std::set<void*> outputs;
  fake->kernels["scale_unless_written"] =
      [fake, &outputs, scale = fake->kernels["scale"]](const fake_backend::host_args& a) {
        outputs.insert(a.buffers[1]);
        if (!std::isnan(static_cast<float*>(a.buffers[1])[0])) {
          fake->launch_skipped = true;
          return;
        }
        scale(a);
      };
  fake->kernel_time_us["scale"] = 6;
  fake->kernel_time_us["scale_unless_written"] = 6;
  const auto honest = t.runner.measure(plan_of(scale_job("scale")), 0, 2);
  ASSERT_EQ(honest.status, point_status::ok) << (honest.error ? honest.error->message : "");
  ASSERT_GT(honest.batch, 2);
  const auto skipping = t.runner.measure(plan_of(scale_job("scale_unless_written")), 0, 2);
  ASSERT_EQ(skipping.status, point_status::ok);
  EXPECT_EQ(skipping.batch, honest.batch);
  EXPECT_NEAR(skipping.time_us->median, honest.time_us->median, 1e-9);
  EXPECT_EQ(skipping.verification.status, "passed");
  EXPECT_TRUE(skipping.flags.empty());
  EXPECT_GE(outputs.size(), std::size_t(skipping.batch));
  EXPECT_EQ(fake->live_buffers(), 0u);
}

// A kernel that learns the two sets its first timed launches use (the warm-up's and the single
// samples') and works only on them would skip the other launches of every batch: a drawn batch
// is checked on a launch drawn among its own, and the last check looks at every launch.
TEST(PointRunner, AKernelWorkingOnlyOnTheSetsItLearnedFirstIsCaughtInItsBatches) {
  auto t = make_runner();
  fake_backend* fake = t.fake;
  std::set<void*> learned;  // the outputs it works on, since the fresh module
  bool timing = false;
  fake->on_fresh_module = [&] {
    learned.clear();
    timing = true;
  };
  fake->kernels["scale_learned"] =
      [&, fake, scale = fake->kernels["scale"]](const fake_backend::host_args& a) {
        if (timing && learned.size() < 2) learned.insert(a.buffers[1]);
        if (timing && !learned.count(a.buffers[1])) {
          fake->launch_skipped = true;
          return;
        }
        scale(a);
      };
  fake->kernel_time_us["scale_learned"] = 6;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    timing = false;
    const auto r = t.runner.measure(plan_of(scale_job("scale_learned")), 0, seed);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    ASSERT_GT(r.batch, 2) << "seed " << seed;
    EXPECT_EQ(r.verification.status, "passed") << "seed " << seed;
    EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "timed_output_mismatch"), r.flags.end())
        << "seed " << seed << ": " << r.verification.note;
    EXPECT_EQ(r.fitness.combined_score, 0.0) << "seed " << seed;
  }
}

// A kernel that learns where the sets of a batch lie and does the whole batch's work at the
// first launch that finds fresh inputs, the others finding their outputs written (one large
// launch for many small ones): every answer right, every check passed, and a time per launch it
// did not earn. With `reads_clock` it does so only where nothing but a sample's preparation
// (fills, a scrub) came since its last launch and the queue was held just before it (a
// sample's first launch waits for the host to enqueue the batch), as a kernel that reads a
// clock can tell from the time between its launches: after a check, or any other work, or
// launched at once after its fills, it runs honestly. Installed as kernel "scale_fused"
// (scale_job's kernel).
struct fused_cheat {
  struct known_set {
    float* x;
    float* y;
    float seen;  // x[0] when it last computed y
  };
  std::map<float*, known_set> known;  // by output, since the fresh module
  bool timing = false;                // since the fresh module: verification is done
  std::size_t log_seen = 0;           // the backend's log at its last launch
  int fused = 0;                      // launches that did others' work

  // A point's first module starts without any of it.
  void fresh_point() {
    known.clear();
    timing = false;
    fused = 0;
  }
};

std::shared_ptr<fused_cheat> install_fused_cheat(fake_backend* fake, bool reads_clock) {
  auto c = std::make_shared<fused_cheat>();
  fake->on_fresh_module = [c] {
    c->known.clear();
    c->timing = true;
  };
  fake->kernels["scale_fused"] = [c, fake, reads_clock](const fake_backend::host_args& a) {
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    auto compute = [&](fused_cheat::known_set& k) {
      for (int i = 0; i < n; ++i)
        k.y[i] = float(a.scalars[1] * k.x[i]);
      k.seen = k.x[0];
    };
    bool quiet = true;
    for (std::size_t e = c->log_seen; e < fake->log.size(); ++e) {
      const std::string& line = fake->log[e];
      quiet = quiet &&
              (line.rfind("fill ", 0) == 0 || line == "scrub" || line == "flush" ||
               line == "synchronize" || line == "sample candidate" || line == "launch scale_fused");
    }
    const bool held = !fake->log.empty() && fake->log.back() == "sample candidate";
    c->log_seen = fake->log.size();
    if (!c->timing || (reads_clock && (!quiet || !held))) {
      fused_cheat::known_set own{x, y, 0};
      compute(own);
      c->known[y] = own;
      return;
    }
    const auto it = c->known.find(y);
    if (it != c->known.end() && it->second.x == x && it->second.seen == x[0]) {
      fake->launch_skipped = true;  // an earlier launch of this sample did its work
      return;
    }
    c->known[y] = {x, y, 0};
    for (auto& [out, k] : c->known) {
      if (k.seen == k.x[0]) continue;
      compute(k);
      if (out != y) ++c->fused;
    }
  };
  fake->kernel_time_us["scale_fused"] = 6;
  return c;
}

// The probes, drawn among the batched samples and before the last check, launch such a kernel
// alone on a batch's first set and find the outputs of others written. The honest kernel is not
// flagged.
TEST(PointRunner, AKernelDoingItsBatchsWorkInOneLaunchIsCaught) {
  auto t = make_runner();
  const auto cheat = install_fused_cheat(t.fake, false);
  t.fake->kernel_time_us["scale"] = 6;
  const auto honest = t.runner.measure(plan_of(scale_job("scale")), 0, 3);
  ASSERT_EQ(honest.status, point_status::ok) << (honest.error ? honest.error->message : "");
  ASSERT_GT(honest.batch, 2);
  EXPECT_TRUE(honest.flags.empty()) << honest.verification.note;
  EXPECT_GE(honest.verification.batch_probes, 1);  // the one before the last check at least
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    cheat->fresh_point();
    const auto r = t.runner.measure(plan_of(scale_job("scale_fused")), 0, seed);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    ASSERT_GT(r.batch, 2) << "seed " << seed;
    EXPECT_EQ(r.verification.status, "passed") << "seed " << seed;
    EXPECT_EQ(r.verification.timed_failed, 0) << "seed " << seed << ": " << r.verification.note;
    EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "out_of_bounds_write"), r.flags.end())
        << "seed " << seed << ": " << r.verification.note;
    EXPECT_EQ(r.verification.written_out_of_bounds, std::vector<std::string>{"y"});
    EXPECT_NE(r.verification.note.find("other launches' buffers (y)"), std::string::npos)
        << r.verification.note;
    EXPECT_EQ(r.fitness.combined_score, 0.0) << "seed " << seed;
  }
}

// The same kernel, fusing only where its last launch was followed by nothing but a sample's
// fills and scrub and the queue's hold (what a clock would show it): a probe preceded by
// anything more (the last check's comparison of every set, the probe's own reads), or launched
// without a hold, would find it honest. The probes come where a sample's fills come, are held
// as a sample is and read what they watch only after the launch, so it fuses at them as at any
// sample's first launch, and is caught.
TEST(PointRunner, AKernelThatWatchesTheTimeBetweenItsLaunchesCannotTellAProbe) {
  auto t = make_runner();
  const auto cheat = install_fused_cheat(t.fake, true);
  json job = scale_job("scale_fused");
  job["timing"]["min_samples"] = 200;
  job["timing"]["max_time_ms"] = 5000;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    cheat->fresh_point();
    const auto r = t.runner.measure(plan_of(job), 0, seed);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    ASSERT_GT(r.batch, 2) << "seed " << seed;
    ASSERT_GT(cheat->fused, 0) << "seed " << seed;  // it did fuse its batches' work
    EXPECT_EQ(r.verification.status, "passed") << "seed " << seed;
    EXPECT_EQ(r.verification.timed_failed, 0) << "seed " << seed << ": " << r.verification.note;
    EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "out_of_bounds_write"), r.flags.end())
        << "seed " << seed << ": " << r.verification.note;
    EXPECT_EQ(r.fitness.combined_score, 0.0) << "seed " << seed;
  }
}

// A sample's first launch waits for the host to enqueue the whole batch behind the queue's
// hold; a probe's launch, alone, waits as long, so that the time a kernel finds between its
// fills and its start does not tell it a probe. Here each launch takes the host 300 µs to
// enqueue (the host function's own time), the first probe's hold coming from its own launch's
// enqueueing and later ones' from the samples'.
TEST(PointRunner, AProbeHoldsTheQueueAsLongAsASamplesBatch) {
  auto t = make_runner();
  t.fake->kernels["scale_slow"] = [scale = t.fake->kernels["scale"]](const auto& a) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(300);
    scale(a);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  t.fake->kernel_time_us["scale_slow"] = 6;
  const auto r = t.runner.measure(plan_of(scale_job("scale_slow")), 0, 5);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  ASSERT_GT(r.batch, 2);
  EXPECT_TRUE(r.flags.empty()) << r.verification.note;
  ASSERT_GE(r.verification.batch_probes, 2);
  // The probes: the candidate's one-launch samples after its first batched one, and the one
  // just before it where the first batched sample was probed (the batch's decision, whose
  // samples hold one launch, comes before).
  std::vector<fake_backend::timed_call> candidate;
  for (const auto& s : t.fake->samples)
    if (s.role == kernel_role::candidate) candidate.push_back(s);
  std::size_t first = 0;
  while (first < candidate.size() && candidate[first].launches == 1)
    ++first;
  std::vector<double> batched, probes;
  for (std::size_t i = first; i < candidate.size(); ++i)
    (candidate[i].launches > 1 ? batched : probes).push_back(candidate[i].enqueue_us);
  ASSERT_FALSE(batched.empty());
  if (probes.size() + 1 == std::size_t(r.verification.batch_probes))
    probes.push_back(candidate[first - 1].enqueue_us);
  ASSERT_EQ(probes.size(), std::size_t(r.verification.batch_probes));
  // Against the shortest sample's hold: on a busy machine the host is preempted in its 300 µs
  // and some holds run long, the probes' as the samples'; none runs short.
  const double shortest = *std::min_element(batched.begin(), batched.end());
  EXPECT_GT(shortest, 300.0 * double(r.batch - 1));
  for (const double p : probes)
    EXPECT_GT(p, 0.75 * shortest) << "a probe held " << p << " µs, the shortest sample "
                                  << shortest;
}

// A kernel that leaves the other sets' answers in their scratch buffers at a sample's first
// launch, for their own launches to copy (a copy where a GEMM would compute): its outputs are
// right and written by their own launches, but the probe finds another set's scratch written.
TEST(PointRunner, AKernelLeavingOtherLaunchesAnswersInTheirScratchIsCaught) {
  auto t = make_runner();
  struct known_set {
    float* x;
    float* ws;
    float stashed;  // x[0] when it left the answer in ws
  };
  std::map<float*, known_set> known;  // by output
  bool timing = false;
  t.fake->on_fresh_module = [&] {
    known.clear();
    timing = true;
  };
  t.fake->kernels["scale_stash"] = [&, fake = t.fake](const fake_backend::host_args& a) {
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    auto* ws = static_cast<float*>(a.buffers[2]);
    const auto it = known.find(y);
    if (timing && it != known.end() && it->second.x == x && it->second.stashed == x[0]) {
      std::memcpy(y, ws, std::size_t(n) * sizeof(float));
      fake->launch_skipped = true;
      return;
    }
    for (int i = 0; i < n; ++i)
      y[i] = float(a.scalars[1] * x[i]);
    if (!timing) return;
    known[y] = {x, ws, 0};
    for (auto& [out, k] : known) {
      if (out == y || k.stashed == k.x[0]) continue;
      for (int i = 0; i < n; ++i)
        k.ws[i] = float(a.scalars[1] * k.x[i]);
      k.stashed = k.x[0];
    }
  };
  t.fake->kernel_time_us["scale_stash"] = 6;
  json j = scale_job("scale_stash");
  j["kernel"]["args"].push_back(
      {{"name", "ws"}, {"type", "f32*"}, {"count", "N"}, {"scratch", true}});
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    known.clear();
    timing = false;
    const auto r = t.runner.measure(plan_of(j), 0, seed);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    ASSERT_GT(r.batch, 2) << "seed " << seed;
    EXPECT_EQ(r.verification.status, "passed") << "seed " << seed;
    EXPECT_EQ(r.verification.timed_failed, 0) << "seed " << seed << ": " << r.verification.note;
    EXPECT_EQ(r.verification.written_out_of_bounds, std::vector<std::string>{"ws"})
        << "seed " << seed << ": " << r.verification.note;
    EXPECT_EQ(r.fitness.combined_score, 0.0) << "seed " << seed;
  }
}

// A kernel that computes the other sets' answers at a sample's first launch into memory of its
// own (here the host's, standing for its module's globals) and has each later launch whose
// inputs are the ones it computed from copy its answer out: nothing a check or a probe reads
// differs from an honest kernel's. The samples timed launch by launch find the first launch
// taking the others' work. The honest kernel's launches are even, and it keeps its score.
TEST(PointRunner, AKernelKeepingOtherLaunchesAnswersInItsOwnMemoryIsCaught) {
  auto t = make_runner();
  struct stashed {
    float* x;
    float seen;  // x[0] when its answer was stashed
    std::vector<float> answer;
  };
  std::map<float*, stashed> known;  // by output
  bool timing = false;
  t.fake->on_fresh_module = [&] {
    known.clear();
    timing = true;
  };
  int fused = 0;
  t.fake->kernels["scale_kept"] = [&, fake = t.fake](const fake_backend::host_args& a) {
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    const auto it = known.find(y);
    if (timing && it != known.end() && it->second.x == x && it->second.seen == x[0]) {
      std::copy(it->second.answer.begin(), it->second.answer.end(), y);
      fake->launch_work = 0.2;  // a copy
      return;
    }
    for (int i = 0; i < n; ++i)
      y[i] = float(a.scalars[1] * x[i]);
    if (!timing) return;
    known[y] = {x, x[0] + 1, {}};  // its answer is in y
    for (auto& [out, k] : known) {
      if (out == y || k.seen == k.x[0]) continue;
      k.answer.resize(std::size_t(n));
      for (int i = 0; i < n; ++i)
        k.answer[std::size_t(i)] = float(a.scalars[1] * k.x[i]);
      k.seen = k.x[0];
      fake->launch_work += 0.25;  // side by side with its own, on units it leaves idle
      ++fused;
    }
  };
  t.fake->kernel_time_us["scale_kept"] = 6;
  t.fake->kernel_time_us["scale"] = 6;
  const auto honest = t.runner.measure(plan_of(scale_job("scale")), 0, 3);
  ASSERT_EQ(honest.status, point_status::ok) << (honest.error ? honest.error->message : "");
  ASSERT_GT(honest.batch, 2);
  EXPECT_TRUE(honest.flags.empty()) << honest.verification.note;
  EXPECT_GE(honest.verification.split_samples, k_min_split_samples);
  ASSERT_TRUE(honest.verification.launch_spread);
  EXPECT_LT(*honest.verification.launch_spread, 1.01);
  EXPECT_GT(honest.fitness.combined_score, 0);
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    known.clear();
    timing = false;
    fused = 0;
    const auto r = t.runner.measure(plan_of(scale_job("scale_kept")), 0, seed);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    ASSERT_GT(r.batch, 2) << "seed " << seed;
    ASSERT_GT(fused, 0) << "seed " << seed;
    EXPECT_EQ(r.verification.status, "passed") << "seed " << seed;
    EXPECT_EQ(r.verification.timed_failed, 0) << "seed " << seed << ": " << r.verification.note;
    EXPECT_TRUE(r.verification.written_out_of_bounds.empty()) << r.verification.note;
    EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "uneven_launches"), r.flags.end())
        << "seed " << seed << ": " << r.verification.note;
    EXPECT_NE(r.verification.note.find("timed launch by launch"), std::string::npos)
        << r.verification.note;
    EXPECT_EQ(r.fitness.combined_score, 0.0) << "seed " << seed;
  }
}

// A kernel that does nothing at a sample's launches but its last, which does the whole batch's
// work: the probe, whose lone launch on the batch's first set writes nothing of another's, sees
// no harm, and every check after the sample finds every output right. Its last launch takes
// the batch's time. It knows a sample's launches as a kernel reading a clock would (each follows
// the one before with nothing between), and a batch's length from the sample before.
TEST(PointRunner, AKernelDoingItsBatchsWorkAtItsLastLaunchIsCaught) {
  auto t = make_runner();
  struct pending_set {
    float* x;
    float* y;
  };
  std::vector<pending_set> pending;  // this sample's launches so far
  std::size_t batch = 0, log_seen = 0;
  int skipped = 0;
  bool timing = false;
  t.fake->on_fresh_module = [&] { timing = true; };
  t.fake->kernels["scale_last"] = [&, fake = t.fake](const fake_backend::host_args& a) {
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    auto compute = [&](const pending_set& s) {
      for (int i = 0; i < n; ++i)
        s.y[i] = float(a.scalars[1] * s.x[i]);
    };
    // The log since its last launch: a sample's first launch follows "sample candidate", a later
    // one its own launch; anything else (fills, hashes, a comparison) is a pause.
    const std::string before = fake->log.empty() ? "" : fake->log.back();
    const bool first = before == "sample candidate";
    const bool next = before == "launch scale_last" && fake->log.size() == log_seen + 1;
    log_seen = fake->log.size();
    if (!timing || (!first && !next)) {
      if (!pending.empty()) batch = pending.size();
      pending.clear();
      compute({x, y});
      return;
    }
    if (first) {
      if (!pending.empty()) batch = pending.size();
      pending.clear();
    }
    pending.push_back({x, y});
    if (pending.size() < batch) {
      fake->launch_skipped = true;
      ++skipped;
      return;
    }
    for (const auto& s : pending)
      compute(s);
    fake->launch_work = 1 + 0.25 * double(pending.size() - 1);  // side by side
  };
  t.fake->kernel_time_us["scale_last"] = 6;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    pending.clear();
    batch = 0;
    skipped = 0;
    timing = false;
    const auto r = t.runner.measure(plan_of(scale_job("scale_last")), 0, seed);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    ASSERT_GT(r.batch, 2) << "seed " << seed;
    ASSERT_GT(skipped, 0) << "seed " << seed;  // it did leave its work to the last launch
    EXPECT_EQ(r.verification.status, "passed") << "seed " << seed;
    // (A check may catch it too, where the batch it learned from the sample before is not the
    // sample's: not what this test is about.)
    EXPECT_TRUE(r.verification.written_out_of_bounds.empty()) << r.verification.note;
    EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "uneven_launches"), r.flags.end())
        << "seed " << seed << ": " << r.verification.note;
    EXPECT_EQ(r.fitness.combined_score, 0.0) << "seed " << seed;
  }
}

// What a kernel doing its batch's work at a place it draws did in a point (drawn_place_cheat).
struct drawn_place_counts {
  int fused = 0;              // launches that did others' work
  int places_past_first = 0;  // samples whose drawn place was not the first
};

// Installs "scale_drawn" on `t`'s backend: a kernel that does the work of its batch's launches
// at one of them, at a place it draws from its inputs sample by sample, and keeps the answers of
// those after it for them to copy; those before it do their own work, or with `leave_before`
// leave it to the one at the place, which does it. Every answer is right by the sample's end.
// It tells a sample's later launches (each follows the one before) from its first, and cannot
// tell a probe from a sample (here: both follow fills); it learns the batch from samples.
void drawn_place_cheat(runner_fixture& t, bool leave_before, drawn_place_counts& counts) {
  struct state {
    std::vector<float*> left;  // the outputs of this sample's launches left so far
    std::size_t batch = 0, log_seen = 0, launch = 0, place = 0;
    bool timing = false, sampled = false;
  };
  auto st = std::make_shared<state>();
  t.fake->on_fresh_module = [st] { st->timing = true; };
  t.fake->kernels["scale_drawn"] = [st, &counts, leave_before,
                                    fake = t.fake](const fake_backend::host_args& a) {
    const int n = int(a.scalars[0]);
    auto* x = static_cast<float*>(a.buffers[0]);
    auto* y = static_cast<float*>(a.buffers[1]);
    const std::string before = fake->log.empty() ? "" : fake->log.back();
    const bool first =
        before == "sample candidate" || before.rfind("fill ", 0) == 0 || before == "scrub";
    const bool next = before == "launch scale_drawn" && fake->log.size() == st->log_seen + 1;
    st->log_seen = fake->log.size();
    for (int i = 0; i < n; ++i)  // every answer right by the sample's end (here, at once)
      y[i] = float(a.scalars[1] * x[i]);
    if (!st->timing || (!first && !next)) return;
    if (first) {
      if (st->sampled) st->batch = std::max(st->batch, st->launch);
      st->sampled = before == "sample candidate";
      st->launch = 0;
      st->left.clear();
      std::uint32_t bits = 0;
      std::memcpy(&bits, x, sizeof bits);
      st->place = st->batch > 1 ? std::size_t(mix64(bits) % st->batch) : 0;
      counts.places_past_first += st->place > 0;
    }
    const std::size_t at = st->launch++;
    if (at < st->place) {
      if (!leave_before) return;  // its own work
      st->left.push_back(y);      // left to the launch at the place: nothing written yet
      std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
      fake->launch_skipped = true;
    } else if (at == st->place) {  // its own, those left to it, and those after it kept
      st->left.clear();
      fake->launch_work = 1 + 0.25 * double(st->batch - 1 - (leave_before ? 0 : at));
      ++counts.fused;
    } else {
      fake->launch_skipped = true;  // a copy of what the launch at the place kept
    }
  };
  t.fake->kernel_time_us["scale_drawn"] = 6;
}

// Points of scale_drawn: samples whose place varies do not converge, so a point takes its most.
json drawn_place_job() {
  json j = scale_job("scale_drawn");
  j["timing"]["max_samples"] = 2000;
  return j;
}

// With the launches before the drawn place leaving their work to it, in most samples no one place
// of the batch takes longer, so the samples timed launch by launch show nothing, and every check
// after a sample finds every output right. The probe's launch, alone, leaves its work to a
// launch that never comes: its check finds its outputs unwritten.
TEST(PointRunner, AKernelLeavingItsWorkToALaterLaunchItDrawsIsCaughtAlone) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    auto t = make_runner();
    drawn_place_counts counts;
    drawn_place_cheat(t, true, counts);
    const auto r = t.runner.measure(plan_of(drawn_place_job()), 0, seed);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    ASSERT_GT(r.batch, 2) << "seed " << seed;
    ASSERT_GT(counts.fused, 0) << "seed " << seed;
    ASSERT_GT(counts.places_past_first, 0) << "seed " << seed;
    ASSERT_GE(r.verification.batch_probes, 3) << "seed " << seed;
    EXPECT_EQ(r.verification.status, "passed") << "seed " << seed;
    EXPECT_TRUE(r.verification.written_out_of_bounds.empty()) << r.verification.note;
    EXPECT_FALSE(uneven_launches(r.verification)) << "seed " << seed << ": " << r.verification.note;
    EXPECT_GT(r.verification.timed_failed, 0) << "seed " << seed << ": " << r.verification.note;
    EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "timed_output_mismatch"), r.flags.end())
        << "seed " << seed << ": " << r.verification.note;
    EXPECT_EQ(r.fitness.combined_score, 0.0) << "seed " << seed;
  }
}

// With the launches before the drawn place doing their own work, the probe's launch does its
// own; but the batch's first launch then takes a launch's time at least in every sample, where
// the lower quartile of most samples is a copy: the samples timed launch by launch catch it at
// the first place.
TEST(PointRunner, AKernelKeepingItsBatchsAnswersAtAPlaceItDrawsIsCaught) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    auto t = make_runner();
    drawn_place_counts counts;
    drawn_place_cheat(t, false, counts);
    const auto r = t.runner.measure(plan_of(drawn_place_job()), 0, seed);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    ASSERT_GT(r.batch, 2) << "seed " << seed;
    ASSERT_GT(counts.fused, 0) << "seed " << seed;
    ASSERT_GT(counts.places_past_first, 0) << "seed " << seed;
    EXPECT_EQ(r.verification.status, "passed") << "seed " << seed;
    EXPECT_EQ(r.verification.timed_failed, 0) << "seed " << seed << ": " << r.verification.note;
    EXPECT_TRUE(r.verification.written_out_of_bounds.empty()) << r.verification.note;
    EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "uneven_launches"), r.flags.end())
        << "seed " << seed << ": " << r.verification.note;
    EXPECT_EQ(r.fitness.combined_score, 0.0) << "seed " << seed;
  }
}

// A sample's fixed cost is its first launch's (the events around it, the start after the hold):
// taken from that launch before the launches are compared, so that an honest short kernel whose
// first launch it doubles is not uneven.
TEST(PointRunner, ASamplesFixedCostDoesNotMakeItsFirstLaunchUneven) {
  auto t = make_runner();
  t.fake->kernel_time_us["scale"] = 0.5;
  t.fake->sample_fixed_us = 6;  // a first launch of 8.5 µs, the others 2.5: a spread of 3.4
  const auto r = t.runner.measure(plan_of(scale_job("scale")), 0, 5);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  ASSERT_GT(r.batch, 2);
  ASSERT_TRUE(r.verification.launch_spread);
  // The first launch keeps half its time at least (a fixed cost measured too high cannot make it
  // the shortest): 4.25 µs.
  EXPECT_NEAR(*r.verification.launch_spread, 1.7, 1e-9);
  EXPECT_TRUE(r.flags.empty()) << r.verification.note;
}

// Where marking a launch takes time of its own (an event recorded between two launches on a
// GPU), a sample timed launch by launch is not one of the kernel's samples: its time would read
// slower than the kernel is.
TEST(PointRunner, SamplesTimedLaunchByLaunchWithMarksThatCostAreNotTimed) {
  auto t = make_runner();
  t.fake->kernel_time_us["scale"] = 6;
  t.fake->free_marks = false;
  t.fake->mark_us = 100;
  const auto r = t.runner.measure(plan_of(scale_job("scale")), 0, 3);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  ASSERT_GT(r.batch, 2);
  EXPECT_GE(r.verification.split_samples, k_min_split_samples);
  ASSERT_TRUE(r.time_us.has_value());
  EXPECT_LT(r.time_us->max, 50) << "a sample with its marks' time";
  EXPECT_TRUE(r.flags.empty()) << r.verification.note;
}

// Which timed samples are checked comes from a key drawn for each point, not from the seed: the
// same job with the same seed (which a framework may fix, so that its inputs repeat) checks other
// samples each time it runs, and no schedule of checks holds from run to run.
TEST(PointRunner, TheSamplesCheckedDifferFromRunToRunWithTheSameSeed) {
  auto t = make_runner();
  // For each timed sample of the candidate, whether anything was hashed, read, copied or
  // screened before the next: whether it was checked.
  auto checked = [](const std::vector<std::string>& log) {
    std::vector<bool> out;
    for (const auto& line : log) {
      if (line == "sample candidate") {
        out.push_back(false);
      } else if (!out.empty() && (line.rfind("hash ", 0) == 0 || line.rfind("read ", 0) == 0 ||
                                  line.rfind("copy ", 0) == 0 || line.rfind("screen ", 0) == 0)) {
        out.back() = true;
      }
    }
    return out;
  };
  std::vector<std::vector<bool>> runs;
  std::size_t samples = SIZE_MAX;
  for (int run = 0; run < 4; ++run) {
    t.fake->log.clear();
    const auto r = t.runner.measure(plan_of(axpy_job("axpy")), 0, 7);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    EXPECT_TRUE(r.flags.empty()) << r.verification.note;
    runs.push_back(checked(t.fake->log));
    samples = std::min(samples, runs.back().size());
  }
  ASSERT_GE(samples, 20u);
  std::set<std::vector<bool>> schedules;
  for (auto& run : runs) {
    run.resize(samples);
    schedules.insert(run);
  }
  EXPECT_GT(schedules.size(), 1u);
}

// The sets of a batch fit in the device's caches, so that a hot batch stays hot.
TEST(PointRunner, ABatchHasNoMoreLaunchesThanItsSetsFitHalfTheCaches) {
  auto t = make_runner();
  t.fake->kernel_time_us["scale"] = 1;     // 3 µs with the launch overhead: a batch of 17
  t.fake->info().l2_bytes = 2 * 5 * 8000;  // half of it: five sets of 1000 floats in x and y
  const auto r = t.runner.measure(plan_of(scale_job("scale")), 0, 2);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.batch, 5);
  EXPECT_TRUE(r.flags.empty());
}

// A CPU device's driver reports its shared L3 as its cache, but a lone set launched back to back
// stays in the L2s of its cores: a batch's sets fit half of those where one set fits in them, and
// half of L3 where it does not.
TEST(PointRunner, ACpuDevicesBatchHasItsSetsInHalfItsCoresCaches) {
  auto batch_of = [](std::uint64_t core_caches) {
    auto t = make_runner();
    t.fake->kernel_time_us["scale"] = 1;  // a batch of 17 where nothing holds it
    t.fake->info().type = "cpu";
    t.fake->info().l2_bytes = 2 * 16 * 8000;  // half of it: sixteen sets of x and y
    t.fake->info().core_caches_bytes = core_caches;
    const auto r = t.runner.measure(plan_of(scale_job("scale")), 0, 2);
    EXPECT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    return r.batch;
  };
  EXPECT_EQ(batch_of(2 * 3 * 8000), 3);
  EXPECT_EQ(batch_of(0), 16);     // a GPU's
  EXPECT_EQ(batch_of(6000), 16);  // smaller than a set
  EXPECT_EQ(batch_of(8000), 1);   // one set, not two halves
}

// The benchmark's primed runner begins each timed sample with a launch of the kernel on the set
// the last sample timed, before the sample's fresh inputs are written (and before a cold flush),
// so that it sees none of them; the runner does no such launch by default.
TEST(PointRunner, APrimedSampleBeginsWithALaunchBeforeItsFreshInputs) {
  for (const bool primed : {false, true}) {
    auto t = make_runner();
    t.runner.prime_each_sample(primed);
    json j = axpy_job("axpy");
    j["timing"]["l2"] = "cold";  // one launch a sample
    const auto r = t.runner.measure(plan_of(j), 0, 1);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    EXPECT_TRUE(r.flags.empty()) << primed;
    const auto& log = t.fake->log;
    // The timed samples: those of the module loaded afresh after verification.
    const auto fresh = std::find(log.begin(), log.end(), "compile_fresh axpy");
    ASSERT_NE(fresh, log.end());
    std::vector<std::size_t> samples;
    for (auto i = std::size_t(fresh - log.begin()); i < log.size(); ++i)
      if (log[i] == "sample candidate") samples.push_back(i);
    ASSERT_GT(samples.size(), 10u);
    // Before each sample, its fills (and the flush), and before those (primed) a launch; where
    // the sample before was not checked, that launch follows the sample's own.
    std::size_t after_launch = 0, after_two = 0;
    for (std::size_t s = 1; s < samples.size(); ++s) {
      std::size_t i = samples[s] - 1;
      while (log[i] == "flush" || log[i].rfind("fill ", 0) == 0)
        --i;
      ASSERT_LT(i, samples[s] - 1) << "sample " << s << " has no fills";
      after_launch += log[i] == "launch axpy";
      after_two += log[i] == "launch axpy" && log[i - 1] == "launch axpy";
    }
    if (primed) {
      EXPECT_EQ(after_launch, samples.size() - 1);
      EXPECT_GT(after_two, samples.size() / 2);
    } else {
      EXPECT_EQ(after_two, 0u);
    }
  }
}

// A bandwidth ceiling measured low is measured again over a point's working set before the point
// is flagged, and what that found is kept for the next points of the same bytes: a sweep's or a
// task's submissions' points of one size pay the triad once.
TEST(PointRunner, ABandwidthMeasuredAgainIsKeptForThePointsOfTheSameWorkingSet) {
  auto t = make_runner();
  measured_roofline low;
  low.peaks.bandwidth_gbps = 0.01;  // 12,000 bytes in 42 µs beat it a hundredfold
  low.method = "set low by the test";
  t.runner.set_roofline(low);
  json j = axpy_job("axpy");
  j["timing"]["l2"] = "cold";
  auto triads = [&] { return std::count(t.fake->log.begin(), t.fake->log.end(), "stream"); };
  const auto first = t.runner.measure(plan_of(j), 0, 1);
  ASSERT_EQ(first.status, point_status::ok) << (first.error ? first.error->message : "");
  EXPECT_TRUE(first.flags.empty());
  const auto measured = triads();
  EXPECT_GT(measured, 0);
  const auto second = t.runner.measure(plan_of(j), 0, 2);
  ASSERT_EQ(second.status, point_status::ok);
  EXPECT_TRUE(second.flags.empty());
  EXPECT_EQ(triads(), measured);
  EXPECT_EQ(second.advice.back(), first.advice.back());
  // Another working set is measured for itself.
  json larger = axpy_job("axpy", 2000);
  larger["timing"]["l2"] = "cold";
  const auto other = t.runner.measure(plan_of(larger), 0, 3);
  ASSERT_EQ(other.status, point_status::ok);
  EXPECT_TRUE(other.flags.empty());
  EXPECT_GT(triads(), measured);
}

// The last check is the sample loop's next sample once the samples stop, taken as they were:
// before the held batch's fixed cost is measured on the device (launches of another kernel,
// which a kernel reading a clock between its own would see as a gap), and, cold, flushed first.
TEST(PointRunner, TheLastCheckFollowsTheLastSampleAsOneSampleFollowsAnother) {
  auto last_sample = [](const std::vector<std::string>& log) {
    return std::size_t(std::find(log.rbegin(), log.rend(), "sample candidate").base() -
                       log.begin()) -
           1;
  };
  {
    auto t = make_runner();
    t.fake->kernel_time_us["scale"] = 1;
    t.fake->sample_fixed_us = 6;
    t.fake->info().l2_bytes = 2 * 2 * 8000;  // held to a batch of 2, corrected
    const auto r = t.runner.measure(plan_of(scale_job("scale")), 0, 2);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    ASSERT_TRUE(r.batch_corrected.has_value());
    EXPECT_GE(r.verification.timed_checks, 1);
    const auto& log = t.fake->log;
    const auto fma = std::size_t(std::find(log.begin(), log.end(), "fma") - log.begin());
    ASSERT_LT(fma, log.size());
    EXPECT_LT(last_sample(log), fma) << "the last check before the fixed cost's launches";
  }
  {
    auto t = make_runner();
    t.fake->kernel_time_us["scale"] = 38;
    auto cold = scale_job("scale");
    cold["timing"]["l2"] = "cold";
    const auto r = t.runner.measure(plan_of(cold), 0, 1);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    EXPECT_GE(r.verification.timed_checks, 1);
    const auto& log = t.fake->log;
    const std::size_t at = last_sample(log);
    ASSERT_GT(at, 0u);
    EXPECT_EQ(log[at - 1], "flush") << "the last check, cold as the samples were";
  }
}

// A sample's fixed cost (the events around its launches) is shared by its batch. A kernel held to
// fewer launches by its sets is read as the batch it would take reads it, with the fixed cost the
// device shows a built-in kernel, which nothing the candidate does moves.
TEST(PointRunner, AHeldBatchIsReadAsTheFreeBatchWouldReadIt) {
  auto measure = [](std::uint64_t l2_bytes, std::int64_t limit, double fixed_us) {
    auto t = make_runner();
    t.fake->kernel_time_us["scale"] = 1;  // 3 µs a launch with the launch overhead
    t.fake->sample_fixed_us = fixed_us;
    t.fake->info().l2_bytes = l2_bytes;
    t.runner.limit_batch(limit);
    auto r = t.runner.measure(plan_of(scale_job("scale")), 0, 2);
    EXPECT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    EXPECT_TRUE(r.flags.empty());
    return r;
  };
  auto corrected = [](const point_result& r) {
    return std::any_of(r.advice.begin(), r.advice.end(), [](const std::string& a) {
      return a.find("time per launch is read as at") != std::string::npos;
    });
  };
  // Free: the probes read 3 + 6 µs, so a batch of 6, which reads 3 + 6/6 µs a launch.
  const auto free = measure(1 << 20, 0, 6);
  ASSERT_EQ(free.batch, 6);
  EXPECT_NEAR(free.time_us->median, 4, 1e-9);
  EXPECT_FALSE(corrected(free));
  EXPECT_FALSE(free.batch_corrected.has_value());
  EXPECT_TRUE(to_json(free)["batch_correction"].is_null());
  // Held to 2 by its sets (half the caches hold two of 8000 bytes): 3 + 6/2 µs a launch as
  // sampled, read as the batch of 6 would read it.
  const auto held = measure(2 * 2 * 8000, 0, 6);
  ASSERT_EQ(held.batch, 2);
  EXPECT_NEAR(held.time_us->median, 4, 1e-9);
  EXPECT_NEAR(held.time_us->min, 4, 1e-9);
  EXPECT_TRUE(corrected(held));
  ASSERT_TRUE(held.batch_corrected.has_value());
  EXPECT_EQ(held.batch_corrected->free_batch, 6);
  EXPECT_NEAR(held.batch_corrected->fixed_cost_us, 6, 1e-9);
  EXPECT_NEAR(held.batch_corrected->us, 2, 1e-9);
  EXPECT_EQ(to_json(held)["batch_correction"]["free_batch"], 6);
  // Held on purpose by the runner's limit: timed as it is.
  const auto limited = measure(1 << 20, 2, 6);
  ASSERT_EQ(limited.batch, 2);
  EXPECT_NEAR(limited.time_us->median, 6, 1e-9);
  EXPECT_FALSE(corrected(limited));
  // The fixed cost is measured once for the points that follow on the device.
  {
    auto t = make_runner();
    t.fake->kernel_time_us["scale"] = 1;
    t.fake->sample_fixed_us = 6;
    t.fake->info().l2_bytes = 2 * 2 * 8000;
    auto fma_launches = [&] { return std::count(t.fake->log.begin(), t.fake->log.end(), "fma"); };
    const auto first = t.runner.measure(plan_of(scale_job("scale")), 0, 2);
    const auto measured = fma_launches();
    EXPECT_TRUE(first.batch_corrected.has_value());
    EXPECT_GT(measured, 0);
    const auto second = t.runner.measure(plan_of(scale_job("scale")), 0, 3);
    EXPECT_EQ(fma_launches(), measured);
    ASSERT_TRUE(second.batch_corrected.has_value());
    EXPECT_NEAR(second.time_us->median, 4, 1e-9);
  }
  // A kernel fast only in its lone probe launches (the first timed samples after its warm-up),
  // which would ask for a longer batch, is read as the honest one: the free batch comes from its
  // samples.
  {
    auto t = make_runner();
    fake_backend* fake = t.fake;
    fake->kernel_time_us["scale_fast_when_probed"] = 1;
    fake->sample_fixed_us = 6;
    fake->info().l2_bytes = 2 * 2 * 8000;
    fake->kernels["scale_fast_when_probed"] =
        [fake, scale = fake->kernels["scale"]](const fake_backend::host_args& a) {
          scale(a);
          const auto samples = std::count(fake->log.begin(), fake->log.end(), "sample candidate");
          fake->kernel_time_us["scale_fast_when_probed"] = samples >= 1 && samples <= 3 ? 0 : 1;
        };
    const auto r = t.runner.measure(plan_of(scale_job("scale_fast_when_probed")), 0, 2);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    ASSERT_EQ(r.batch, 2);
    ASSERT_TRUE(r.batch_corrected.has_value());
    EXPECT_EQ(r.batch_corrected->free_batch, held.batch_corrected->free_batch);
    EXPECT_NEAR(r.time_us->median, held.time_us->median, 1e-9);
  }
  // A device whose samples cost nothing besides their launches: nothing to correct.
  const auto costless = measure(2 * 2 * 8000, 0, 0);
  ASSERT_EQ(costless.batch, 2);
  EXPECT_NEAR(costless.time_us->median, 3, 1e-9);
  EXPECT_FALSE(corrected(costless));
}

// The baseline is timed as the candidate is: a batch of as many launches, each on buffers of its
// own with fresh inputs. On one set and batched further, it would carry less of the timing's own
// cost per launch than the candidate, and the candidate's speedup would read low.
TEST(PointRunner, ABaselineIsBatchedAsTheCandidateIsOnBuffersOfItsOwn) {
  auto t = make_runner();
  fake_backend* fake = t.fake;
  // The baseline's output address, by the place its launch takes in the log.
  std::map<std::size_t, void*> outputs;
  fake->kernels["scale_base"] = [fake, &outputs,
                                 scale = fake->kernels["scale"]](const fake_backend::host_args& a) {
    outputs[fake->log.size()] = a.buffers[1];
    scale(a);
  };
  fake->kernel_time_us["scale"] = 1;  // 3 µs with the launch overhead: a batch of 17
  fake->kernel_time_us["scale_base"] = 1;
  fake->info().l2_bytes = 2 * 5 * 8000;  // half of it: five sets of 1000 floats in x and y
  auto j = scale_job("scale");
  j["fitness"]["baseline"] = j["kernel"];
  j["fitness"]["baseline"]["entry"] = "scale_base";
  j["fitness"]["baseline"].erase("reference");
  const auto r = t.runner.measure(plan_of(j), 0, 2);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  ASSERT_EQ(r.batch, 5);
  ASSERT_TRUE(r.fitness.speedup.has_value());
  EXPECT_NEAR(*r.fitness.speedup, 1.0, 1e-9);
  // The baseline's timed samples after the three batch probes: five launches each, on five sets
  // (the samples of the built-in kernel that measures a sample's fixed cost are not its).
  std::vector<std::set<void*>> samples;
  std::vector<int> launches;
  const auto& log = fake->log;
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i] != "sample baseline" || (i + 1 < log.size() && log[i + 1] == "fma")) continue;
    samples.emplace_back();
    launches.push_back(0);
    for (std::size_t k = i + 1; k < log.size() && log[k] == "launch scale_base"; ++k) {
      samples.back().insert(outputs.at(k));
      ++launches.back();
    }
  }
  ASSERT_GT(samples.size(), 5u);
  for (std::size_t s = 3; s < samples.size(); ++s) {
    EXPECT_EQ(launches[s], 5) << "sample " << s;
    EXPECT_EQ(samples[s].size(), 5u) << "sample " << s;
  }
  EXPECT_EQ(fake->live_buffers(), 0u);
}

TEST(PointRunner, WithoutRoomForASecondSetTheLaunchesStayOnOne) {
  auto t = make_runner();
  // 1000 floats in each of x and y: room for one set and the reference's copy of y (12,000
  // bytes), not for a second set and its reference copy beside them (12,000 more).
  t.fake->free_bytes = 20000;
  const auto r = t.runner.measure(plan_of(scale_job("scale")), 0, 9);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  EXPECT_TRUE(r.flags.empty());
  EXPECT_NE(std::find_if(r.advice.begin(), r.advice.end(),
                         [](const std::string& a) {
                           return a.find("second set of buffers") != std::string::npos;
                         }),
            r.advice.end());
}

TEST(PointRunner, UnwrittenOutputsAreCaughtThroughThePoison) {
  auto t = make_runner();
  const auto r = t.runner.measure(plan_of(scale_job("scale_none")), 0, 1);
  ASSERT_EQ(r.status, point_status::ok);
  EXPECT_EQ(r.verification.status, "failed");
  EXPECT_EQ(r.verification.unwritten, 1000u);
  EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "output_not_written"), r.flags.end());
  EXPECT_FALSE(r.fitness.correct);
  EXPECT_EQ(r.fitness.combined_score, 0.0);
}

TEST(PointRunner, HalfWrittenAndWrongOutputsFail) {
  auto t = make_runner();
  EXPECT_EQ(t.runner.measure(plan_of(scale_job("scale")), 0, 1).verification.status, "passed");
  const auto half = t.runner.measure(plan_of(scale_job("scale_half")), 0, 1);
  EXPECT_EQ(half.verification.status, "failed");
  EXPECT_EQ(half.verification.unwritten, 500u);

  const auto wrong = t.runner.measure(plan_of(axpy_job("axpy_wrong")), 0, 1);
  EXPECT_EQ(wrong.verification.status, "failed");
  EXPECT_EQ(wrong.verification.unwritten, 0u);
  EXPECT_EQ(wrong.verification.trials, 1);  // one failing trial decides
  EXPECT_NE(wrong.verification.note.find("first at element 0"), std::string::npos)
      << wrong.verification.note;
  EXPECT_NE(std::find(wrong.flags.begin(), wrong.flags.end(), "verification_failed"),
            wrong.flags.end());
}

TEST(PointRunner, AnOutputReadBackInSeveralWindowsIsComparedWhole) {
  auto t = make_runner();
  constexpr int n = 2'500'000;  // more than two windows of the comparison
  // Verified and timed as little as may be: each host launch and fill takes milliseconds.
  auto job = [&](const std::string& entry) {
    json j = axpy_job(entry, n, 2);
    j["timing"] = {{"l2", "hot"}, {"warmup", 0}, {"min_samples", 1}, {"max_samples", 1}};
    return plan_of(j);
  };
  const auto right = t.runner.measure(job("axpy"), 0, 3);
  ASSERT_EQ(right.status, point_status::ok) << (right.error ? right.error->message : "");
  EXPECT_EQ(right.verification.status, "passed") << right.verification.note;
  EXPECT_EQ(right.verification.norm_rel_err, 0.0);
  const auto wrong = t.runner.measure(job("axpy_far_wrong"), 0, 3);
  EXPECT_EQ(wrong.verification.status, "failed");
  EXPECT_NE(wrong.verification.note.find("2 output elements differ"), std::string::npos)
      << wrong.verification.note;
  EXPECT_NE(wrong.verification.note.find("first at element " + std::to_string(n / 2 + 123)),
            std::string::npos)
      << wrong.verification.note;
  EXPECT_NEAR(wrong.verification.max_abs_err, 3.0, 1e-5);
  EXPECT_GT(wrong.verification.norm_rel_err, 0.0);
}

TEST(PointRunner, NoTrialsOrNoReferenceSkipVerification) {
  auto t = make_runner();
  const auto none = t.runner.measure(plan_of(axpy_job("axpy", 1000, 0)), 0, 1);
  EXPECT_EQ(none.verification.status, "skipped");
  EXPECT_EQ(none.verification.note, "verify.trials is 0");
  auto j = axpy_job("axpy");
  j["kernel"].erase("reference");
  const auto no_reference = t.runner.measure(plan_of(j), 0, 1);
  EXPECT_EQ(no_reference.verification.status, "skipped");
}

TEST(PointRunner, WarmsUpBeforeTheFirstTimedSample) {
  auto t = make_runner();
  auto j = axpy_job("axpy", 1000, 0);
  j["timing"]["warmup"] = 0;  // even then, one untimed launch
  (void)t.runner.measure(plan_of(j), 0, 1);
  const auto& log = t.fake->log;
  const std::size_t first_launch = position(log, "launch axpy");
  const std::size_t first_sample = position(log, "sample candidate");
  EXPECT_LT(first_launch, first_sample);
}

TEST(PointRunner, BatchesShortHotKernelsOnly) {
  EXPECT_EQ(batch_for(2.0, l2_mode::hot), 25);
  EXPECT_EQ(batch_for(0.1, l2_mode::hot), k_max_batch);
  EXPECT_EQ(batch_for(20.0, l2_mode::hot), 1);
  EXPECT_EQ(batch_for(2.0, l2_mode::cold), 1);
  EXPECT_EQ(batch_for(0.0, l2_mode::hot), 1);

  auto t = make_runner();
  t.fake->kernel_time_us["axpy"] = 1;  // 3 µs a launch with the overhead
  const auto hot = t.runner.measure(plan_of(axpy_job("axpy", 1000, 0)), 0, 1);
  EXPECT_EQ(hot.batch, 17);
  EXPECT_NEAR(hot.time_us->median, 3.0, 1e-9);  // per launch, the batch divided out

  auto cold_job = axpy_job("axpy", 1000, 0);
  cold_job["timing"]["l2"] = "cold";
  const auto cold = t.runner.measure(plan_of(cold_job), 0, 1);
  EXPECT_EQ(cold.batch, 1);
  // Each cold sample flushes first.
  const auto& log = t.fake->log;
  const std::size_t sample = position(log, "sample candidate", position(log, "begin_point", 1));
  ASSERT_LT(sample, log.size());
  EXPECT_EQ(log[sample - 1], "flush");
}

TEST(PointRunner, AHotSampleWhoseFreshInputsOverflowTheCachesFlushesThem) {
  // The fake device has 1 MiB of L2. A sample's fresh buffers of 8 KB stay in it for a hot
  // sample; of 2 MiB they are flushed (untimed), so that their write-back is not timed.
  for (const int n : {1000, 1 << 18}) {
    SCOPED_TRACE(n);
    auto t = make_runner();
    t.fake->kernel_time_us["axpy"] = 38;
    const auto r = t.runner.measure(plan_of(axpy_job("axpy", n, 0)), 0, 1);
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    const auto [samples, flushed] = testing::flushed_samples(t.fake->log);
    ASSERT_GT(samples, 3);
    EXPECT_EQ(flushed, n == 1000 ? 0 : samples);
  }
}

TEST(PointRunner, SamplesABaselineInterleavedAndPairsTheSpeedup) {
  auto t = make_runner();
  t.fake->kernel_time_us["axpy"] = 38;  // 40 µs with the overhead
  t.fake->gemm_tflops = 1;
  auto j = axpy_job("axpy", 1000, 0);
  // The baseline: a 100 µs custom launch of the slow variant.
  j["fitness"]["baseline"] = j["kernel"];
  j["fitness"]["baseline"]["entry"] = "axpy_wrong";
  j["fitness"]["baseline"].erase("reference");
  t.fake->kernel_time_us["axpy_wrong"] = 98;
  const auto r = t.runner.measure(plan_of(j), 0, 1);
  ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
  std::vector<std::string> roles;
  for (const auto& e : t.fake->log) {
    if (e.rfind("sample ", 0) == 0) roles.push_back(e);
  }
  // After the batch probes (three of each), strict alternation.
  ASSERT_GT(roles.size(), 8u);
  for (std::size_t i = 6; i + 1 < roles.size(); i += 2) {
    EXPECT_EQ(roles[i], "sample candidate");
    EXPECT_EQ(roles[i + 1], "sample baseline");
  }
  ASSERT_TRUE(r.fitness.speedup.has_value());
  EXPECT_NEAR(*r.fitness.speedup, 100.0 / 40.0, 1e-9);
  ASSERT_TRUE(r.fitness.baseline_us.has_value());
  EXPECT_NEAR(*r.fitness.baseline_us, 100.0, 1e-9);
}

TEST(PointRunner, WhatTheBaselineThrowsSaysItIsTheBaselines) {
  auto t = make_runner();
  auto j = axpy_job("axpy", 1000, 0);
  j["fitness"]["baseline"] = j["kernel"];
  j["fitness"]["baseline"]["entry"] = "axpy_wrong";
  j["fitness"]["baseline"].erase("reference");
  t.fake->fail_entry["axpy_wrong"] = fault_kind::invalid_launch;
  auto r = t.runner.measure(plan_of(j), 0, 1);
  ASSERT_EQ(r.status, point_status::failed);
  EXPECT_EQ(r.error->type, "invalid_point");
  EXPECT_EQ(r.error->message, "fitness.baseline: launch axpy_wrong failed (injected)");

  j["fitness"]["baseline"]["entry"] = "no_such_kernel";
  r = t.runner.measure(plan_of(j), 0, 1);
  ASSERT_EQ(r.status, point_status::failed);
  EXPECT_EQ(r.error->type, "compile_error");
  EXPECT_EQ(r.error->message, "fitness.baseline: no kernel named no_such_kernel");
  EXPECT_EQ(t.fake->live_buffers(), 0u);
}

TEST(PointRunner, MapsFaultsToPointErrors) {
  struct expectation {
    const char* call;
    fault_kind kind;
    const char* type;
  };
  for (const auto& e : {expectation{"compile", fault_kind::unsupported, "unsupported"},
                        expectation{"allocate", fault_kind::out_of_memory, "out_of_memory"},
                        expectation{"launch", fault_kind::invalid_launch, "invalid_point"},
                        expectation{"read", fault_kind::internal, "internal"}}) {
    auto t = make_runner();
    t.fake->fail_on[e.call] = e.kind;
    const auto r = t.runner.measure(plan_of(axpy_job("axpy")), 0, 1);
    ASSERT_EQ(r.status, point_status::failed) << e.call;
    EXPECT_EQ(r.error->type, e.type) << e.call;
    EXPECT_NE(r.error->message.find("(injected)"), std::string::npos);
    EXPECT_FALSE(t.runner.needs_restart());
    EXPECT_EQ(r.fitness.combined_score, 0.0);
  }
}

TEST(PointRunner, ACompileErrorCarriesItsMessage) {
  auto t = make_runner();
  const auto r = t.runner.measure(plan_of(axpy_job("missing_entry")), 0, 1);
  ASSERT_EQ(r.status, point_status::failed);
  EXPECT_EQ(r.error->type, "compile_error");
  EXPECT_EQ(r.error->message, "no kernel named missing_entry");

  // The sweep's other points fail alike without compiling it again; another source is compiled.
  const int compiles = t.fake->compiles;
  auto sweep = axpy_job("missing_entry");
  sweep["sweep"]["N"] = {1000, 2000, 3000};
  const auto plan = plan_of(sweep);
  for (std::uint64_t i = 1; i < 3; ++i) {
    const auto again = t.runner.measure(plan, i, 1);
    ASSERT_EQ(again.status, point_status::failed);
    EXPECT_EQ(again.error->message, "no kernel named missing_entry");
  }
  EXPECT_EQ(t.fake->compiles, compiles);
  auto fixed = axpy_job("missing_entry");
  fixed["kernel"]["source"] = "extern \"C\" __global__ void missing_entry() {}";
  (void)t.runner.measure(plan_of(fixed), 0, 1);
  EXPECT_EQ(t.fake->compiles, compiles + 1);
}

TEST(PointRunner, ALostDeviceFailsThePointAndAsksForARestart) {
  auto t = make_runner();
  t.fake->fail_on["synchronize"] = fault_kind::device_lost;
  const auto r = t.runner.measure(plan_of(axpy_job("axpy")), 0, 1);
  ASSERT_EQ(r.status, point_status::failed);
  EXPECT_EQ(r.error->type, "device_fault");
  EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "device_fault"), r.flags.end());
  EXPECT_TRUE(t.runner.needs_restart());
  t.fake->fail_on.clear();
  const auto next = t.runner.measure(plan_of(axpy_job("axpy")), 0, 1);
  EXPECT_EQ(next.error->type, "device_fault");
  EXPECT_NE(next.error->message.find("faulted earlier"), std::string::npos);
}

TEST(PointRunner, APointThatDoesNotFitTheFreeMemoryIsOutOfMemory) {
  auto t = make_runner();
  t.fake->free_bytes = 4000;  // the point needs 3 × 4000 bytes (x, y and the reference's y)
  const auto r = t.runner.measure(plan_of(axpy_job("axpy")), 0, 1);
  ASSERT_EQ(r.status, point_status::failed);
  EXPECT_EQ(r.error->type, "out_of_memory");
  EXPECT_NE(r.error->message.find("needs"), std::string::npos) << r.error->message;
  EXPECT_EQ(t.fake->live_buffers(), 0u);

  auto big = make_runner();
  big.fake->info().memory_bytes = 2000;  // the largest allocation: x alone needs 4000 bytes
  const auto one = big.runner.measure(plan_of(axpy_job("axpy")), 0, 1);
  ASSERT_EQ(one.status, point_status::failed);
  EXPECT_EQ(one.error->type, "out_of_memory");
  EXPECT_NE(one.error->message.find("allocates at most"), std::string::npos) << one.error->message;
}

TEST(PointRunner, ADeviceThatAlwaysThrottlesIsMeasuredAsItRuns) {
  auto t = make_runner();
  t.fake->throttled = true;
  const auto r = t.runner.measure(plan_of(axpy_job("axpy", 1000, 0)), 0, 1);
  ASSERT_EQ(r.status, point_status::ok) << r.error->message;
  // Throttled samples are dropped while there are fewer dropped than kept (plus min_samples),
  // never all of them.
  EXPECT_GT(r.discarded, 0u);
  EXPECT_LE(r.discarded, r.samples + 10);
  EXPECT_GE(r.samples, 10u);
  const bool said = std::any_of(r.advice.begin(), r.advice.end(), [](const std::string& a) {
    return a.find("ran while the device throttled") != std::string::npos;
  });
  EXPECT_TRUE(said);
}

TEST(PointRunner, TheRooflineRecipeMeasuresTheDeviceItRunsOn) {
  auto fast = std::make_unique<fake_backend>();
  fast->bandwidth_gbps = 3000;
  fast->gemm_tflops = 500;
  fast->fma_tflops = 60;
  fast->free_bytes = 80ull << 30;
  fast->info().memory_bytes = 80ull << 30;
  fast->backing = false;
  fake_backend* f = fast.get();
  point_runner gpu(std::move(fast));
  const auto r = gpu.measure_roofline();
  // The triad's three arrays and the GEMMs' operands reach their caps on a fast device.
  EXPECT_NE(r.method.find("stream triad 2^28 f32"), std::string::npos) << r.method;
  EXPECT_NE(r.method.find("f16 library 8192^3"), std::string::npos) << r.method;
  // The ceilings come back as measured (the launch overhead is part of each launch).
  EXPECT_GT(r.peaks.bandwidth_gbps, 3000 * 0.97);
  EXPECT_LT(r.peaks.bandwidth_gbps, 3000 * 1.0001);
  EXPECT_GT(r.peaks.f32_tflops, 500 * 0.97);
  EXPECT_GT(r.peaks.vector_f32_tflops, 60 * 0.97);
  EXPECT_EQ(r.peaks.i8_tops, 0.0);  // no datasheet to scale from
  EXPECT_EQ(gpu.device().measured->peaks.bandwidth_gbps, r.peaks.bandwidth_gbps);
  EXPECT_NE(std::find(f->log.begin(), f->log.end(), "fma"), f->log.end());

  // A slow device without f64 gets smaller problems and no f64 ceiling.
  auto slow = std::make_unique<fake_backend>();
  slow->bandwidth_gbps = 10;
  slow->gemm_tflops = 0.05;
  slow->fp64 = false;
  slow->backing = false;
  point_runner cpu(std::move(slow));
  const auto s = cpu.measure_roofline();
  EXPECT_EQ(s.peaks.f64_tflops, 0.0);
  EXPECT_NE(s.method.find("f64 not supported"), std::string::npos) << s.method;
  EXPECT_EQ(s.method.find("8192^3"), std::string::npos) << s.method;
  EXPECT_EQ(s.method.find("2^28"), std::string::npos) << s.method;
  EXPECT_GT(s.peaks.f32_tflops, 0.05 * 0.9);
}

}  // namespace
}  // namespace kernelscan
