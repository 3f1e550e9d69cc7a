#include "engine/hip/rtc_headers.hpp"

#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace kernelscan::gpu {
namespace {

namespace fs = std::filesystem;

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// One spelling per folder, so that folders are compared and listed once.
std::string normal(const fs::path& p) {
  std::error_code ec;
  fs::path n = fs::weakly_canonical(p, ec);
  if (ec) n = p.lexically_normal();
  std::string s = n.string();
  while (s.size() > 1 && s.back() == '/')
    s.pop_back();
  return s;
}

struct install {
  std::vector<fs::path> dirs;
  std::string from;
};

std::optional<std::string> env_of(const header_search& s, std::string_view name) {
  if (s.env) return s.env(name);
  const char* v = std::getenv(std::string(name).c_str());
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

// Installs in the order of the search: those beside each library, the environment's, then the
// defaults. `wheels`: also the nvidia/*/include folders of Python wheels beside a library.
std::vector<install> installs(const header_search& s, std::initializer_list<const char*> env_names,
                              bool wheels) {
  std::vector<install> out;
  for (const auto& lib : s.libraries) {
    if (lib.empty()) continue;
    // Through symbolic links (/lib -> /usr/lib) to the folder the library is in.
    const fs::path dir = normal(fs::path(lib).parent_path());
    const std::string from = "beside " + lib;
    out.push_back({{dir.parent_path() / "include"}, from});
    const fs::path parts = dir.parent_path().parent_path();  // site-packages/nvidia
    if (wheels && parts.filename() == "nvidia" && is_dir(parts)) {
      install wheel{{}, from + " (Python wheels in " + parts.string() + ")"};
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(parts, ec)) {
        if (is_dir(entry.path() / "include")) wheel.dirs.push_back(entry.path() / "include");
      }
      std::sort(wheel.dirs.begin(), wheel.dirs.end());
      out.push_back(std::move(wheel));
    }
    out.push_back({{dir.parent_path().parent_path() / "include"}, from});
  }
  for (const char* name : env_names) {
    if (auto root = env_of(s, name))
      out.push_back({{fs::path(*root) / "include"}, "$" + std::string(name)});
  }
  for (const auto& d : s.defaults)
    out.push_back({{fs::path(d)}, "the default " + d});
  return out;
}

const install* first_with(const std::vector<install>& all, const fs::path& marker) {
  for (const auto& i : all) {
    for (const auto& d : i.dirs) {
      if (is_file(d / marker)) return &i;
    }
  }
  return nullptr;
}

void add_once(std::vector<std::string>& dirs, const fs::path& d) {
  std::string n = normal(d);
  if (std::find(dirs.begin(), dirs.end(), n) == dirs.end()) dirs.push_back(std::move(n));
}

}  // namespace

header_search cuda_header_search(std::vector<std::string> libraries,
                                 const std::string& build_include_dir) {
  header_search s;
  s.libraries = std::move(libraries);
  s.defaults = {"/usr/local/cuda/include"};
  if (!build_include_dir.empty()) s.defaults.push_back(build_include_dir);
  return s;
}

header_search rocm_header_search(std::vector<std::string> libraries) {
  header_search s;
  s.libraries = std::move(libraries);
  s.defaults = {"/opt/rocm/include", "/usr/include"};
  return s;
}

header_dirs find_cuda_headers(const header_search& search) {
  const auto all = installs(search, {"CUDA_HOME", "CUDA_PATH"}, true);
  const install* found = first_with(all, "cuda_fp16.h");
  if (!found) return {};
  header_dirs out;
  out.from = found->from;
  for (const auto& d : found->dirs) {
    if (!is_dir(d)) continue;
    add_once(out.dirs, d);
    // CUDA 13 keeps libcu++ (cuda/std/...), which cooperative_groups includes, apart.
    if (is_dir(d / "cccl" / "cuda")) add_once(out.dirs, d / "cccl");
  }
  return out;
}

header_dirs find_rocm_headers(const header_search& search) {
  const auto all = installs(search, {"ROCM_PATH", "HIP_PATH"}, false);
  const install* found = first_with(all, fs::path("hip") / "hip_runtime.h");
  if (!found) return {};
  header_dirs out;
  out.from = found->from;
  std::vector<std::string> system;
  for (const auto& d : search.system_dirs)
    system.push_back(normal(d));
  for (const auto& d : found->dirs) {
    if (!is_file(d / "hip" / "hip_runtime.h")) continue;
    const std::string n = normal(d);
    if (std::find(system.begin(), system.end(), n) != system.end()) {
      out.from += " (" + n + ", which the compiler searches already)";
      continue;
    }
    add_once(out.dirs, d);
  }
  return out;
}

std::string loaded_library(std::string_view prefix) {
  struct search {
    std::string_view prefix;
    std::string found;
  } s{prefix, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* wanted = static_cast<search*>(data);
        if (!info->dlpi_name || !*info->dlpi_name) return 0;
        const std::string_view name = info->dlpi_name;
        const auto slash = name.rfind('/');
        const std::string_view file =
            slash == std::string_view::npos ? name : name.substr(slash + 1);
        if (file.substr(0, wanted->prefix.size()) != wanted->prefix) return 0;
        wanted->found = std::string(name);
        return 1;
      },
      &s);
  return s.found;
}

}  // namespace kernelscan::gpu
