#include "engine/source_policy.hpp"

#include <array>
#include <cctype>
#include <vector>

#include "engine/text_list.hpp"

namespace kernelscan {
namespace {

constexpr std::array<std::string_view, 11> k_hip_allowed{
    "hip/hip_runtime.h",       "hip/hip_runtime_api.h",
    "hip/hip_fp16.h",          "hip/hip_bf16.h",
    "hip/hip_bfloat16.h",      "hip/hip_complex.h",
    "hip/hip_vector_types.h",  "hip/math_functions.h",
    "hip/device_functions.h",  "hip/hip_cooperative_groups.h",
    "hip/hip_math_constants.h"};

// CUDA's device headers that NVRTC compiles (checked against CUDA 13's toolkit); the libcu++
// ones (cuda/...) come from the toolkit's cccl folder.
constexpr std::array<std::string_view, 26> k_cuda_allowed{"cuda_runtime.h",
                                                          "cuda_fp16.h",
                                                          "cuda_bf16.h",
                                                          "cuda_fp8.h",
                                                          "cuda_fp6.h",
                                                          "cuda_fp4.h",
                                                          "cuda_pipeline.h",
                                                          "cuda_awbarrier.h",
                                                          "cooperative_groups.h",
                                                          "cooperative_groups/reduce.h",
                                                          "cooperative_groups/scan.h",
                                                          "cooperative_groups/memcpy_async.h",
                                                          "mma.h",
                                                          "math_constants.h",
                                                          "vector_types.h",
                                                          "vector_functions.h",
                                                          "device_launch_parameters.h",
                                                          "cuComplex.h",
                                                          "cuda/barrier",
                                                          "cuda/pipeline",
                                                          "cuda/std/array",
                                                          "cuda/std/cmath",
                                                          "cuda/std/cstdint",
                                                          "cuda/std/limits",
                                                          "cuda/std/type_traits",
                                                          "cuda/std/utility"};

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// One logical character of the source after line splices, with the physical line it is on.
struct text {
  std::string chars;
  std::vector<int> lines;
};

// Removes backslash-newline splices (the preprocessor's first step after trigraphs) and then
// comments, keeping string and character literals intact. A comment becomes one space.
text normalise(std::string_view in) {
  text spliced;
  int line = 1;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\\') {
      std::size_t j = i + 1;
      if (j < in.size() && in[j] == '\r') ++j;
      if (j < in.size() && in[j] == '\n') {
        i = j;
        ++line;
        continue;
      }
    }
    spliced.chars += in[i];
    spliced.lines.push_back(line);
    if (in[i] == '\n') ++line;
  }
  text out;
  const std::string& s = spliced.chars;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"' || c == '\'') {  // a literal, to its closing quote
      std::size_t j = i + 1;
      while (j < s.size() && s[j] != c && s[j] != '\n')
        j += (s[j] == '\\') ? 2 : 1;
      j = std::min(j, s.size() - 1);
      for (std::size_t k = i; k <= j; ++k) {
        out.chars += s[k];
        out.lines.push_back(spliced.lines[k]);
      }
      i = j;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n')
        ++i;
      if (i < s.size()) {
        out.chars += '\n';
        out.lines.push_back(spliced.lines[i]);
      }
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const int at = spliced.lines[i];
      std::size_t j = s.find("*/", i + 2);
      // Newlines inside the comment are kept so that line-based directive parsing still sees
      // the line structure of code around it.
      for (std::size_t k = i; k < std::min(j, s.size()); ++k) {
        if (s[k] == '\n') {
          out.chars += '\n';
          out.lines.push_back(spliced.lines[k]);
        }
      }
      out.chars += ' ';
      out.lines.push_back(at);
      i = (j == std::string::npos) ? s.size() : j + 1;
    } else {
      out.chars += c;
      out.lines.push_back(spliced.lines[i]);
    }
  }
  return out;
}

std::string allowed_list(kernel_language language) {
  return comma_joined(allowed_kernel_includes(language));
}

}  // namespace

std::span<const std::string_view> allowed_kernel_includes(kernel_language language) {
  switch (language) {
    case kernel_language::cuda:
      return k_cuda_allowed;
    case kernel_language::opencl:
      return {};  // OpenCL C has no headers of its own: anything included is a host file
    case kernel_language::hip:
      break;
  }
  return k_hip_allowed;
}

std::optional<std::string> check_kernel_source(std::string_view source, kernel_language language) {
  const auto allowed_headers = allowed_kernel_includes(language);
  const text t = normalise(source);
  const std::string& s = t.chars;
  auto where = [&](std::size_t i) {
    return "line " + std::to_string(t.lines.empty() ? 1 : t.lines[std::min(i, t.lines.size() - 1)]);
  };

  // __has_include and its kin probe for host files even outside directives.
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 13, "__has_include") == 0 && (i == 0 || !ident_char(s[i - 1]))) {
      return where(i) + ": __has_include is not allowed in kernel source";
    }
  }

  std::size_t pos = 0;
  while (pos < s.size()) {
    const std::size_t eol = std::min(s.find('\n', pos), s.size());
    std::size_t i = pos;
    while (i < eol &&
           (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v')) {
      ++i;
    }
    bool directive = false;
    if (i < eol && s[i] == '#') {
      directive = true;
      ++i;
    } else if (i + 1 < eol && s[i] == '%' && s[i + 1] == ':') {  // digraph for #
      directive = true;
      i += 2;
    }
    if (directive) {
      while (i < eol && (s[i] == ' ' || s[i] == '\t'))
        ++i;
      std::size_t j = i;
      while (j < eol && ident_char(s[j]))
        ++j;
      const std::string_view name(s.data() + i, j - i);
      if (name == "include_next" || name == "import" || name == "embed") {
        return where(i) + ": #" + std::string(name) + " is not allowed in kernel source";
      }
      if (name == "include") {
        while (j < eol && (s[j] == ' ' || s[j] == '\t'))
          ++j;
        const char open = j < eol ? s[j] : '\0';
        const char close = open == '<' ? '>' : open == '"' ? '"' : '\0';
        if (!close) {
          return where(i) +
                 ": #include must name a header in <> or \"\" (computed includes "
                 "are not allowed)";
        }
        const std::size_t end = s.find(close, j + 1);
        if (end == std::string::npos || end > eol) {
          return where(i) + ": malformed #include";
        }
        const std::string_view header(s.data() + j + 1, end - j - 1);
        bool allowed = false;
        for (auto h : allowed_headers)
          allowed |= (h == header);
        if (!allowed && allowed_headers.empty()) {
          return where(i) + ": #include " + std::string(1, open) + std::string(header) +
                 std::string(1, close) + " is not allowed; " + std::string(to_string(language)) +
                 " kernels may include nothing (put what you need in the source)";
        }
        if (!allowed) {
          return where(i) + ": #include " + std::string(1, open) + std::string(header) +
                 std::string(1, close) + " is not allowed; " + std::string(to_string(language)) +
                 " kernels may include only the runtime's headers (" + allowed_list(language) + ")";
        }
      }
    }
    pos = eol + 1;
  }
  return std::nullopt;
}

}  // namespace kernelscan
