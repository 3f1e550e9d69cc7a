#include "engine/source_policy.hpp"

#include <gtest/gtest.h>

namespace kernelscan {
namespace {

std::string refused(std::string_view source) {
  auto why = check_kernel_source(source);
  return why ? *why : "";
}

TEST(SourcePolicy, RuntimeHeadersAreAllowed) {
  EXPECT_EQ(refused("#include <hip/hip_runtime.h>\n__global__ void k() {}"), "");
  EXPECT_EQ(refused("#include \"hip/hip_fp16.h\"\n"), "");
  EXPECT_EQ(refused("  #  include   <hip/hip_bf16.h>  // comment\n"), "");
  EXPECT_EQ(refused("extern \"C\" __global__ void k(float* x) { x[0] = 1; }"), "");
  for (auto h : allowed_kernel_includes()) {
    EXPECT_EQ(refused("#include <" + std::string(h) + ">\n"), "") << h;
  }
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
