#===- test/oracle/ZooLabels.cmake - Labels of the model-zoo tests ---------===#
#
# Included by ctest after gtest_discover_tests' own script, which lists the
# model-zoo tests in CLEAVE_ZOO_TESTS: labels "torch" (what needs PyTorch) and
# "zoo" (ctest -L zoo selects the suite).
#
#===------------------------------------------------------------------------===#

if(CLEAVE_ZOO_TESTS)
  set_tests_properties(${CLEAVE_ZOO_TESTS} PROPERTIES LABELS "torch;zoo")
endif()
