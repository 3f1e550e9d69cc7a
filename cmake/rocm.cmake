# ROCm discovery for the GPU engine on AMD (KERNELSCAN_GPU=hip). Included by the top-level
# CMakeLists.txt; tests/configure/ runs it against prefixes laid out as ROCm and Debian lay them
# out.
#
# kernelscan_find_rocm_compiler() (always; cheap) sets
#   ROCM_PATH         (cache) the ROCm install: -DROCM_PATH, else $ROCM_PATH, else /opt/rocm when it
#                     has hipcc, else /usr (Debian's hipcc and libamdhip64-dev)
#   KERNELSCAN_HIPCC  (cache) hipcc of that install, never one from elsewhere on the PATH (Debian's
#                     hipcc 5.2, which knows no gfx942, does not win over /opt/rocm's); set it
#                     to use another hipcc
# HIP, hipRTC and hipBLAS come from ROCM_PATH as well, so that one install's parts are not mixed
# with another's.
# kernelscan_find_rocm_libraries() (when the engine is hip) sets
#   KERNELSCAN_HIP_VERSION            HIP's version (hip-config, else `hipcc --version`)
#   KERNELSCAN_HIP_ARCH_LIST          the offload targets: KERNELSCAN_HIP_ARCHITECTURES when set,
#                                     else this machine's GPUs (offload-arch, amdgpu-arch,
#                                     rocm_agent_enumerator), else the defaults for that HIP
#   KERNELSCAN_HIP_ARCH_SOURCE        how they were chosen, for the configure log
#   KERNELSCAN_HIP_LINK_LIBRARIES     hip::host, hipRTC (hiprtc::hiprtc, or the library in its own
#                                     file, or none where libamdhip64 holds it: ROCm 5)
#   KERNELSCAN_HIPBLAS_FOUND          hipBLAS 2.x or 3.x (ROCm 6.x, 7.x) was found: roc::hipblas
#   KERNELSCAN_HIPBLAS_NOTE           what was found, or why none is used

# Offload targets named in `text` (the output of offload-arch, amdgpu-arch or
# rocm_agent_enumerator): gfx names, without target features ("gfx942:sramecc+:xnack-"), without
# the CPU agent gfx000, each once, in order.
function(kernelscan_parse_gpu_arches text out)
  string(REGEX MATCHALL "gfx[0-9a-fA-F]+" found "${text}")
  set(arches "")
  foreach(a IN LISTS found)
    string(TOLOWER "${a}" a)
    if(NOT a STREQUAL "gfx000")
      list(APPEND arches ${a})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES arches)
  set(${out} "${arches}" PARENT_SCOPE)
endfunction()

macro(kernelscan_find_rocm_compiler)
  if(DEFINED ENV{ROCM_PATH} AND NOT "$ENV{ROCM_PATH}" STREQUAL "")
    set(_ks_rocm_default "$ENV{ROCM_PATH}")
  elseif(EXISTS /opt/rocm/bin/hipcc)
    set(_ks_rocm_default /opt/rocm)
  else()
    set(_ks_rocm_default /usr)
  endif()
  set(ROCM_PATH "${_ks_rocm_default}" CACHE PATH
      "ROCm install: hipcc, HIP, hipRTC and hipBLAS are taken from here")
  # A hipcc found for another ROCM_PATH is looked for again (one given with -D is kept).
  if(DEFINED _KERNELSCAN_HIPCC_ROCM AND NOT "${_KERNELSCAN_HIPCC_ROCM}" STREQUAL "${ROCM_PATH}")
    unset(KERNELSCAN_HIPCC CACHE)
  endif()
  find_program(KERNELSCAN_HIPCC hipcc PATHS "${ROCM_PATH}/bin" NO_DEFAULT_PATH)
  set(_KERNELSCAN_HIPCC_ROCM "${ROCM_PATH}" CACHE INTERNAL "ROCM_PATH KERNELSCAN_HIPCC was found for")
endmacro()

# The offload targets of this machine's GPUs, or "" when no tool finds one.
function(kernelscan_detect_gpu_arches out tool_used)
  # ROCM_PATH's own tools: they know the GPUs its compiler can target.
  set(candidates
      "${ROCM_PATH}/bin/offload-arch" "${ROCM_PATH}/llvm/bin/offload-arch"
      "${ROCM_PATH}/llvm/bin/amdgpu-arch" "${ROCM_PATH}/bin/amdgpu-arch"
      "${ROCM_PATH}/bin/rocm_agent_enumerator")
  foreach(tool IN LISTS candidates)
    if(NOT EXISTS "${tool}" OR IS_DIRECTORY "${tool}")
      continue()
    endif()
    execute_process(COMMAND "${tool}" OUTPUT_VARIABLE text ERROR_QUIET RESULT_VARIABLE rc
                    TIMEOUT 30)
    if(NOT rc EQUAL 0)
      continue()
    endif()
    kernelscan_parse_gpu_arches("${text}" arches)
    if(arches)
      set(${out} "${arches}" PARENT_SCOPE)
      set(${tool_used} "${tool}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
  set(${tool_used} "" PARENT_SCOPE)
endfunction()

macro(kernelscan_find_rocm_libraries)
  # ROCm's package configs find their own dependencies (amd_comgr, hsa-runtime64) under it.
  list(PREPEND CMAKE_PREFIX_PATH "${ROCM_PATH}")

  find_package(hip CONFIG QUIET PATHS "${ROCM_PATH}" NO_DEFAULT_PATH)
  if(NOT TARGET hip::host)
    message(FATAL_ERROR
            "KERNELSCAN_GPU=hip: HIP's CMake package (hip-config.cmake) was not found under "
            "ROCM_PATH=${ROCM_PATH} (Debian: apt-get install libamdhip64-dev; ROCm: set ROCM_PATH "
            "to the install, such as /opt/rocm-7.0.2)")
  endif()
  set(KERNELSCAN_HIP_VERSION "${hip_VERSION}")
  if(NOT KERNELSCAN_HIP_VERSION)
    execute_process(COMMAND "${KERNELSCAN_HIPCC}" --version OUTPUT_VARIABLE _ks_text ERROR_QUIET)
    string(REGEX MATCH "HIP version: ([0-9]+\\.[0-9]+)" _ks_match "${_ks_text}")
    set(KERNELSCAN_HIP_VERSION "${CMAKE_MATCH_1}")
  endif()

  # Offload targets.
  if(KERNELSCAN_HIP_ARCHITECTURES)
    set(KERNELSCAN_HIP_ARCH_LIST "${KERNELSCAN_HIP_ARCHITECTURES}")
    set(KERNELSCAN_HIP_ARCH_SOURCE "KERNELSCAN_HIP_ARCHITECTURES")
  else()
    kernelscan_detect_gpu_arches(KERNELSCAN_HIP_ARCH_LIST _ks_tool)
    if(KERNELSCAN_HIP_ARCH_LIST)
      set(KERNELSCAN_HIP_ARCH_SOURCE "this machine's GPUs, by ${_ks_tool}")
    elseif(KERNELSCAN_HIP_VERSION VERSION_LESS 6)
      # HIP 5's compiler (Debian 12's hipcc 5.2) knows no MI300.
      set(KERNELSCAN_HIP_ARCH_LIST gfx90a)
      set(KERNELSCAN_HIP_ARCH_SOURCE "the default for HIP ${KERNELSCAN_HIP_VERSION}: no GPU found")
    else()
      set(KERNELSCAN_HIP_ARCH_LIST gfx90a gfx942)
      set(KERNELSCAN_HIP_ARCH_SOURCE "the default for HIP ${KERNELSCAN_HIP_VERSION}: no GPU found")
    endif()
  endif()

  # hipRTC: its own library since ROCm 6 (hiprtc::hiprtc); inside libamdhip64 before.
  find_package(hiprtc CONFIG QUIET PATHS "${ROCM_PATH}" NO_DEFAULT_PATH)
  set(KERNELSCAN_HIP_LINK_LIBRARIES hip::host)
  if(TARGET hiprtc::hiprtc)
    list(APPEND KERNELSCAN_HIP_LINK_LIBRARIES hiprtc::hiprtc)
    set(_ks_hiprtc "hiprtc::hiprtc")
  else()
    find_library(KERNELSCAN_HIPRTC_LIBRARY hiprtc PATHS "${ROCM_PATH}/lib" "${ROCM_PATH}/lib64"
                 NO_DEFAULT_PATH NO_CACHE)
    if(KERNELSCAN_HIPRTC_LIBRARY)
      list(APPEND KERNELSCAN_HIP_LINK_LIBRARIES "${KERNELSCAN_HIPRTC_LIBRARY}")
      set(_ks_hiprtc "${KERNELSCAN_HIPRTC_LIBRARY}")
    else()
      set(_ks_hiprtc "in libamdhip64")
    endif()
  endif()

  # hipBLAS with the hipDataType API: 2.x (ROCm 6.x) and 3.x (ROCm 7.x). find_package's version
  # check would take SameMajorVersion from hipBLAS's config and refuse 3.x for a request of 2.
  find_package(hipblas CONFIG QUIET PATHS "${ROCM_PATH}" NO_DEFAULT_PATH)
  set(KERNELSCAN_HIPBLAS_FOUND OFF)
  if(NOT hipblas_FOUND)
    string(CONCAT KERNELSCAN_HIPBLAS_NOTE "none: GEMM points with impl \"library\" fail saying "
                  "so (ROCm: install hipblas; builtin GEMMs work without it)")
  elseif(hipblas_VERSION VERSION_LESS 2 OR NOT hipblas_VERSION VERSION_LESS 4)
    string(CONCAT KERNELSCAN_HIPBLAS_NOTE "${hipblas_VERSION} found but not used: kernelscan "
                  "takes hipBLAS 2.x or 3.x (ROCm 6 or 7)")
  else()
    set(KERNELSCAN_HIPBLAS_FOUND ON)
    set(KERNELSCAN_HIPBLAS_NOTE "${hipblas_VERSION} (${hipblas_DIR})")
  endif()

  string(REPLACE ";" ", " _ks_arches "${KERNELSCAN_HIP_ARCH_LIST}")
  message(STATUS "kernelscan ROCm: ROCM_PATH=${ROCM_PATH}, hipcc ${KERNELSCAN_HIPCC}, "
                 "HIP ${KERNELSCAN_HIP_VERSION}, hipRTC ${_ks_hiprtc}, hipBLAS "
                 "${KERNELSCAN_HIPBLAS_NOTE}")
  if(KERNELSCAN_HIP_ARCH_SOURCE MATCHES "^the default")
    message(WARNING "kernelscan builds GPU code for ${_ks_arches} (${KERNELSCAN_HIP_ARCH_SOURCE}). "
                    "A GPU of another architecture would have no code for its kernels: set "
                    "-DKERNELSCAN_HIP_ARCHITECTURES=\"gfx942;...\" for the GPUs it will run on.")
  else()
    message(STATUS "kernelscan builds GPU code for ${_ks_arches} (${KERNELSCAN_HIP_ARCH_SOURCE})")
  endif()
endmacro()
