#pragma once
// Real-looking output of the tools POST /api/v1/imports reads, shared by the unit and
// integration tests: the seed ROCm profiler's results JSON, a rocprofv3 kernel trace and an
// nsys cuda_gpu_kern_sum report.

#include <string>

#include "api/json.hpp"

namespace kernelscan::testing {

// The results.json of the seed ROCm profiler (a TopK & sort module on an MI300X), with its
// config, three components and the full pipeline.
inline json seed_results() {
  return json::parse(R"({
    "config": {"M": 4, "K": 8, "S": 1, "num_experts": 256, "total_experts": 257,
               "unit_size": 64, "gpu": "AMD Instinct MI300X", "dtype": "torch.bfloat16"},
    "components": {
      "hip_topk": {"type": "HIP", "mean_us": 9.87, "std_us": 0.41, "min_us": 9.21,
                   "max_us": 14.08, "p50_us": 9.8, "p95_us": 10.52, "p99_us": 11.93,
                   "bytes_transferred": 2816, "flops_estimated": 2048},
      "triton_append": {"type": "Triton", "mean_us": 6.12, "std_us": 0.22, "min_us": 5.8,
                        "max_us": 8.4, "p50_us": 6.08, "p95_us": 6.44, "p99_us": 7.1,
                        "bytes_transferred": 544, "flops_estimated": 0},
      "ck_sorting": {"type": "CK", "mean_us": 14.3, "std_us": 0.9, "min_us": 13.1,
                     "max_us": 21.7, "p50_us": 14.1, "p95_us": 15.6, "p99_us": 18.2,
                     "bytes_transferred": 199124, "flops_estimated": 288}
    },
    "full_pipeline": {"mean_us": 31.2, "std_us": 1.3, "min_us": 29.4, "max_us": 40.9,
                      "p50_us": 30.9, "p95_us": 33.5, "p99_us": 36.0}
  })");
}

// rocprofv3 --kernel-trace output (ROCm 6.2+ columns), CRLF line ends, a kernel name with
// commas; three dispatches of the GEMM (12, 14, 13 µs) and one of a fill.
inline const std::string k_trace =
    "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\","
    "\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\","
    "\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\","
    "\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\r\n"
    "\"KERNEL_DISPATCH\",\"Agent 4\",1,0,74441,1,33,\"__amd_rocclr_fillBufferAligned\",119662,"
    "1614963487781917,1614963487785917,0,0,12,4,48,256,1,1,256,1,1\r\n"
    "\"KERNEL_DISPATCH\",\"Agent 4\",1,0,74441,2,18,\"void gemm<float, 64>(float const*, float "
    "const*, float*, int, int, int)\",120,1614963488155186,1614963488167186,1024,0,64,0,32,256,1,"
    "1,16384,64,1\r\n"
    "\"KERNEL_DISPATCH\",\"Agent 4\",1,0,74441,3,18,\"void gemm<float, 64>(float const*, float "
    "const*, float*, int, int, int)\",121,1614963488170000,1614963488184000,1024,0,64,0,32,256,1,"
    "1,16384,64,1\r\n"
    "\"KERNEL_DISPATCH\",\"Agent 4\",1,0,74441,4,18,\"void gemm<float, 64>(float const*, float "
    "const*, float*, int, int, int)\",122,1614963488190000,1614963488203000,1024,0,64,0,32,256,1,"
    "1,16384,64,1\r\n";

// k_trace with four more dispatches of the GEMM (13, 12, 14 and 13 µs): seven in all, enough for
// a 95% confidence interval of its median (six at least), which its three in k_trace are not.
inline std::string k_longer_trace() {
  std::string csv = k_trace;
  const long long durations_ns[] = {13000, 12000, 14000, 13000};
  long long start = 1614963488210000;
  int dispatch = 5;
  for (const long long d : durations_ns) {
    csv += "\"KERNEL_DISPATCH\",\"Agent 4\",1,0,74441," + std::to_string(dispatch) +
           ",18,\"void gemm<float, 64>(float const*, float const*, float*, int, int, int)\"," +
           std::to_string(118 + dispatch) + "," + std::to_string(start) + "," +
           std::to_string(start + d) + ",1024,0,64,0,32,256,1,1,16384,64,1\r\n";
    start += d + 5000;
    ++dispatch;
  }
  return csv;
}

// What `nsys stats --report cuda_gpu_kern_sum --format csv` prints: progress lines, a title, a
// blank line, the table, and another report after a blank line.
inline const std::string k_nsys =
    "Generating SQLite file report.sqlite from report.nsys-rep\n"
    "Processing [report.sqlite] with "
    "[/opt/nvidia/nsight-systems/2024.2.1/host-linux-x64/reports/cuda_gpu_kern_sum.py]... \n"
    "\n"
    " ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):\n"
    "\n"
    "\"Time (%)\",\"Total Time (ns)\",\"Instances\",\"Avg (ns)\",\"Med (ns)\",\"Min (ns)\","
    "\"Max (ns)\",\"StdDev (ns)\",\"Name\"\n"
    "\"91.2\",\"182400\",\"4\",\"45600.0\",\"45500.0\",\"45000\",\"46400\",\"600.0\","
    "\"ampere_sgemm_128x64_nn\"\n"
    "\"8.8\",\"17600\",\"4\",\"4400.0\",\"4400.0\",\"4300\",\"4500\",\"80.0\","
    "\"void reduce<float, 256>(float*, int)\"\n"
    "\n"
    " ** CUDA API Summary (cuda_api_sum):\n"
    "\"Time (%)\",\"Total Time (ns)\",\"Num Calls\",\"Name\"\n"
    "\"100.0\",\"9000000\",\"20\",\"cudaLaunchKernel\"\n";

}  // namespace kernelscan::testing
