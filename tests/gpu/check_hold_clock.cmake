# Compile check of the blocking kernel's clock (engine/hip/kernels.hip, now_ticks): device code
# for each target, as assembly, must read the real-time counter the target has: s_memrealtime
# up to gfx10, the MSG_RTN_GET_REALTIME message on gfx11 and gfx12, which have no s_memrealtime.
# A target this hipcc does not know is skipped (Debian's hipcc 5.2 knows no gfx12).
# cmake -DHIPCC=... -DSOURCE_DIR=... -DWORK_DIR=... -P check_hold_clock.cmake
set(expect_gfx90a "s_memrealtime")
set(expect_gfx942 "s_memrealtime")
set(expect_gfx1030 "s_memrealtime")
set(expect_gfx1100 "s_sendmsg_rtn_b64 s\\[[0-9]+:[0-9]+\\], sendmsg\\(MSG_RTN_GET_REALTIME\\)")
set(expect_gfx1201 "s_sendmsg_rtn_b64 s\\[[0-9]+:[0-9]+\\], sendmsg\\(MSG_RTN_GET_REALTIME\\)")
set(checked 0)
foreach(arch gfx90a gfx942 gfx1030 gfx1100 gfx1201)
  set(out ${WORK_DIR}/kernels-${arch}.s)
  # Device code only, without the device libraries (not every install has them for every target).
  execute_process(
    COMMAND ${HIPCC} -std=c++20 -O3 -DKERNELSCAN_GPU_HIP -I${SOURCE_DIR} --offload-arch=${arch}
            -nogpulib --cuda-device-only -S -o ${out} ${SOURCE_DIR}/engine/hip/kernels.hip
    RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  if(NOT rc EQUAL 0)
    if(log MATCHES "invalid target ID|unsupported CUDA gpu architecture|unknown target CPU")
      message(STATUS "${arch}: this hipcc does not know it; skipped")
      continue()
    endif()
    message(FATAL_ERROR "${arch}: kernels.hip does not compile:\n${log}")
  endif()
  file(READ ${out} asm)
  if(NOT asm MATCHES "${expect_${arch}}")
    message(FATAL_ERROR "${arch}: the blocking kernel does not read the clock with "
                        "'${expect_${arch}}'")
  endif()
  if(arch MATCHES "^gfx1[12]" AND asm MATCHES "s_memrealtime")
    message(FATAL_ERROR "${arch}: s_memrealtime does not exist on ${arch}")
  endif()
  message(STATUS "${arch}: the clock is read as expected")
  math(EXPR checked "${checked} + 1")
endforeach()
if(checked LESS 2)
  message(FATAL_ERROR "fewer than two targets could be compiled")
endif()
