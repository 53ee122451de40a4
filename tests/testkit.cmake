# The test kit: the harness (tests/harness/), the float64 references (tests/reference/) and the
# checks, without any test. lig-tests (tests/CMakeLists.txt) and the libFuzzer targets
# (tests/fuzz/CMakeLists.txt) are built from it; LIG_TESTKIT_INCLUDES are its include folders.
set(LIG_TESTKIT_DIR ${CMAKE_CURRENT_LIST_DIR})
set(LIG_TESTKIT_INCLUDES ${LIG_TESTKIT_DIR} ${LIG_TESTKIT_DIR}/harness)
set(LIG_TESTKIT_SOURCES
  # the test framework (CHECK, the test table's runner), test-side float formats and error
  # bounds, problem cases and their generators, tensor buffers, the two-phase call and the
  # operators' runners and checks, the suite drivers, error-case and fuzz helpers
  ${LIG_TESTKIT_DIR}/harness/backward_checks.c
  ${LIG_TESTKIT_DIR}/harness/backward_runner.c
  ${LIG_TESTKIT_DIR}/harness/case_generators.c
  ${LIG_TESTKIT_DIR}/harness/compressed_lengths.c
  ${LIG_TESTKIT_DIR}/harness/dense_lse_case.c
  ${LIG_TESTKIT_DIR}/harness/dense_kl_case.c
  ${LIG_TESTKIT_DIR}/harness/l1_norm_case.c
  ${LIG_TESTKIT_DIR}/harness/error_bounds.c
  ${LIG_TESTKIT_DIR}/harness/error_cases.c
  ${LIG_TESTKIT_DIR}/harness/float_formats.c
  ${LIG_TESTKIT_DIR}/harness/forward_kl_checks.c
  ${LIG_TESTKIT_DIR}/harness/forward_kl_runner.c
  ${LIG_TESTKIT_DIR}/harness/framework.c
  ${LIG_TESTKIT_DIR}/harness/fuzz_helpers.c
  ${LIG_TESTKIT_DIR}/harness/fuzz_runner.c
  ${LIG_TESTKIT_DIR}/harness/operator_calls.c
  ${LIG_TESTKIT_DIR}/harness/problem_case.c
  ${LIG_TESTKIT_DIR}/harness/quant_case.c
  ${LIG_TESTKIT_DIR}/harness/logits_case.c
  ${LIG_TESTKIT_DIR}/harness/sparse_logits_case.c
  ${LIG_TESTKIT_DIR}/harness/suite.c
  ${LIG_TESTKIT_DIR}/harness/suite_operators.c
  ${LIG_TESTKIT_DIR}/harness/tensor_buffers.c
  ${LIG_TESTKIT_DIR}/harness/thread_runs.c
  ${LIG_TESTKIT_DIR}/harness/two_phase_call.c
  # the KL loss's problems (data, tensors, the call) and their check against the reference
  ${LIG_TESTKIT_DIR}/kl_loss_case.c
  # float64 definitions of the operators
  ${LIG_TESTKIT_DIR}/reference/indexer_ref.c
  ${LIG_TESTKIT_DIR}/reference/indexer_fwd_ref.c
  ${LIG_TESTKIT_DIR}/reference/indexer_quant_ref.c
  ${LIG_TESTKIT_DIR}/reference/sparse_kl_loss_ref.c
)
