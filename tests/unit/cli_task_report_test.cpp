// `kernelscan tasks`' text, on hand-built tasks as the API answers them (no daemon). Suite names
// start with `cli_` so `ctest -R cli` selects every client test.
#include <gtest/gtest.h>

#include <string>

#include "api/json.hpp"
#include "server/cli_task_report.hpp"

namespace kernelscan {
namespace {

// A GEMM task as an agent reads it: a baseline rather than a target, private held-out scores,
// a bound on submissions with what is left of it, a kernel with a custom reference.
json gemm_task() {
  return json::parse(R"js({
    "name": "gemm", "description": "C = A B\nover N x N halves", "status": "active",
    "kernel": {"language": "cuda", "entry": "g", "block": [16, 16, 1],
               "grid": ["N/16", "N/16", 1], "shared_bytes": "8*N",
               "compile_options": ["-O3", "--use_fast_math"],
               "args": [{"name": "C", "type": "f16*", "count": "N*N", "output": true},
                        {"name": "A", "type": "f16*", "count": "N*N"},
                        {"name": "W", "type": "f32*", "count": "N", "scratch": true},
                        {"name": "n", "type": "i32", "value": "N"}],
               "flops": "2*N*N*N", "bytes": "6*N*N",
               "reference": {"op": "custom", "entry": "gemm_ref"}},
    "dtypes": ["f16", "f32", "i32"], "sweep": {"N": [1024, 2048]},
    "public_points": 2, "held_out_points": 1, "held_out_scores": "private",
    "verify": {"trials": 3, "atol": 0.01, "rtol": 0.01},
    "fitness": {"target_us": null, "correctness_weight": 0.5,
                "baseline": {"op": "gemm", "m": "N", "n": "N", "k": "N", "dtype": "f16"}},
    "submissions": {"per_agent": 10, "window_hours": null, "used": 3, "remaining": 7}})js");
}

TEST(cli_task_report, AnAgentReadsWhatItsKernelMustTakeAndHowItIsScored) {
  const std::string report = task_report(gemm_task());
  for (const char* line :
       {"task         gemm: active\n", "description  C = A B over N x N halves\n",
        "kernel       cuda, entry g, block 16,16,1, grid N/16,N/16,1, shared_bytes 8*N (defaults "
        "a submission may change)\n",
        "options      -O3 --use_fast_math\n",
        "             W         f32*  N elements, scratch (written, not compared)\n",
        "sizes        N: 1024, 2048\n",
        "held out     1 point at sizes not shown, measured and scored with the public ones\n",
        "             held-out scores are private: the score shown is over the public points\n",
        "reference    the task's kernel gemm_ref\n",
        "verify       3 trials, atol 0.01, rtol 0.01\n",
        "fitness      speedup over gemm f16, correctness weight 0.5\n",
        "submissions  10 per agent over the task's life: 3 used, 7 remaining\n",
        "submit       kernelscan evaluate gemm FILE"}) {
    EXPECT_NE(report.find(line), std::string::npos) << line << "\n" << report;
  }
  EXPECT_NE(report.find("(--entry, --block, --grid, --shared-bytes, --option to change the "
                        "defaults)\n"),
            std::string::npos)
      << report;
  // An OpenCL kernel declares its local memory: there is no --shared-bytes to give.
  json opencl = gemm_task();
  opencl["kernel"]["language"] = "opencl";
  opencl["kernel"].erase("shared_bytes");
  EXPECT_NE(task_report(opencl).find("(--entry, --block, --grid, --option to change the "
                                     "defaults)\n"),
            std::string::npos)
      << task_report(opencl);
  json retired = gemm_task();
  retired["status"] = "retired";
  EXPECT_NE(task_report(retired).find("submit       the task is retired"), std::string::npos);
}

TEST(cli_task_report, TheTableHasARowPerTask) {
  json axpy = gemm_task();
  axpy["name"] = "axpy";
  axpy["held_out_points"] = 0;
  axpy["fitness"] = {{"target_us", 2.5}, {"baseline", nullptr}};
  axpy.erase("submissions");
  EXPECT_EQ(task_table(json::array({gemm_task(), axpy})),
            "name  status  language          points  target         submissions            "
            "       description\n"
            "gemm  active  cuda      2 + 1 held out  over gemm f16  3 of 10 over the task's life  "
            "C = A B over N x N halves\n"
            "axpy  active  cuda                   2  2.5 µs         -                            "
            " C = A B over N x N halves\n");
  EXPECT_EQ(task_table(json::array()), "no tasks\n");
}

}  // namespace
}  // namespace kernelscan
