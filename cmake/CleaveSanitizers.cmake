#===- cmake/CleaveSanitizers.cmake - ASan+UBSan and libFuzzer builds -------===#
#
# CLEAVE_SANITIZE instruments everything this project compiles (runtime,
# compiler, tools, tests) with AddressSanitizer and UndefinedBehaviorSanitizer;
# any report aborts the process, so a test that triggers one fails.
# CLEAVE_ENABLE_FUZZERS adds libFuzzer's coverage instrumentation
# (-fsanitize=fuzzer-no-link) to the same code, so that the fuzz targets of
# test/fuzz/ see the branches of the libraries they call; only those targets
# link libFuzzer itself (cleave_add_fuzzer). docs/design/fuzzing-and-sanitizers.md
# says why one build directory does both.
#
# Included before any target is defined: the flags are directory-scoped and
# must reach every subdirectory.
#
#===------------------------------------------------------------------------===#

if(CLEAVE_ENABLE_FUZZERS AND NOT CLEAVE_SANITIZE)
  message(FATAL_ERROR "CLEAVE_ENABLE_FUZZERS needs CLEAVE_SANITIZE: a fuzz "
                      "target only finds what a sanitizer reports")
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR
   NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "CLEAVE_SANITIZE needs Clang as the C and C++ compiler "
                      "(libFuzzer ships with Clang); configure with "
                      "-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14")
endif()

# -fno-sanitize-recover=all: UBSan aborts on its first report instead of
# printing and going on, so that ctest sees a failure.
set(CLEAVE_SANITIZER_FLAGS
  -fsanitize=address,undefined
  -fno-sanitize-recover=all
  -fno-omit-frame-pointer
)
add_compile_options(${CLEAVE_SANITIZER_FLAGS})
add_link_options(-fsanitize=address,undefined)
if(CLEAVE_ENABLE_FUZZERS)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# Generated code is not instrumented; shared objects built here (the runtime,
# the test artifacts) reference the sanitizer runtime, which only the
# executable that loads them links. AddLLVM's -z defs and the runtime's
# --no-undefined are therefore skipped in this build (see their uses).

# OpenMP: oneDNN (Debian's) runs on GCC's libgomp, and the runtime calls
# omp_set_num_threads to size oneDNN's thread pool. Clang's -fopenmp would
# link LLVM's libomp, a second runtime whose setting oneDNN never reads; link
# libgomp instead (no OpenMP pragma is compiled here, only the API is called).
find_library(CLEAVE_LIBGOMP gomp
  PATHS /usr/lib/gcc/${CMAKE_LIBRARY_ARCHITECTURE}/12
  REQUIRED)
set(OpenMP_CXX_FLAGS "-fopenmp=libgomp" CACHE STRING "" FORCE)
set(OpenMP_CXX_LIB_NAMES "gomp" CACHE STRING "" FORCE)
set(OpenMP_gomp_LIBRARY "${CLEAVE_LIBGOMP}" CACHE FILEPATH "" FORCE)

# cleave_add_fuzzer(<name> SOURCES <files...> LIBS <libraries...>
#                   CORPUS <dirs...> [TIME <seconds>])
# builds the libFuzzer target <name> from SOURCES (which define
# LLVMFuzzerTestOneInput) and adds two ctest tests:
#   fuzz.<name>.corpus  runs every input of the CORPUS directories once
#                       (seeds and the reproducers of fixed crashes: the
#                       regression test), in every sanitizer build;
#   fuzz.<name>         fuzzes for TIME seconds (30 by default), starting
#                       from CORPUS; label "fuzz". New inputs go to the
#                       build tree, never into the source tree.
function(cleave_add_fuzzer name)
  cmake_parse_arguments(ARG "" "TIME" "SOURCES;LIBS;CORPUS" ${ARGN})
  if(NOT ARG_TIME)
    set(ARG_TIME 30)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  set_target_properties(${name} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin/fuzz)

  set(work ${CMAKE_CURRENT_BINARY_DIR}/${name})
  file(MAKE_DIRECTORY ${work}/corpus ${work}/crashes)
  # -runs=0 executes the corpus and stops: any crash, leak or sanitizer
  # report is a non-zero exit.
  add_test(NAME fuzz.${name}.corpus
    COMMAND ${name} -runs=0 ${ARG_CORPUS})
  set_tests_properties(fuzz.${name}.corpus PROPERTIES
    ENVIRONMENT OMP_NUM_THREADS=1 TIMEOUT 120 LABELS fuzz-corpus)
  # -timeout: an input that runs over 10 s is a hang, hence a finding.
  # -rss_limit_mb: the readers refuse oversized inputs, so a process this
  # large means an allocation the input controls. -artifact_prefix: the
  # reproducer of a finding lands in the build tree, named in the output.
  add_test(NAME fuzz.${name}
    COMMAND ${name}
            -max_total_time=${ARG_TIME} -timeout=10 -rss_limit_mb=2048
            -print_final_stats=1 -print_funcs=0
            -artifact_prefix=${work}/crashes/
            ${work}/corpus ${ARG_CORPUS})
  math(EXPR limit "${ARG_TIME} + 120")
  set_tests_properties(fuzz.${name} PROPERTIES
    ENVIRONMENT OMP_NUM_THREADS=1 TIMEOUT ${limit} LABELS fuzz)
endfunction()
