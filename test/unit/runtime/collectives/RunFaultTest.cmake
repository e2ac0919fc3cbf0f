#===- RunFaultTest.cmake - Drive one collectives fault scenario -----------===#
#
# cmake -DMPIEXEC=<mpirun> -DBINARY=<collectives_fault_test> -DMODE=<mode>
#       -DEXPECT=<regex> -DLIMIT=<seconds> -P RunFaultTest.cmake
#
# Runs the scenario on 3 ranks with a 5 s collective timeout and checks the
# observable contract: the job exits non-zero, within LIMIT seconds, and its
# output matches EXPECT (the line that says what went wrong).
#
#===------------------------------------------------------------------------===#

foreach(var MPIEXEC BINARY MODE EXPECT LIMIT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "RunFaultTest.cmake: ${var} is not set")
  endif()
endforeach()

set(ENV{CLEAVE_COLLECTIVE_TIMEOUT_S} 5)
set(ENV{OMP_NUM_THREADS} 1)
execute_process(
  COMMAND ${MPIEXEC} --allow-run-as-root --oversubscribe
          -x CLEAVE_COLLECTIVE_TIMEOUT_S -x OMP_NUM_THREADS
          -np 3 ${BINARY} ${MODE}
  RESULT_VARIABLE result
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output
  TIMEOUT ${LIMIT})

message("${output}")
if(NOT result MATCHES "^-?[0-9]+$")
  message(FATAL_ERROR "'${MODE}': the job did not end by itself within "
                      "${LIMIT} s (${result})")
endif()
if(result EQUAL 0)
  message(FATAL_ERROR "'${MODE}': the job exited with status 0")
endif()
if(NOT output MATCHES "${EXPECT}")
  message(FATAL_ERROR "'${MODE}': exit status ${result}, but no line matches "
                      "'${EXPECT}'")
endif()
message(STATUS "'${MODE}': exit status ${result} with the expected message")
