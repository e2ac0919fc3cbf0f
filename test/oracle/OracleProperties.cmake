#===- test/oracle/OracleProperties.cmake - Labels and environments -------===#
#
# Included by ctest after gtest_discover_tests' own scripts, which list the
# model-zoo tests in CLEAVE_ZOO_TESTS and the AVX2 reruns in
# CLEAVE_AVX2_TESTS. gtest_discover_tests flattens a list-valued property
# into separate properties, so lists are set here:
#   the zoo: labels "torch" (what needs PyTorch) and "zoo" (ctest -L zoo);
#   the AVX2 reruns: labels "torch" and "avx2", and CLEAVE_ORACLE_ISA=avx2,
#   which makes OracleTest.cpp emulate an AVX2-only machine.
#
#===------------------------------------------------------------------------===#

if(CLEAVE_ZOO_TESTS)
  set_tests_properties(${CLEAVE_ZOO_TESTS} PROPERTIES LABELS "torch;zoo")
endif()
if(CLEAVE_AVX2_TESTS)
  set_tests_properties(${CLEAVE_AVX2_TESTS} PROPERTIES
    LABELS "torch;avx2"
    ENVIRONMENT "OMP_NUM_THREADS=1;CLEAVE_ORACLE_ISA=avx2")
endif()
