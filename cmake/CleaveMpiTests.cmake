#===- cmake/CleaveMpiTests.cmake - one OpenMPI session folder per test -----===#
#
# Every mpirun makes its session folder under <tmpdir>/ompi.<host>.<uid>/ and
# removes that top folder when it is empty on exit. Two jobs that share the
# top folder race: one finishing can remove it between the other's creating
# it and its own job folder, and the other then fails in orte_init. ctest -j
# runs MPI tests side by side, so each gets its own tmpdir base.
#
#===------------------------------------------------------------------------===#

# Gives each of the tests named its own OpenMPI tmpdir base in the build tree,
# through the environment (mpirun reads OMPI_MCA_* and passes them on;
# OpenMPI 5's launcher reads PRTE_MCA_prte_tmpdir_base instead, and each
# ignores the other's).
function(cleave_isolate_mpi_tests)
  foreach(test IN LISTS ARGN)
    set(dir ${PROJECT_BINARY_DIR}/mpi-tmp/${test})
    file(MAKE_DIRECTORY ${dir})
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
                 "OMPI_MCA_orte_tmpdir_base=${dir}"
                 "PRTE_MCA_prte_tmpdir_base=${dir}")
  endforeach()
endfunction()
