# Configure test of the ROCm discovery (cmake/rocm.cmake) against prefixes laid out as ROCm lays
# them out (bin/hipcc, bin/offload-arch, lib/libamdhip64.so, lib/libhiprtc.so,
# lib/cmake/{hip,hiprtc,hipblas}/) with stand-in files: which hipcc, which offload targets, which
# libraries, which hipBLAS versions are taken. The last case configures the whole project for
# KERNELSCAN_GPU=hip against such a prefix and reads the generated build.
# cmake -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=Ninja -P rocm_discovery_test.cmake

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set_property(GLOBAL PROPERTY failures 0)

function(fail message)
  message(SEND_ERROR "${case}: ${message}")
  get_property(n GLOBAL PROPERTY failures)
  math(EXPR n "${n} + 1")
  set_property(GLOBAL PROPERTY failures ${n})
endfunction()
function(expect what actual expected)
  if(NOT "${actual}" STREQUAL "${expected}")
    fail("${what} is '${actual}', expected '${expected}'")
  endif()
endfunction()
function(expect_match what actual regex)
  if(NOT "${actual}" MATCHES "${regex}")
    fail("${what} is '${actual}', expected to match '${regex}'")
  endif()
endfunction()

function(write_script path text)
  get_filename_component(dir ${path} DIRECTORY)
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${path}.tmp "#!/bin/sh\n${text}\n")
  file(COPY_FILE ${path}.tmp ${path})
  file(REMOVE ${path}.tmp)
  file(CHMOD ${path} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE)
endfunction()

function(write_version_file path version)
  # As write_basic_package_version_file(... COMPATIBILITY SameMajorVersion) writes it.
  file(WRITE ${path}
       "set(PACKAGE_VERSION \"${version}\")\n"
       "if(PACKAGE_FIND_VERSION AND NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL \"${version}\")\n"
       "  string(REGEX MATCH \"^[0-9]+\" major \"${version}\")\n"
       "  if(NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL major)\n"
       "    set(PACKAGE_VERSION_COMPATIBLE FALSE)\n"
       "    return()\n"
       "  endif()\n"
       "endif()\n"
       "set(PACKAGE_VERSION_COMPATIBLE TRUE)\n")
endfunction()

# A ROCm install at `prefix`: HIP `hip`, hipRTC in its own library from HIP 6, hipBLAS `blas`
# (none if empty); offload-arch prints `arch_text` and exits `arch_rc`.
function(make_rocm prefix hip blas arch_text arch_rc)
  write_script(${prefix}/bin/hipcc "echo 'HIP version: ${hip}-0'")
  write_script(${prefix}/bin/offload-arch "printf '${arch_text}'\nexit ${arch_rc}")
  file(WRITE ${prefix}/include/hip/hip_runtime.h "")
  file(WRITE ${prefix}/lib/libamdhip64.so "")
  file(WRITE ${prefix}/lib/cmake/hip/hip-config.cmake
       "get_filename_component(_prefix \"\${CMAKE_CURRENT_LIST_DIR}/../../..\" ABSOLUTE)\n"
       "if(NOT TARGET hip::host)\n"
       "  add_library(hip::amdhip64 SHARED IMPORTED)\n"
       "  set_target_properties(hip::amdhip64 PROPERTIES IMPORTED_LOCATION\n"
       "    \"\${_prefix}/lib/libamdhip64.so\" INTERFACE_INCLUDE_DIRECTORIES \"\${_prefix}/include\")\n"
       "  add_library(hip::host INTERFACE IMPORTED)\n"
       "  set_target_properties(hip::host PROPERTIES INTERFACE_LINK_LIBRARIES hip::amdhip64\n"
       "    INTERFACE_COMPILE_DEFINITIONS __HIP_PLATFORM_AMD__=1)\n"
       "endif()\n")
  write_version_file(${prefix}/lib/cmake/hip/hip-config-version.cmake ${hip})
  if(hip VERSION_GREATER_EQUAL 6)
    file(WRITE ${prefix}/lib/libhiprtc.so "")
    file(WRITE ${prefix}/lib/cmake/hiprtc/hiprtc-config.cmake
         "get_filename_component(_prefix \"\${CMAKE_CURRENT_LIST_DIR}/../../..\" ABSOLUTE)\n"
         "if(NOT TARGET hiprtc::hiprtc)\n"
         "  add_library(hiprtc::hiprtc SHARED IMPORTED)\n"
         "  set_target_properties(hiprtc::hiprtc PROPERTIES IMPORTED_LOCATION\n"
         "    \"\${_prefix}/lib/libhiprtc.so\")\n"
         "endif()\n")
    write_version_file(${prefix}/lib/cmake/hiprtc/hiprtc-config-version.cmake ${hip})
  endif()
  if(blas)
    file(WRITE ${prefix}/lib/libhipblas.so "")
    file(WRITE ${prefix}/include/hipblas/hipblas.h "")
    file(WRITE ${prefix}/lib/cmake/hipblas/hipblas-config.cmake
         "get_filename_component(_prefix \"\${CMAKE_CURRENT_LIST_DIR}/../../..\" ABSOLUTE)\n"
         "if(NOT TARGET roc::hipblas)\n"
         "  add_library(roc::hipblas SHARED IMPORTED)\n"
         "  set_target_properties(roc::hipblas PROPERTIES IMPORTED_LOCATION\n"
         "    \"\${_prefix}/lib/libhipblas.so\" INTERFACE_INCLUDE_DIRECTORIES\n"
         "    \"\${_prefix}/include\")\n"
         "endif()\n")
    write_version_file(${prefix}/lib/cmake/hipblas/hipblas-config-version.cmake ${blas})
  endif()
endfunction()

# Configures the probe project as case `case` with `args` (a list) and the environment `env`
# (a list of NAME=VALUE); sets rc, log and the found_* results in the caller.
macro(probe case env args)
  set(_dir ${WORK_DIR}/${case})
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env ${env} ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/configure/rocm_probe
            -B ${_dir} -G ${GENERATOR} -DKERNELSCAN_SOURCE_DIR=${SOURCE_DIR} ${args}
    RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  foreach(v rocm_path hipcc version arches arch_source libs hipblas hipblas_note)
    unset(found_${v})
  endforeach()
  if(rc EQUAL 0)
    include(${_dir}/result.cmake)
  endif()
endmacro()

# A machine with Debian's hipcc on the PATH: it must not win over ROCM_PATH's.
write_script(${WORK_DIR}/debian/bin/hipcc "echo 'HIP version: 5.2.21153-0'")
set(path "PATH=${WORK_DIR}/debian/bin:$ENV{PATH}")

# ROCm 7 on an MI300X node: hipBLAS 3, offload-arch names the GPU (twice: two GPUs).
set(rocm7 ${WORK_DIR}/opt/rocm-7.0.2)
make_rocm(${rocm7} 7.0.2 3.0.2 "gfx942\\ngfx942\\n" 0)
set(case rocm7)
probe(${case} "${path}" "-DROCM_PATH=${rocm7}")
expect("configure" "${rc}" "0")
expect("ROCM_PATH" "${found_rocm_path}" "${rocm7}")
expect("hipcc" "${found_hipcc}" "${rocm7}/bin/hipcc")
expect("HIP version" "${found_version}" "7.0.2")
expect("offload targets" "${found_arches}" "gfx942")
expect_match("how they were chosen" "${found_arch_source}" "this machine's GPUs, by .*offload-arch")
expect("libraries" "${found_libs}"
       "hip::host=>hip::amdhip64;hiprtc::hiprtc=${rocm7}/lib/libhiprtc.so")
expect("hipBLAS used" "${found_hipblas}" "ON")
expect_match("hipBLAS note" "${found_hipblas_note}" "^3.0.2 ")
expect_match("configure log" "${log}" "builds GPU code for gfx942 \\(this machine's GPUs")

# The same install named by the environment instead.
set(case rocm7_env)
probe(${case} "${path};ROCM_PATH=${rocm7}" "")
expect("ROCM_PATH" "${found_rocm_path}" "${rocm7}")
expect("hipcc" "${found_hipcc}" "${rocm7}/bin/hipcc")

# Targets given by hand win over the machine's.
set(case rocm7_arches)
probe(${case} "${path}" "-DROCM_PATH=${rocm7};-DKERNELSCAN_HIP_ARCHITECTURES=gfx90a\\;gfx950")
expect("offload targets" "${found_arches}" "gfx90a;gfx950")
expect("how they were chosen" "${found_arch_source}" "KERNELSCAN_HIP_ARCHITECTURES")

# ROCm 6 with hipBLAS 2, on a build machine without a GPU (offload-arch fails): MI200 and MI300
# by default, said loudly.
set(rocm6 ${WORK_DIR}/opt/rocm-6.4.1)
make_rocm(${rocm6} 6.4.1 2.4.0 "" 1)
set(case rocm6)
probe(${case} "${path}" "-DROCM_PATH=${rocm6}")
expect("configure" "${rc}" "0")
expect("offload targets" "${found_arches}" "gfx90a;gfx942")
expect_match("configure log" "${log}" "CMake Warning.*builds GPU code for gfx90a, gfx942 \\(the default")
expect("hipBLAS used" "${found_hipblas}" "ON")
expect_match("hipBLAS note" "${found_hipblas_note}" "^2.4.0 ")

# rocm_agent_enumerator's output (the CPU agent gfx000, target features) where offload-arch is
# missing.
set(rocm_enum ${WORK_DIR}/opt/rocm-6.2.0)
make_rocm(${rocm_enum} 6.2.0 "" "" 1)
file(REMOVE ${rocm_enum}/bin/offload-arch)
write_script(${rocm_enum}/bin/rocm_agent_enumerator
             "printf 'gfx000\\ngfx90a:sramecc+:xnack-\\ngfx90a:sramecc+:xnack-\\ngfx1100\\n'")
set(case rocm_agent_enumerator)
probe(${case} "${path}" "-DROCM_PATH=${rocm_enum}")
expect("offload targets" "${found_arches}" "gfx90a;gfx1100")
expect("hipBLAS used" "${found_hipblas}" "OFF")
expect_match("hipBLAS note" "${found_hipblas_note}" "^none")

# hipBLAS of another major version is not taken: said, not silently dropped.
foreach(blas 1.1.0 4.0.0)
  set(prefix ${WORK_DIR}/opt/rocm-blas-${blas})
  make_rocm(${prefix} 7.1.0 ${blas} "gfx942\\n" 0)
  set(case hipblas_${blas})
  probe(${case} "${path}" "-DROCM_PATH=${prefix}")
  expect("configure" "${rc}" "0")
  expect("hipBLAS used" "${found_hipblas}" "OFF")
  expect_match("hipBLAS note" "${found_hipblas_note}" "^${blas} found but not used")
  expect_match("configure log" "${log}" "hipBLAS ${blas} found but not used: kernelscan takes")
endforeach()

# ROCm 5 (hipRTC inside libamdhip64, a compiler without MI300): gfx90a by default.
set(rocm5 ${WORK_DIR}/opt/rocm-5.7.1)
make_rocm(${rocm5} 5.7.1 "" "" 1)
set(case rocm5)
probe(${case} "${path}" "-DROCM_PATH=${rocm5}")
expect("offload targets" "${found_arches}" "gfx90a")
expect("libraries" "${found_libs}" "hip::host=>hip::amdhip64")

# An install without HIP's CMake package is an error naming ROCM_PATH, not another HIP found
# elsewhere.
set(broken ${WORK_DIR}/opt/rocm-broken)
write_script(${broken}/bin/hipcc "echo 'HIP version: 6.0.0-0'")
set(case no_hip_config)
probe(${case} "${path}" "-DROCM_PATH=${broken}")
expect_match("configure" "${rc}" "^[1-9]")
expect_match("error" "${log}" "hip-config.cmake\\) was not found[ \n]+under[ \n]+ROCM_PATH=${broken}")

# The whole project for KERNELSCAN_GPU=hip against the ROCm 7 prefix: the build runs its hipcc
# for its GPU and links its libraries by path, with the binary's RPATH naming their folder.
set(case project)
set(_dir ${WORK_DIR}/project)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env ${path} ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${_dir}
          -G ${GENERATOR} -DKERNELSCAN_GPU=hip -DROCM_PATH=${rocm7} -DKERNELSCAN_BUILD_TESTS=OFF
  RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
expect("configure" "${rc}" "0")
if(rc EQUAL 0)
  file(READ ${_dir}/build.ninja build)
  expect_match("hip compile" "${build}" "${rocm7}/bin/hipcc [^\n]*--offload-arch=gfx942")
  expect_match("hipBLAS include" "${build}" "hipcc [^\n]*-I${rocm7}/include")
  expect_match("link" "${build}" "LINK_LIBRARIES = [^\n]*${rocm7}/lib/libhiprtc.so")
  expect_match("link" "${build}" "LINK_LIBRARIES = [^\n]*${rocm7}/lib/libhipblas.so")
  expect_match("link" "${build}" "LINK_LIBRARIES = [^\n]*${rocm7}/lib/libamdhip64.so")
  expect_match("rpath" "${build}" "-Wl,-rpath,[^\n]*${rocm7}/lib")
  expect_match("hip compile" "${build}" "hipcc [^\n]*-DKERNELSCAN_HAVE_HIPBLAS")
else()
  message(STATUS "${log}")
endif()

get_property(failures GLOBAL PROPERTY failures)
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} check(s) of the ROCm discovery failed")
endif()
message(STATUS "the ROCm discovery found what each install holds")
