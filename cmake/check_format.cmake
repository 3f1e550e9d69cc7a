# Fails listing the files clang-format would change. Script mode:
# cmake -DCLANG_FORMAT=clang-format -DSOURCE_DIR=... -P check_format.cmake
file(GLOB_RECURSE files
  ${SOURCE_DIR}/engine/*.hpp ${SOURCE_DIR}/engine/*.cpp ${SOURCE_DIR}/engine/*.hip
  ${SOURCE_DIR}/storage/*.hpp ${SOURCE_DIR}/storage/*.cpp
  ${SOURCE_DIR}/api/*.hpp ${SOURCE_DIR}/api/*.cpp
  ${SOURCE_DIR}/server/*.hpp ${SOURCE_DIR}/server/*.cpp
  ${SOURCE_DIR}/tests/*.hpp ${SOURCE_DIR}/tests/*.cpp)
set(bad "")
foreach(f IN LISTS files)
  execute_process(COMMAND ${CLANG_FORMAT} --dry-run --Werror --style=file ${f}
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT rc EQUAL 0)
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
    list(APPEND bad ${rel})
  endif()
endforeach()
list(LENGTH files n)
if(bad)
  list(JOIN bad "\n  " listing)
  message(FATAL_ERROR "clang-format would change these files (run: clang-format -i FILE):\n  ${listing}")
endif()
message(STATUS "clang-format: ${n} files formatted")
