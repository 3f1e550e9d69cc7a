#pragma once
// `kernelscan bench`: a job spec from a kernel source file and a few flags, so that profiling
// one's own kernels needs no hand-written JSON. The kernels' parameter lists are read from the
// source: pointer parameters become buffers (sized by --size, outputs the non-const ones or
// those --output names), integer and floating-point parameters bind to the sweep parameter of
// the same name or to --value. Two or more kernels become variants of one job, measured side by
// side. A JSON job file may stand in for the flags; its `source_file` fields are read in.
//
// Pure functions of their inputs (the CLI reads the files), so they are unit-tested alone.
// Errors: bench_error, naming the flag or argument at fault.

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "api/json.hpp"

namespace kernelscan {

class bench_error : public std::runtime_error {
 public:
  bench_error(std::string flag, const std::string& message)
      : std::runtime_error(flag + ": " + message), m_flag(std::move(flag)) {}
  const std::string& flag() const { return m_flag; }

 private:
  std::string m_flag;
};

struct bench_options {
  std::string file;                  // a kernel source (.cu, .hip, .cl) or a job file (.json)
  std::vector<std::string> entries;  // the kernels to measure, by name
  std::vector<std::string> sweeps;   // NAME=LO..HI:xF | LO..HI[:+S] | V,V,... | EXPR (an alias)
  std::vector<std::string> sizes;    // BUFFER=EXPR (elements), or EXPR for every other buffer
  std::vector<std::string> values;   // SCALAR=EXPR for parameters no sweep parameter names
  std::vector<std::string> outputs;  // buffers the kernels write
  std::vector<std::string> scratch;  // workspaces the kernels write, never compared
  std::vector<std::string> inouts;   // buffers read and written in place: random data in
  std::vector<std::string> blocks;   // [KERNEL=]X[,Y[,Z]]
  std::vector<std::string> grids;    // [KERNEL=]X[,Y[,Z]], in blocks
  std::vector<std::string> compile_options;
  std::vector<std::string> labels;  // KEY=VALUE
  std::string language;             // hip, cuda, opencl; default from the file's extension
  std::string dtype;  // element type of parameters whose type is not a built-in one (templates)
  std::string flops, bytes;  // expressions over the sweep parameters
  std::string reference;     // a kernel of the file, or a JSON object
  std::string baseline;      // one of the kernels
  std::string engine, device, name, l2;
  bool no_cache = false;  // measured afresh, not answered by an identical job's results
};

// A parameter of a kernel as its source declares it.
struct kernel_param {
  std::string name;
  std::string type;  // the type without qualifiers: "float", "unsigned int", "T"
  bool pointer = false;
  bool is_const = false;  // a pointer to const (or a __constant pointer): only read
  bool local = false;     // OpenCL __local: work-group memory
};

// The parameters of kernel `entry` (a __global__ function, or an OpenCL __kernel) in `source`.
// Throws bench_error (flag `flag`) when the kernel is not there or its list cannot be read.
std::vector<kernel_param> kernel_signature(const std::string& source, const std::string& entry,
                                           const std::string& flag);

// The job spec for `opts`, with `source` the text of opts.file.
json bench_spec(const bench_options& opts, const std::string& source);

// The job's `device` for --device: any, an index, or NODE/INDEX (a device of a fleet's node).
json device_placement(const std::string& text);

// A launch's --block or --grid, X[,Y[,Z]] padded with 1s to three: each size as `size` makes
// it, or (the two-argument form) a number, else an expression sent as its text. Throws
// bench_error naming `flag` for more than three sizes or an empty one.
json launch_dims(const std::string& text, const std::string& flag,
                 const std::function<json(const std::string&)>& size);
json launch_dims(const std::string& text, const std::string& flag);

// --label KEY=VALUE as its key and value; throws bench_error (flag --label) for anything else.
std::pair<std::string, std::string> label_pair(const std::string& text);

// A job file: its `source_file` fields (the kernel's, each variant's, the reference's) are
// replaced by `source` holding the text that `read_file` returns for the path (relative paths
// are the file's business). Throws bench_error naming the field.
json resolve_job_file(json spec, const std::function<std::string(const std::string&)>& read_file);

}  // namespace kernelscan
