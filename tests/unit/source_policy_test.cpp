#include "engine/source_policy.hpp"

#include <gtest/gtest.h>

namespace kernelscan {
namespace {

std::string refused(std::string_view source, kernel_language language = kernel_language::hip) {
  auto why = check_kernel_source(source, language);
  return why ? *why : "";
}

std::string refused_cuda(std::string_view source) {
  return refused(source, kernel_language::cuda);
}

TEST(SourcePolicy, RuntimeHeadersAreAllowed) {
  EXPECT_EQ(refused("#include <hip/hip_runtime.h>\n__global__ void k() {}"), "");
  EXPECT_EQ(refused("#include \"hip/hip_fp16.h\"\n"), "");
  EXPECT_EQ(refused("  #  include   <hip/hip_bf16.h>  // comment\n"), "");
  EXPECT_EQ(refused("extern \"C\" __global__ void k(float* x) { x[0] = 1; }"), "");
  for (auto h : allowed_kernel_includes(kernel_language::hip)) {
    EXPECT_EQ(refused("#include <" + std::string(h) + ">\n"), "") << h;
  }
}

TEST(SourcePolicy, EachLanguageHasItsOwnHeaders) {
  // A .cu file as CUDA users write it.
  EXPECT_EQ(refused_cuda("#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n"
                         "#include \"cuda_bf16.h\"\n#include <cooperative_groups.h>\n"
                         "#include <mma.h>\n#include <cuda/std/cstdint>\n"
                         "__global__ void k(__half* x) { x[0] = __float2half(1.0f); }"),
            "");
  for (auto h : allowed_kernel_includes(kernel_language::cuda)) {
    EXPECT_EQ(refused_cuda("#include <" + std::string(h) + ">\n"), "") << h;
    // A CUDA header in a HIP kernel would not be found on AMD: refused, naming HIP's list.
    const std::string why = refused("#include <" + std::string(h) + ">\n");
    EXPECT_EQ(why.rfind("line 1: #include <" + std::string(h) + "> is not allowed; hip kernels", 0),
              0u)
        << why;
    EXPECT_NE(why.find("hip/hip_runtime.h"), std::string::npos) << why;
  }
  for (auto h : allowed_kernel_includes(kernel_language::hip)) {
    const std::string why = refused_cuda("#include <" + std::string(h) + ">\n");
    EXPECT_EQ(
        why.rfind("line 1: #include <" + std::string(h) + "> is not allowed; cuda kernels", 0), 0u)
        << why;
    EXPECT_NE(why.find("cuda_runtime.h"), std::string::npos) << why;
  }
}

TEST(SourcePolicy, CudaKernelsKeepEveryRefusal) {
  // Host headers, including CUDA's host-only ones, and paths that climb out of the toolkit.
  for (const char* h : {"stdio.h", "cuda.h", "nvrtc.h", "cublas_v2.h", "cuda/std/../../../x",
                        "cuda/../../../../etc/passwd", "/usr/local/cuda/include/cuda_fp16.h",
                        "cccl/cuda/std/cstdint", "thrust/device_vector.h", "cub/cub.cuh"}) {
    EXPECT_NE(refused_cuda("#include <" + std::string(h) + ">\n"), "") << h;
    EXPECT_NE(refused_cuda("#include \"" + std::string(h) + "\"\n"), "") << h;
  }
  EXPECT_NE(refused_cuda("#inc\\\nlude <stdio.h>\n"), "");
  EXPECT_NE(refused_cuda("# /* hidden */ include <stdio.h>\n"), "");
  EXPECT_NE(refused_cuda("%:include <stdio.h>\n"), "");
  EXPECT_NE(refused_cuda("#define H <stdio.h>\n#include H\n"), "");
  EXPECT_NE(refused_cuda("#include_next <cuda_fp16.h>\n"), "");
  EXPECT_NE(refused_cuda("#import <cuda_fp16.h>\n"), "");
  EXPECT_NE(refused_cuda("#embed \"/etc/passwd\"\n"), "");
  EXPECT_NE(refused_cuda("#if __has_include(<cuda_fp16.h>)\n#endif\n"), "");
  const std::string why = refused_cuda("\n#include <stdlib.h>\n");
  EXPECT_EQ(
      why.rfind("line 2: #include <stdlib.h> is not allowed; cuda kernels may include only", 0), 0u)
      << why;
}

TEST(SourcePolicy, OtherIncludesAreRefusedNamingTheLine) {
  const std::string why = refused("// kernel\n\n#include <stdio.h>\n");
  EXPECT_EQ(why.rfind("line 3: #include <stdio.h> is not allowed", 0), 0u) << why;
  EXPECT_NE(why.find("hip/hip_runtime.h"), std::string::npos) << why;
  EXPECT_NE(refused("#include \"/etc/passwd\"\n"), "");
  EXPECT_NE(refused("#include </etc/shadow>\n"), "");
  EXPECT_NE(refused("#include \"../../../../etc/passwd\"\n"), "");
  EXPECT_NE(refused("#include <hip/../../../etc/passwd>\n"), "");
}

TEST(SourcePolicy, DisguisedDirectivesAreSeen) {
  EXPECT_NE(refused("#inc\\\nlude <stdio.h>\n"), "");  // a line splice
  EXPECT_NE(refused("#\\\ninclude <stdio.h>\n"), "");
  EXPECT_NE(refused("# /* hidden */ include <stdio.h>\n"), "");  // a comment in between
  EXPECT_NE(refused("/* a */ #include <stdio.h>\n"), "");
  EXPECT_NE(refused("%:include <stdio.h>\n"), "");  // the digraph of #
  EXPECT_NE(refused("\t#include<stdio.h>\n"), "");
  EXPECT_NE(refused("#include\t\"x.h\"\n"), "");
}

TEST(SourcePolicy, OtherWaysToReadFilesAreRefused) {
  EXPECT_NE(refused("#define H <stdio.h>\n#include H\n"), "");  // computed include
  EXPECT_NE(refused("#include_next <hip/hip_runtime.h>\n"), "");
  EXPECT_NE(refused("#import <foo.h>\n"), "");
  EXPECT_NE(refused("#embed \"/etc/passwd\"\n"), "");
  EXPECT_NE(refused("#if __has_include(</etc/passwd>)\n#endif\n"), "");
  EXPECT_NE(refused("#if __has_include_next(<x>)\n#endif\n"), "");
}

TEST(SourcePolicy, TextThatOnlyLooksLikeADirectiveIsFine) {
  EXPECT_EQ(refused("// #include <stdio.h>\n__global__ void k() {}"), "");
  EXPECT_EQ(refused("/* #include <stdio.h>\n   more */ __global__ void k() {}"), "");
  EXPECT_EQ(refused("const char* s = \"#include <stdio.h>\";\n"), "");
  EXPECT_EQ(refused("int x = 1; // __has_include in a comment\n"), "");
  EXPECT_EQ(refused("#define N 16\n#pragma unroll\n#if N > 8\n#endif\n"), "");
  EXPECT_EQ(refused("int my__has_include_like_name = 1;\n"), "");
}

}  // namespace
}  // namespace kernelscan
