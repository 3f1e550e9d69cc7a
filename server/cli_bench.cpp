#include "server/cli_bench.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "engine/expression.hpp"
#include "engine/text_list.hpp"

namespace kernelscan {
namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

bool is_identifier(std::string_view s) {
  return !s.empty() && ident_start(s[0]) && std::all_of(s.begin(), s.end(), ident_char);
}

// The source with comments blanked out (newlines kept), so that declarations read plainly.
std::string without_comments(const std::string& src) {
  std::string out = src;
  for (std::size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i] == '"' || out[i] == '\'') {  // a literal: skip to its end
      const char quote = out[i];
      for (++i; i < out.size() && out[i] != quote; ++i)
        if (out[i] == '\\') ++i;
      continue;
    }
    if (out[i] == '/' && out[i + 1] == '/') {
      for (; i < out.size() && out[i] != '\n'; ++i)
        out[i] = ' ';
    } else if (out[i] == '/' && out[i + 1] == '*') {
      std::size_t j = i;
      for (; j < out.size() && !(out[j] == '*' && j + 1 < out.size() && out[j + 1] == '/'); ++j)
        if (out[j] != '\n') out[j] = ' ';
      for (std::size_t k = j; k < std::min(j + 2, out.size()); ++k)
        out[k] = ' ';
      i = j + 1;
    }
  }
  return out;
}

// The directive of a line that starts with '#' ("if", "endif", ...) and what follows it, or
// nothing for another line. `line` has its comments blanked.
std::optional<std::pair<std::string, std::string>> directive_of(std::string_view line) {
  const std::string text = trim(line);
  if (text.empty() || text[0] != '#') return std::nullopt;
  std::size_t i = 1;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
    ++i;
  std::size_t j = i;
  while (j < text.size() && ident_char(text[j]))
    ++j;
  return std::make_pair(text.substr(i, j - i), trim(std::string_view(text).substr(j)));
}

// The source with the code that `#if 0` (or the `#else` of `#if 1`) leaves out blanked
// (newlines kept): a kernel kept there for reference, under the same name as the one compiled,
// is not the kernel. Other conditions depend on macros and are read as they stand.
std::string without_disabled_code(const std::string& src) {
  std::string out = src;
  // Per open #if: whether the code it now covers is left out, and whether a constant
  // condition decides it (only those are known here).
  struct open_if {
    bool constant;
    bool taken;  // the branch now read is the one compiled
  };
  std::vector<open_if> open;
  const auto skipping = [&] {
    return std::any_of(open.begin(), open.end(), [](const open_if& o) { return !o.taken; });
  };
  std::size_t start = 0;
  while (start < out.size()) {
    std::size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    const bool was_skipping = skipping();
    if (const auto d = directive_of(std::string_view(out).substr(start, end - start))) {
      const auto& [name, rest] = *d;
      if (name == "if" || name == "ifdef" || name == "ifndef") {
        const bool constant = name == "if" && (rest == "0" || rest == "1");
        open.push_back({constant, !constant || rest == "1"});
      } else if ((name == "else" || name == "elif") && !open.empty() && open.back().constant) {
        // `#if 0 ... #elif X`: X decides, unknown here, so read it; `#if 1 ... #else`: not.
        open.back() = {name == "else", !open.back().taken};
      } else if (name == "endif" && !open.empty()) {
        open.pop_back();
      }
    }
    // A line inside a left-out branch is blanked, its directives too; the #if, #else or
    // #endif that opens or closes one is kept.
    if (was_skipping && skipping()) {
      for (std::size_t i = start; i < end; ++i)
        out[i] = ' ';
    }
    start = end + 1;
  }
  return out;
}

// Splits at commas outside (), <>, [] and {}.
std::vector<std::string> split_top_level(std::string_view s) {
  std::vector<std::string> parts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '<' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == '>' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  parts.push_back(trim(s.substr(start)));
  return parts;
}

bool has_word(std::string_view text, std::string_view word) {
  for (std::size_t at = text.find(word); at != std::string_view::npos;
       at = text.find(word, at + 1)) {
    const bool left = at == 0 || !ident_char(text[at - 1]);
    const bool right = at + word.size() >= text.size() || !ident_char(text[at + word.size()]);
    if (left && right) return true;
  }
  return false;
}

kernel_param parse_param(const std::string& text, std::size_t position, const std::string& entry,
                         const std::string& flag) {
  const std::string where =
      "parameter " + std::to_string(position + 1) + " of " + entry + " (\"" + text + "\")";
  kernel_param p;
  std::vector<std::string> words;
  bool const_before_star = false;
  int stars = 0;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (ident_start(c)) {
      std::size_t j = i;
      while (j < text.size() && ident_char(text[j]))
        ++j;
      const std::string w = text.substr(i, j - i);
      i = j;
      if (w == "const") {
        if (stars == 0) const_before_star = true;
      } else if (w == "__constant" || w == "constant") {
        const_before_star = true;
      } else if (w == "__local" || w == "local") {
        p.local = true;
      } else if (w == "volatile" || w == "__restrict__" || w == "__restrict" || w == "restrict" ||
                 w == "__global" || w == "global" || w == "__private" || w == "private" ||
                 w == "struct") {
      } else {
        words.push_back(w);
      }
    } else if (c == '*' || c == '[') {
      ++stars;
      i = c == '[' ? text.find(']', i) + 1 : i + 1;
      if (i == 0) break;
    } else if (c == '&') {
      throw bench_error(flag, where + ": a reference parameter cannot be bound; pass a pointer");
    } else if (c == '<') {  // a template argument list belongs to the type
      const std::size_t end = text.find('>', i);
      if (end == std::string::npos) throw bench_error(flag, where + ": cannot read its type");
      if (!words.empty()) words.back() += text.substr(i, end + 1 - i);
      i = end + 1;
    } else {
      ++i;
    }
  }
  if (stars > 1) throw bench_error(flag, where + ": a pointer to a pointer cannot be bound");
  if (words.size() < 2) {
    throw bench_error(flag, where + ": needs a type and a name");
  }
  p.name = words.back();
  words.pop_back();
  for (std::size_t i = 0; i < words.size(); ++i)
    p.type += (i ? " " : "") + words[i];
  p.pointer = stars == 1;
  p.is_const = p.pointer && const_before_star;
  return p;
}

// The kernels' element type names, as the job spec spells them.
std::optional<std::string> dtype_of(const std::string& type) {
  static const std::map<std::string, std::string> k_types{
      {"float", "f32"},
      {"double", "f64"},
      {"half", "f16"},
      {"__half", "f16"},
      {"_Float16", "f16"},
      {"__nv_bfloat16", "bf16"},
      {"__hip_bfloat16", "bf16"},
      {"hip_bfloat16", "bf16"},
      {"__bf16", "bf16"},
      {"int", "i32"},
      {"signed", "i32"},
      {"signed int", "i32"},
      {"int32_t", "i32"},
      {"unsigned", "u32"},
      {"unsigned int", "u32"},
      {"uint", "u32"},
      {"uint32_t", "u32"},
      {"long", "i64"},
      {"long int", "i64"},
      {"long long", "i64"},
      {"long long int", "i64"},
      {"int64_t", "i64"},
      // Unsigned 64-bit values travel as i64: the same bytes for every value a sweep can give.
      {"ulong", "i64"},
      {"unsigned long", "i64"},
      {"unsigned long int", "i64"},
      {"unsigned long long", "i64"},
      {"unsigned long long int", "i64"},
      {"uint64_t", "i64"},
      {"size_t", "i64"},
      {"ptrdiff_t", "i64"},
      {"char", "i8"},
      {"signed char", "i8"},
      {"int8_t", "i8"},
      {"unsigned char", "u8"},
      {"uchar", "u8"},
      {"uint8_t", "u8"},
  };
  const auto it = k_types.find(type);
  if (it == k_types.end()) return std::nullopt;
  return it->second;
}

// 16-bit integers, which no element type of a job has.
bool is_16_bit_integer(const std::string& type) {
  static const std::set<std::string> k_types{
      "short",  "short int",          "signed short", "signed short int", "unsigned short",
      "ushort", "unsigned short int", "int16_t",      "uint16_t"};
  return k_types.count(type) > 0;
}

// A vector type (OpenCL float4, CUDA/HIP int2): its element type and its width in elements as
// it lies in memory (an OpenCL 3-vector takes the room of four).
struct vector_type {
  std::string element;
  int width = 0;
};
std::optional<vector_type> vector_of(const std::string& type, const std::string& language) {
  static const std::set<std::string> k_elements{"char",   "uchar",    "short",    "ushort", "int",
                                                "uint",   "long",     "ulong",    "half",   "float",
                                                "double", "longlong", "ulonglong"};
  std::size_t digits = type.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(type[digits - 1])))
    --digits;
  const std::string element = type.substr(0, digits);
  const std::string width = type.substr(digits);
  const bool opencl = language == "opencl";
  const std::set<std::string> widths = opencl ? std::set<std::string>{"2", "3", "4", "8", "16"}
                                              : std::set<std::string>{"2", "3", "4"};
  if (!k_elements.count(element) || !widths.count(width)) return std::nullopt;
  const int n = std::stoi(width);
  return vector_type{element == "longlong"    ? "long"
                     : element == "ulonglong" ? "ulong"
                                              : element,
                     opencl && n == 3 ? 4 : n};
}

// The extension of `path`'s file name, in lower case (kernel.CL is OpenCL too).
std::string file_extension(const std::string& path) {
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A number, when the whole of `s` is one.
std::optional<json> number_of(const std::string& s) {
  std::int64_t i = 0;
  if (auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
      ec == std::errc() && end == s.data() + s.size()) {
    return json(i);
  }
  double d = 0;
  if (auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
      ec == std::errc() && end == s.data() + s.size() && !s.empty()) {
    return json(d);
  }
  return std::nullopt;
}

// NAME=TEXT, NAME an identifier.
std::pair<std::string, std::string> name_value(const std::string& text, const std::string& flag,
                                               const char* what) {
  const auto eq = text.find('=');
  const std::string name = trim(text.substr(0, eq == std::string::npos ? 0 : eq));
  if (eq == std::string::npos || !is_identifier(name) || trim(text.substr(eq + 1)).empty()) {
    throw bench_error(flag, "\"" + text + "\": expected " + what);
  }
  return {name, trim(text.substr(eq + 1))};
}

class spec_builder {
 public:
  spec_builder(const bench_options& o, const std::string& source) : m_opts(o), m_source(source) {}

  json build() {
    language();
    if (m_opts.entries.empty()) {
      throw bench_error("KERNEL", "name the kernel(s) of " + m_opts.file + " to measure");
    }
    std::set<std::string> seen;
    for (const auto& e : m_opts.entries) {
      if (!is_identifier(e)) throw bench_error("KERNEL", "\"" + e + "\" is not a kernel name");
      if (!seen.insert(e).second) throw bench_error("KERNEL", e + " is named twice");
    }
    sweep();
    dims_by_kernel("--block", m_opts.blocks, m_blocks);
    dims_by_kernel("--grid", m_opts.grids, m_grids);
    for (const auto& s : m_opts.sizes) {
      const auto eq = s.find('=');
      if (eq != std::string::npos && is_identifier(trim(s.substr(0, eq)))) {
        auto [name, expr] = name_value(s, "--size", "BUFFER=ELEMENTS or ELEMENTS");
        m_sizes[name] = expr;
      } else if (trim(s).empty()) {
        throw bench_error("--size", "is empty");
      } else {
        m_default_size = trim(s);
      }
    }
    for (const auto& v : m_opts.values) {
      auto [name, expr] = name_value(v, "--value", "PARAMETER=VALUE");
      if (!m_values.emplace(name, expr).second) {
        throw bench_error("--value", name + " is given twice");
      }
    }
    for (const auto& [name, expr] : m_values) {
      if (m_sweep.contains(name) || m_aliases.count(name)) {
        throw bench_error("--value", name +
                                         " is a sweep parameter: its value at each point is "
                                         "the sweep's (--sweep " +
                                         name + "=...)");
      }
    }
    m_outputs.insert(m_opts.outputs.begin(), m_opts.outputs.end());
    m_scratch.insert(m_opts.scratch.begin(), m_opts.scratch.end());
    m_inouts.insert(m_opts.inouts.begin(), m_opts.inouts.end());

    json spec = json::object();
    spec["name"] = m_opts.name.empty()
                       ? base_name(m_opts.file) + ": " + comma_joined(m_opts.entries)
                       : m_opts.name;
    if (!m_opts.engine.empty()) spec["engine"] = m_opts.engine;
    if (!m_opts.device.empty()) {
      spec["device"] = device_placement(m_opts.device);
    }
    for (const auto& l : m_opts.labels) {
      const auto [key, value] = label_pair(l);
      spec["labels"][key] = value;
    }

    std::vector<json> kernels;
    for (const auto& e : m_opts.entries)
      kernels.push_back(kernel_of(e));
    json kernel = kernels.front();
    if (!m_opts.flops.empty()) kernel["flops"] = expression(m_opts.flops, "--flops");
    if (!m_opts.bytes.empty()) kernel["bytes"] = expression(m_opts.bytes, "--bytes");
    for (const auto& o : m_opts.compile_options)
      kernel["compile_options"].push_back(o);
    if (!m_opts.reference.empty()) kernel["reference"] = reference();
    // Each buffer a flag names is not one `clash` names, and is a pointer parameter.
    const auto check_buffers = [&](const char* flag, const std::set<std::string>& names,
                                   const std::set<std::string>& clash, const char* clash_text) {
      for (const auto& name : names) {
        if (clash.count(name)) throw bench_error(flag, name + clash_text);
        if (!m_buffers.count(name)) {
          throw bench_error(
              flag, name + " is not a pointer parameter of " + comma_joined(m_opts.entries));
        }
      }
    };
    check_buffers("--output", m_outputs, {}, "");
    check_buffers("--inout", m_inouts, m_scratch, " is a --scratch too");
    check_buffers("--scratch", m_scratch, m_outputs, " is an --output too");
    for (const auto& [name, expr] : m_values) {
      if (!m_scalars.count(name)) {
        throw bench_error("--value",
                          name + " is not a scalar parameter of " + comma_joined(m_opts.entries));
      }
    }
    for (const auto& [name, expr] : m_sizes) {
      if (!m_buffers.count(name)) {
        throw bench_error("--size",
                          name + " is not a pointer parameter of " + comma_joined(m_opts.entries));
      }
    }
    spec["kernel"] = kernel;
    if (kernels.size() > 1) {
      json variants = json::array();
      for (std::size_t i = 0; i < kernels.size(); ++i) {
        json v = {{"name", m_opts.entries[i]}, {"entry", m_opts.entries[i]}};
        for (const char* field : {"block", "grid", "args"}) {
          if (kernels[i][field] != kernel[field]) v[field] = kernels[i][field];
        }
        variants.push_back(std::move(v));
      }
      spec["variants"] = std::move(variants);
      if (!m_opts.baseline.empty()) {
        if (!seen.count(m_opts.baseline)) {
          throw bench_error("--baseline", m_opts.baseline + " is not one of the kernels (" +
                                              comma_joined(m_opts.entries) + ")");
        }
        spec["baseline"] = m_opts.baseline;
      }
    } else if (!m_opts.baseline.empty()) {
      throw bench_error("--baseline", "needs two or more kernels to compare");
    }
    spec["sweep"] = m_sweep;
    if (!m_opts.l2.empty()) spec["timing"]["l2"] = m_opts.l2;
    return spec;
  }

 private:
  void language() {
    const std::string ext = file_extension(m_opts.file);
    m_language = m_opts.language;
    if (m_language.empty()) {
      if (ext == "cu" || ext == "cuh") m_language = "cuda";
      if (ext == "hip") m_language = "hip";
      if (ext == "cl") m_language = "opencl";
    }
    if (m_language.empty()) {
      throw bench_error("--language", "needed: " + m_opts.file +
                                          " is not .cu, .hip or .cl (hip, cuda or opencl)");
    }
    if (m_language != "hip" && m_language != "cuda" && m_language != "opencl") {
      throw bench_error("--language", "\"" + m_language + "\" is not one of hip, cuda, opencl");
    }
  }

  // --sweep NAME=SPEC: a range or list of values makes NAME a sweep parameter; anything else is
  // an expression over other parameters (M=N), substituted where the name is used.
  void sweep() {
    std::vector<std::pair<std::string, std::string>> aliases;
    for (const auto& s : m_opts.sweeps) {
      auto [name, text] =
          name_value(s, "--sweep", "NAME=FROM..TO[:xMUL|:+STEP], NAME=V,V,... or NAME=EXPRESSION");
      if (m_sweep.contains(name) ||
          std::any_of(aliases.begin(), aliases.end(), [&](auto& a) { return a.first == name; })) {
        throw bench_error("--sweep", name + " is given twice");
      }
      if (auto v = sweep_values(text, name)) {
        m_sweep[name] = *v;
      } else {
        aliases.emplace_back(name, text);
      }
    }
    if (m_sweep.empty() && !aliases.empty()) {
      const auto& [name, text] = aliases.front();
      throw bench_error("--sweep", name + "=" + text +
                                       ": not a number, a range FROM..TO or a list V,V,...; as an "
                                       "expression of other parameters it needs at least one "
                                       "parameter with values (N=1024..8192:x2)");
    }
    if (m_sweep.empty()) {
      throw bench_error("--sweep", "needed: at least one parameter with values (N=1024..8192:x2)");
    }
    // Aliases may name each other (K=M, M=N): substitute until only sweep parameters remain.
    for (auto& [name, text] : aliases)
      m_aliases[name] = text;
    for (int round = 0;; ++round) {
      bool changed = false;
      for (auto& [name, text] : m_aliases) {
        const std::string next = substitute(text);
        changed |= next != text;
        text = next;
      }
      const bool circle =
          round == 16 || std::any_of(m_aliases.begin(), m_aliases.end(),
                                     [&](const auto& a) { return has_word(a.second, a.first); });
      if (circle) {
        throw bench_error("--sweep", "the expressions refer to each other in a circle");
      }
      if (!changed) break;
    }
    // Each expression, now over the parameters with values only, must make sense over them.
    std::vector<std::string> names;
    for (const auto& [name, values] : m_sweep.items())
      names.push_back(name);
    for (const auto& [name, text] : aliases) {
      try {
        (void)kernelscan::expression(m_aliases.at(name), names);
      } catch (const expression_error& e) {
        throw bench_error("--sweep", name + "=" + text + ": " + e.what());
      }
    }
  }

  static std::optional<json> sweep_values(const std::string& text, const std::string& name) {
    const auto dots = text.find("..");
    if (dots != std::string::npos) {
      const std::string from = trim(text.substr(0, dots));
      std::string to = trim(text.substr(dots + 2));
      std::string step = "+1";
      if (const auto colon = to.find(':'); colon != std::string::npos) {
        step = trim(to.substr(colon + 1));
        to = trim(to.substr(0, colon));
      }
      const auto f = number_of(from), t = number_of(to);
      const bool mul = !step.empty() && (step[0] == 'x' || step[0] == '*');
      const auto s = number_of(step.empty()              ? step
                               : (mul || step[0] == '+') ? step.substr(1)
                                                         : step);
      if (!f || !t || !s) {
        throw bench_error("--sweep", name + "=" + text +
                                         ": expected FROM..TO, FROM..TO:xMUL or FROM..TO:+STEP "
                                         "with numbers");
      }
      return json{{"from", *f}, {"to", *t}, {mul ? "mul" : "step", *s}};
    }
    const auto parts = split_top_level(text);
    if (parts.size() == 1 && !number_of(parts.front())) return std::nullopt;  // an expression
    // A list: every value a number, and said which one is not.
    json list = json::array();
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const auto n = number_of(parts[i]);
      if (!n) {
        throw bench_error(
            "--sweep",
            name + "=" + text + ": value " + std::to_string(i + 1) +
                (parts[i].empty() ? " is empty" : ", \"" + parts[i] + "\", is not a number") +
                " (a list is V,V,...; an expression, as M=2*N, has no "
                "top-level comma)");
      }
      list.push_back(*n);
    }
    return list;
  }

  // `text` with every alias name replaced by its expression in parentheses.
  std::string substitute(const std::string& text) const {
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
      if (ident_start(text[i]) && (i == 0 || !ident_char(text[i - 1]))) {
        std::size_t j = i;
        while (j < text.size() && ident_char(text[j]))
          ++j;
        const std::string word = text.substr(i, j - i);
        const auto it = m_aliases.find(word);
        if (it == m_aliases.end()) {
          out += word;
        } else if (is_identifier(it->second) || number_of(it->second)) {
          out += it->second;
        } else {
          out += "(" + it->second + ")";
        }
        i = j;
      } else {
        out += text[i++];
      }
    }
    return out;
  }

  // An integer or an expression, as a spec field takes it.
  json expression(const std::string& text, const std::string& flag) const {
    const std::string t = trim(text);
    if (t.empty()) throw bench_error(flag, "is empty");
    if (auto n = number_of(t)) return *n;
    return substitute(t);
  }

  void dims_by_kernel(const std::string& flag, const std::vector<std::string>& given,
                      std::map<std::string, json>& out) {
    for (const auto& g : given) {
      std::string kernel = "";
      std::string text = g;
      if (const auto eq = g.find('='); eq != std::string::npos) {
        kernel = trim(g.substr(0, eq));
        text = g.substr(eq + 1);
        const bool known = std::find(m_opts.entries.begin(), m_opts.entries.end(), kernel) !=
                               m_opts.entries.end() ||
                           kernel == m_opts.reference;
        if (!known) {
          throw bench_error(flag, "\"" + kernel + "\" is not one of the kernels (" +
                                      comma_joined(m_opts.entries) + ")");
        }
      }
      out[kernel] =
          launch_dims(text, flag, [&](const std::string& size) { return expression(size, flag); });
    }
  }

  json dims_of(const std::string& kernel, const std::map<std::string, json>& given,
               const std::string& flag, const char* example) const {
    if (auto it = given.find(kernel); it != given.end()) return it->second;
    if (auto it = given.find(""); it != given.end()) return it->second;
    throw bench_error(flag, "needed for " + kernel + " (" + example + ")");
  }

  json kernel_of(const std::string& entry) {
    const auto params = kernel_signature(m_source, entry, "KERNEL");
    json args = json::array();
    // Without --output, the buffers written are the non-const pointers; that tells them apart
    // only where some pointer is const, or where there is one buffer (written in place).
    const bool any_const = std::any_of(params.begin(), params.end(), [](const kernel_param& p) {
      return p.pointer && !p.local && p.is_const;
    });
    const bool one_buffer = std::count_if(params.begin(), params.end(), [](const kernel_param& p) {
                              return p.pointer && !p.local;
                            }) == 1;
    const bool outputs_told = any_const || one_buffer;
    // --output or --inout name the buffers written; without them, the non-const pointers are.
    const bool written_told = !m_opts.outputs.empty() || !m_opts.inouts.empty();
    for (const auto& p : params) {
      if (!p.pointer) m_scalars.insert(p.name);
      json a = {{"name", p.name}};
      std::string type;
      // A buffer of vectors is a buffer of their elements, `width` of them per vector.
      int width = 1;
      const auto vector = vector_of(p.type, m_language);
      if (vector && !p.pointer) {
        throw bench_error("KERNEL", "parameter " + p.name + " of " + entry + " has type " + p.type +
                                        ", a vector, which bench cannot pass by value; pass "
                                        "its elements, or a buffer");
      }
      const std::string scalar_type = vector ? vector->element : p.type;
      if (is_16_bit_integer(scalar_type)) {
        throw bench_error("KERNEL", "parameter " + p.name + " of " + entry + " has type " + p.type +
                                        ": 16-bit integers cannot be bound (a job's integer "
                                        "types are 8, 32 and 64 bits wide: char, int, long and "
                                        "their unsigned kinds)");
      }
      if (auto t = dtype_of(scalar_type)) {
        type = *t;
        if (vector) width = vector->width;
      } else if (!m_opts.dtype.empty()) {
        type = m_opts.dtype;
      } else {
        throw bench_error("--dtype", "needed: parameter " + p.name + " of " + entry +
                                         " has type \"" + p.type +
                                         "\", which is not a built-in type (f32, f16, ...)");
      }
      if (p.pointer) {
        m_buffers.insert(p.name);
        a["type"] = type + "*";
        // Local memory is sized per work-group, never like the global buffers: the --size for
        // every buffer does not apply to it.
        const auto size = m_sizes.count(p.name) ? m_sizes.at(p.name)
                          : p.local             ? std::string()
                                                : m_default_size;
        if (size.empty() && p.local) {
          throw bench_error("--size", "needed for local buffer " + p.name + " of " + entry +
                                          " (--size " + p.name +
                                          "=ELEMENTS per work-group; a --size without a name "
                                          "sizes the global buffers only)");
        }
        if (size.empty()) {
          throw bench_error("--size", "needed for buffer " + p.name + " of " + entry + " (--size " +
                                          p.name +
                                          "=ELEMENTS, or --size ELEMENTS for every "
                                          "buffer)");
        }
        a["count"] = expression(size, "--size");
        if (width > 1) {  // --size counts vectors; the buffer holds their elements
          const json vectors = a["count"];
          a["count"] =
              vectors.is_number_integer()
                  ? json(width * vectors.get<std::int64_t>())
                  : json(std::to_string(width) + "*(" +
                         (vectors.is_string() ? vectors.get<std::string>() : vectors.dump()) + ")");
        }
        if (p.local) {
          a["local"] = true;
        } else if (m_scratch.count(p.name)) {
          a["scratch"] = true;
        } else if (m_inouts.count(p.name)) {
          a["output"] = true;
          a["init"] = "random";
        } else if (written_told ? m_outputs.count(p.name) > 0 : !p.is_const) {
          if (!written_told && !outputs_told) {
            throw bench_error("--output",
                              "needed: no pointer of " + entry +
                                  " is const, so which buffers it writes cannot be told; name "
                                  "them (--output " +
                                  p.name + ")");
          }
          a["output"] = true;
          // A kernel's only buffer, written, is written in place: it reads what is there. As the
          // unwritten NaN that an output starts as, the reference would answer NaN too, which any
          // output of NaN matches; it starts with data instead.
          if (!written_told && one_buffer) a["init"] = "random";
        }
      } else if (m_values.count(p.name)) {
        a["type"] = type;
        a["value"] = expression(m_values.at(p.name), "--value");
      } else if (m_sweep.contains(p.name) || m_aliases.count(p.name)) {
        a["type"] = type;
        a["value"] = substitute(p.name);
      } else {
        throw bench_error("--value", "needed for parameter " + p.name + " of " + entry +
                                         ": no sweep parameter has its name (--value " + p.name +
                                         "=EXPRESSION)");
      }
      args.push_back(std::move(a));
    }
    return {{"op", "custom"},
            {"language", m_language},
            {"source", m_source},
            {"entry", entry},
            {"block", dims_of(entry, m_blocks, "--block", "--block 256, or --block 16,16")},
            {"grid", dims_of(entry, m_grids, "--grid", "in blocks: --grid 'cdiv(N,256)'")},
            {"args", std::move(args)}};
  }

  // "(float* x, int n)": a kernel's parameters as a message shows them.
  static std::string parameter_list(const std::vector<kernel_param>& params) {
    std::string out;
    for (const auto& p : params) {
      out += (out.empty() ? "" : ", ") + std::string(p.local ? "local " : "") + p.type +
             (p.pointer ? "* " : " ") + p.name;
    }
    return "(" + out + ")";
  }

  json reference() const {
    const std::string& r = m_opts.reference;
    if (!r.empty() && r.front() == '{') {
      json ref = json::parse(r, nullptr, false);
      if (ref.is_discarded() || !ref.is_object()) {
        throw bench_error("--reference", "is not a JSON object");
      }
      for (const char* size : {"m", "n", "k"}) {
        if (ref.contains(size) && ref[size].is_string()) {
          ref[size] = substitute(ref[size].get<std::string>());
        }
      }
      return ref;
    }
    if (!is_identifier(r)) {
      throw bench_error("--reference",
                        "\"" + r + "\": expected a kernel of " + m_opts.file + " or a JSON object");
    }
    // A reference kernel is launched with the kernel's arguments, in order.
    const auto ref = kernel_signature(m_source, r, "--reference");
    for (const auto& e : m_opts.entries) {
      const auto params = kernel_signature(m_source, e, "KERNEL");
      const bool same =
          std::equal(params.begin(), params.end(), ref.begin(), ref.end(),
                     [](const kernel_param& a, const kernel_param& b) {
                       return a.type == b.type && a.pointer == b.pointer && a.local == b.local;
                     });
      if (!same) {
        throw bench_error("--reference",
                          r + " takes " + parameter_list(ref) + " but " + e + " takes " +
                              parameter_list(params) +
                              ": a reference kernel of the file is launched with the kernel's "
                              "arguments, in order (or give a built-in op as a JSON object)");
      }
    }
    return {{"op", "custom"},
            {"language", m_language},
            {"source", m_source},
            {"entry", r},
            {"block", dims_of(r, m_blocks, "--block", "--block 256, or --block 16,16")},
            {"grid", dims_of(r, m_grids, "--grid", "in blocks: --grid 'cdiv(N,256)'")}};
  }

  const bench_options& m_opts;
  const std::string& m_source;
  std::string m_language;
  json m_sweep = json::object();
  std::map<std::string, std::string> m_aliases;
  std::map<std::string, json> m_blocks, m_grids;
  std::map<std::string, std::string> m_sizes, m_values;
  std::string m_default_size;
  std::set<std::string> m_outputs, m_scratch, m_inouts, m_buffers, m_scalars;
};

}  // namespace

json launch_dims(const std::string& text, const std::string& flag,
                 const std::function<json(const std::string&)>& size) {
  const auto parts = split_top_level(text);
  if (parts.size() > 3) throw bench_error(flag, "\"" + text + "\": at most three sizes, X,Y,Z");
  json dims = json::array();
  for (const auto& p : parts)
    dims.push_back(size(p));
  while (dims.size() < 3)
    dims.push_back(1);
  return dims;
}

json launch_dims(const std::string& text, const std::string& flag) {
  return launch_dims(text, flag, [&](const std::string& size) -> json {
    const std::string t = trim(size);
    if (t.empty()) throw bench_error(flag, "\"" + text + "\": a size is empty");
    if (auto n = number_of(t)) return *n;
    return t;
  });
}

std::pair<std::string, std::string> label_pair(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw bench_error("--label", "\"" + text + "\": expected KEY=VALUE");
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

json device_placement(const std::string& text) {
  if (text == "any") return "any";
  if (auto n = number_of(text); n && n->is_number_integer()) return *n;
  const auto slash = text.find('/');  // NODE/INDEX
  if (slash != std::string::npos && slash > 0) {
    if (auto n = number_of(text.substr(slash + 1)); n && n->is_number_integer()) {
      return {{"node", text.substr(0, slash)}, {"index", *n}};
    }
  }
  throw bench_error("--device", "\"" + text + "\": expected any, an index, or NODE/INDEX");
}

std::vector<kernel_param> kernel_signature(const std::string& source, const std::string& entry,
                                           const std::string& flag) {
  const std::string src = without_disabled_code(without_comments(source));
  for (std::size_t at = src.find(entry); at != std::string::npos; at = src.find(entry, at + 1)) {
    if ((at > 0 && ident_char(src[at - 1])) ||
        (at + entry.size() < src.size() && ident_char(src[at + entry.size()]))) {
      continue;
    }
    std::size_t open = at + entry.size();
    while (open < src.size() && std::isspace(static_cast<unsigned char>(src[open])))
      ++open;
    if (open >= src.size() || src[open] != '(') continue;
    // The declaration starts after the previous statement or block.
    const std::size_t stop = src.find_last_of(";{}", at);
    const std::string_view head(src.data() + (stop == std::string::npos ? 0 : stop + 1),
                                at - (stop == std::string::npos ? 0 : stop + 1));
    if (!has_word(head, "__global__") && !has_word(head, "__kernel") && !has_word(head, "kernel")) {
      continue;
    }
    int depth = 0;
    std::size_t close = open;
    for (; close < src.size(); ++close) {
      if (src[close] == '(') ++depth;
      if (src[close] == ')' && --depth == 0) break;
    }
    if (close >= src.size()) throw bench_error(flag, entry + ": its parameter list does not end");
    const std::string list = trim(std::string_view(src).substr(open + 1, close - open - 1));
    std::vector<kernel_param> params;
    if (list.empty() || list == "void") return params;
    const auto parts = split_top_level(list);
    for (std::size_t i = 0; i < parts.size(); ++i)
      params.push_back(parse_param(parts[i], i, entry, flag));
    return params;
  }
  throw bench_error(flag, entry +
                              " is not a kernel of the source (no __global__ or __kernel "
                              "function of that name)");
}

json bench_spec(const bench_options& opts, const std::string& source) {
  return spec_builder(opts, source).build();
}

json resolve_job_file(json spec, const std::function<std::string(const std::string&)>& read_file) {
  std::function<void(json&, const std::string&)> walk = [&](json& v, const std::string& path) {
    if (v.is_object()) {
      if (v.contains("source_file")) {
        const std::string field = path.empty() ? "source_file" : path + ".source_file";
        if (!v["source_file"].is_string()) throw bench_error(field, "must be a file name");
        if (v.contains("source")) {
          throw bench_error(field, "give source or source_file, not both");
        }
        v["source"] = read_file(v["source_file"].get<std::string>());
        v.erase("source_file");
      }
      for (auto& [key, child] : v.items())
        walk(child, path.empty() ? key : path + "." + key);
    } else if (v.is_array()) {
      for (std::size_t i = 0; i < v.size(); ++i)
        walk(v[i], path + "[" + std::to_string(i) + "]");
    }
  };
  walk(spec, "");
  return spec;
}

}  // namespace kernelscan
