// libFuzzer target: the kernel source policy on arbitrary text, for each kernel language.
// Invariant beyond "no crash": text with a plain, unspliced, uncommented "#include <stdio.h>" line
// added is always refused.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/source_policy.hpp"

using namespace kernelscan;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const auto language : {kernel_language::hip, kernel_language::cuda}) {
    (void)check_kernel_source(text, language);
    // Prepended on its own line, the directive cannot be hidden inside the text's literals or
    // comments (the text starts after it).
    if (!check_kernel_source("#include <stdio.h>\n" + text, language)) std::abort();
  }
  return 0;
}
