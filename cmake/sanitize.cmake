# Sanitizer builds: -DAGMM_SANITIZE=address,undefined or -DAGMM_SANITIZE=thread
# (any comma-separated list the compiler accepts; address and thread cannot
# be combined). Applies to every target of the build, library, tool and
# tests, so a sanitizer build is a separate build directory. Every finding is
# fatal (-fno-sanitize-recover=all): a test that trips one fails.
#
# The suppressions for findings in third-party code are in
# tests/sanitizers/; .ci/run points the runtimes at them (see
# docs/reliability.md).
set(AGMM_SANITIZE "" CACHE STRING
    "Sanitizers to build with: empty, address,undefined, or thread")

if(AGMM_SANITIZE)
  string(REPLACE "," ";" _agmm_san_list "${AGMM_SANITIZE}")
  foreach(_s IN LISTS _agmm_san_list)
    if(NOT _s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "AGMM_SANITIZE: '${_s}' is not one of address, "
                          "undefined, thread, leak")
    endif()
  endforeach()
  if("address" IN_LIST _agmm_san_list AND "thread" IN_LIST _agmm_san_list)
    message(FATAL_ERROR "AGMM_SANITIZE: address and thread cannot be combined")
  endif()
  set(_agmm_san_flags -fsanitize=${AGMM_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_compile_options(${_agmm_san_flags} -g)
  add_link_options(${_agmm_san_flags})
  message(STATUS "agmm: building with -fsanitize=${AGMM_SANITIZE}")
endif()

# libFuzzer targets (fuzz/): clang only. Every target of the build gets
# coverage instrumentation; use it with AGMM_SANITIZE=address,undefined.
option(AGMM_FUZZ "Build the libFuzzer targets in fuzz/ (clang)" OFF)
if(AGMM_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "AGMM_FUZZ needs clang (CC=clang cmake ...)")
  endif()
  # The coverage hooks live in the sanitizer runtimes: without one, every
  # executable of the build fails to link (__sanitizer_cov_*).
  if(NOT AGMM_SANITIZE)
    message(FATAL_ERROR "AGMM_FUZZ needs a sanitizer: add -DAGMM_SANITIZE=address,undefined")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
