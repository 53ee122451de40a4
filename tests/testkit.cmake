# The test kit: the harness, the problem generators, the runners, the float64 references and the
# checks, without any test. lig-tests (tests/CMakeLists.txt) and the libFuzzer targets
# (tests/fuzz/CMakeLists.txt) are built from it.
set(LIG_TESTKIT_DIR ${CMAKE_CURRENT_LIST_DIR})
set(LIG_TESTKIT_SOURCES
  ${LIG_TESTKIT_DIR}/harness.c
  ${LIG_TESTKIT_DIR}/half.c
  ${LIG_TESTKIT_DIR}/tcase.c
  ${LIG_TESTKIT_DIR}/gen.c
  ${LIG_TESTKIT_DIR}/buffers.c
  ${LIG_TESTKIT_DIR}/inst.c
  ${LIG_TESTKIT_DIR}/runner.c
  ${LIG_TESTKIT_DIR}/check.c
  ${LIG_TESTKIT_DIR}/tol.c
  ${LIG_TESTKIT_DIR}/suite.c
  ${LIG_TESTKIT_DIR}/suite_ops.c
  ${LIG_TESTKIT_DIR}/errtest.c
  ${LIG_TESTKIT_DIR}/reference/indexer_ref.c
  ${LIG_TESTKIT_DIR}/reference/indexer_fwd_ref.c
  ${LIG_TESTKIT_DIR}/op_runner.c
  ${LIG_TESTKIT_DIR}/op_check.c
  ${LIG_TESTKIT_DIR}/fuzz_util.c
)
