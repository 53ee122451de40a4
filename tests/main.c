/*
 * lig-tests: the test table. Usage: lig-tests [substring-of-test-names | --list]
 * Environment: LIG_FUZZ_SECONDS (default 20, shared by the fuzz tests), LIG_FUZZ_SEED, LIG_FUZZ_ITER,
 * LIG_TEST_QUICK=1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "framework.h"
#include "lig.h"
#include "tests.h"

static const th_test all_tests[] = {
    /* test-side float formats */
    {"half_known_values", test_half_known_values},
    {"half_roundtrip_all_patterns", test_half_roundtrip_all_patterns},
    {"half_rounding_midpoints", test_half_rounding_midpoints},
    {"half_bf16_matches_bit_trick", test_half_bf16_matches_bit_trick},
    {"half_public_conversions", test_half_public_conversions},
    /* FLOAT8_E4M3FN conversions */
    {"fp8_decode_all_codes", test_fp8_decode_all_codes},
    {"fp8_encode_midpoints", test_fp8_encode_midpoints},
    {"fp8_encode_special_values", test_fp8_encode_special_values},
    {"fp8_encode_brute_force", test_fp8_encode_brute_force},
    {"fp8_matches_torch", test_fp8_matches_torch},
    /* the gradient checker's own bound */
    {"check_per_element_bound", test_check_per_element_bound},
    /* the float64 reference */
    {"ref_visibility_rules", test_ref_visibility_rules},
    {"ref_visible_range_matches_pointwise", test_ref_visible_range_matches_pointwise},
    {"ref_row_info_tnd", test_ref_row_info_tnd},
    {"ref_seq_ok_rules", test_ref_seq_ok_rules},
    {"ref_hand_example", test_ref_hand_example},
    {"ref_backward_matches_finite_differences", test_ref_backward_matches_finite_differences},
    {"ref_generator_mix", test_ref_generator_mix},
    /* every micro-kernel of every kernel set against the scalar set */
    {"kernels_sets_reported", test_kernels_sets_reported},
    {"kernels_f32_gemm_ukernels", test_kernels_f32_gemm_ukernels},
    {"kernels_f32_gemm_driver", test_kernels_f32_gemm_driver},
    {"kernels_gate_and_scores", test_kernels_gate_and_scores},
    {"kernels_rows", test_kernels_rows},
    {"kernels_bf16_gemm", test_kernels_bf16_gemm},
    {"kernels_bf16_operands", test_kernels_bf16_operands},
    {"kernels_i8_gemm", test_kernels_i8_gemm},
    {"quant_engines_scores", test_quant_engines_scores},
    {"quant_engines_int8_same_as_portable", test_quant_engines_int8_same_as_portable},
    {"kernels_fp8_all_codes", test_kernels_fp8_all_codes},
    {"kernels_fp8_rows", test_kernels_fp8_rows},
    /* API basics */
    {"api_version", test_api_version},
    {"api_format_shape", test_api_format_shape},
    {"api_status_strings", test_api_status_strings},
    {"api_create_tensor", test_api_create_tensor},
    {"api_last_error_is_per_thread", test_api_last_error_is_per_thread},
    {"api_destroy_executor", test_api_destroy_executor},
    {"api_num_threads", test_api_num_threads},
    {"tuning_defaults_and_values", test_tuning_defaults_and_values},
    {"tuning_bad_values_ignored", test_tuning_bad_values_ignored},
    {"tuning_override", test_tuning_override},
    {"api_empty_problems", test_api_empty_problems},
    {"api_workspace_reuse_and_alignment", test_api_workspace_reuse_and_alignment},
    {"devices_create_tensor_on", test_devices_create_tensor_on},
    {"devices_mixing_refused", test_devices_mixing_refused},
    {"devices_lengths_on_host", test_devices_lengths_on_host},
    {"devices_cuda_build", test_devices_cuda_build},
    {"devices_seam", test_devices_seam},
    /* sizes past 2^63: refused, naming the operand */
    {"sizes_create_tensor", test_sizes_create_tensor},
    {"sizes_forward", test_sizes_forward},
    {"sizes_batch_count", test_sizes_batch_count},
    {"sizes_paged_forward", test_sizes_paged_forward},
    {"sizes_quant_forward", test_sizes_quant_forward},
    {"sizes_backward", test_sizes_backward},
    {"sizes_kl_step", test_sizes_kl_step},
    /* error paths (contract section 6) */
    {"errors_null_pointers", test_errors_null_pointers},
    {"errors_layout", test_errors_layout},
    {"errors_rank", test_errors_rank},
    {"errors_shape_pairs", test_errors_shape_pairs},
    {"errors_dtypes", test_errors_dtypes},
    {"errors_heads_modes_band", test_errors_heads_modes_band},
    {"errors_seq_lengths", test_errors_seq_lengths},
    {"errors_overlap", test_errors_overlap},
    {"errors_workspace", test_errors_workspace},
    {"errors_index_range", test_errors_index_range},
    {"errors_message_shapes", test_errors_message_shapes},
    {"errors_invalid_rows_are_not_read", test_errors_invalid_rows_are_not_read},
    /* gradients against the reference */
    {"grad_matrix_bsnd", test_grad_matrix_bsnd},
    {"grad_matrix_tnd", test_grad_matrix_tnd},
    {"grad_strides", test_grad_strides},
    {"grad_band_limits", test_grad_band_limits},
    {"grad_continuous_data", test_grad_continuous_data},
    {"grad_poison_is_ignored", test_grad_poison_is_ignored},
    {"grad_forward_like_indices", test_grad_forward_like_indices},
    {"grad_head_num_and_forms", test_grad_head_num_and_forms},
    {"subnormal_inputs", test_subnormal_inputs},
    /* determinism */
    {"determinism_bitwise_across_runs_and_threads", test_determinism_bitwise},
    {"grad_threads_change_between_phases", test_grad_threads_change_between_phases},
    {"determinism_off_loses_no_update", test_determinism_off_loses_no_update},
    {"determinism_commit_ring_capacity", test_commit_ring_capacity},
    /* the forward's top-k alone against a sort of every candidate */
    {"topk_against_sorted_reference", test_topk_against_sorted_reference},
    {"topk_many_cuts", test_topk_many_cuts},
    /* beyond CANN's limits */
    {"large_bsnd_128k_causal", test_large_bsnd_128k},
    {"large_tnd_128k_varlen", test_large_tnd_128k},
    {"large_batch_1024", test_large_batch_1024},
    {"large_head_dims", test_large_head_dims},
    {"large_topk_counts", test_large_topk_counts},
    {"large_heads_80_groups_5", test_large_heads_80_groups_5},
    {"large_deepseek_shape", test_large_deepseek_shape},
    /* the forward (scores + top-k) against its float64 reference */
    {"fwd_ref_hand_example", test_fwd_ref_hand_example},
    {"fwd_ref_self_consistency", test_fwd_ref_self_consistency},
    {"fwd_matrix_bsnd", test_fwd_matrix_bsnd},
    {"fwd_matrix_tnd", test_fwd_matrix_tnd},
    {"fwd_ties", test_fwd_ties},
    {"fwd_strides", test_fwd_strides},
    {"fwd_band_limits", test_fwd_band_limits},
    {"fwd_continuous_data", test_fwd_continuous_data},
    {"fwd_nonfinite_inputs", test_fwd_nonfinite_inputs},
    {"fwd_nonfinite_weights_wide_groups", test_fwd_nonfinite_weights_wide_groups},
    {"fwd_topk_counts", test_fwd_topk_counts},
    {"fwd_trivial_cases", test_fwd_trivial_cases},
    {"fwd_invalid_rows", test_fwd_invalid_rows},
    {"fwd_feeds_backward", test_fwd_feeds_backward},
    {"fwd_determinism_threads", test_fwd_determinism_threads},
    {"fwd_threads_change_between_phases", test_fwd_threads_change_between_phases},
    {"fwd_workspace_bounded", test_fwd_workspace_bounded},
    {"fwd_long_sequence_128k", test_fwd_long_sequence},
    {"fwd_large_batch_1024", test_fwd_large_batch_1024},
    {"fwd_deepseek_shape", test_fwd_deepseek_shape},
    /* the quantized forward (FLOAT8_E4M3FN / INT8) */
    {"quant_fwd_matrix", test_quant_fwd_matrix},
    {"quant_fwd_bands", test_quant_fwd_bands},
    {"quant_fwd_degenerate", test_quant_fwd_degenerate},
    {"quant_fwd_int8_long_dot", test_quant_fwd_int8_long_dot},
    {"quant_fwd_nan_codes", test_quant_fwd_nan_codes},
    {"quant_fwd_determinism_threads", test_quant_fwd_determinism_threads},
    {"quant_fwd_matches_float_forward", test_quant_fwd_matches_float_forward},
    {"quant_fwd_same_on_every_set", test_quant_fwd_same_on_every_set},
    {"quant_fwd_fp8_each_set", test_quant_fwd_fp8_each_set},
    {"quant_fwd_nonfinite_weights_and_scales", test_quant_fwd_nonfinite_weights_and_scales},
    /* the quantized logits (DeepGEMM's fp8_mqa_logits / fp8_paged_mqa_logits) */
    {"quant_logits_matrix", test_quant_logits_matrix},
    {"quant_logits_matches_indexer", test_quant_logits_matches_indexer},
    {"quant_logits_threads_and_schedule", test_quant_logits_threads_and_schedule},
    {"quant_logits_every_set", test_quant_logits_every_set},
    {"quant_logits_fused_cache", test_quant_logits_fused_cache},
    {"quant_logits_schedule_values", test_quant_logits_schedule_values},
    {"quant_logits_degenerate", test_quant_logits_degenerate},
    {"errors_logits_phase1", test_errors_logits_phase1},
    {"errors_logits_phase2", test_errors_logits_phase2},
    {"errors_logits_schedule", test_errors_logits_schedule},
    {"fwd_split_plan", test_fwd_split_plan},
    {"fwd_split_decode", test_fwd_split_decode},
    {"fwd_split_ties_and_nan", test_fwd_split_ties_and_nan},
    {"quant_fwd_split_decode", test_quant_fwd_split_decode},
    {"errors_quant_table", test_errors_quant_table},
    {"errors_quant_phase2", test_errors_quant_phase2},
    {"errors_quant_cuda_refused", test_errors_quant_cuda_refused},
    {"fwd_paged_keys", test_paged_forward},
    {"errors_fwd_paged_keys", test_paged_errors},
    /* the fused KL step */
    {"kl_ref_hand_example", test_kl_ref_hand_example},
    {"kl_ref_finite_differences", test_kl_ref_finite_differences},
    {"kl_matrix", test_kl_matrix},
    {"kl_strides", test_kl_strides},
    {"kl_special_rows", test_kl_special_rows},
    {"kl_large_logits", test_kl_large_logits},
    {"kl_empty", test_kl_empty},
    {"kl_determinism_threads", test_kl_determinism_threads},
    {"kl_chain_forward_kl_backward", test_kl_chain_forward_kl_backward},
    {"kl_threads_change_between_phases", test_kl_threads_change_between_phases},
    /* the KL loss with the main attention's target */
    {"kl_loss_ref_finite_differences", test_kl_loss_ref_finite_differences},
    {"kl_loss_matrix", test_kl_loss_matrix},
    {"kl_loss_sparse_statistics_targets_agree", test_kl_loss_sparse_statistics_targets_agree},
    {"kl_loss_cann_matrix", test_kl_loss_cann_matrix},
    {"kl_loss_cann_clamps", test_kl_loss_cann_clamps},
    {"kl_loss_determinism_threads", test_kl_loss_determinism_threads},
    {"kl_loss_errors", test_kl_loss_errors},
    {"kl_loss_empty_index_dims", test_kl_loss_empty_index_dims},
    {"kl_loss_bf16_di_not_rounded", test_kl_loss_bf16_di_not_rounded},
    {"devices_kl_loss_refused_on_cuda", test_devices_kl_loss_refused_on_cuda},
    {"concurrent_calls_all_operators", test_concurrent_calls_all_operators},
    {"fp_mode_of_caller", test_fp_mode_of_caller},
    {"fork_after_threaded_calls", test_fork_after_threaded_calls},
    {"own_thread_tasks", test_own_thread_tasks},
    {"fwd_kl_workspace_alignment", test_fwd_kl_workspace_alignment},
    /* error paths of the forward and the KL step */
    {"errors_fwd_null_pointers", test_errors_fwd_null_pointers},
    {"errors_fwd_layout_rank_shape", test_errors_fwd_layout_rank_shape},
    {"errors_fwd_dtypes", test_errors_fwd_dtypes},
    {"errors_fwd_count_modes_band", test_errors_fwd_count_modes_band},
    {"errors_fwd_seq_lengths", test_errors_fwd_seq_lengths},
    {"errors_fwd_overlap", test_errors_fwd_overlap},
    {"errors_fwd_workspace_executor", test_errors_fwd_workspace_executor},
    {"errors_fwd_int32_limit", test_errors_fwd_int32_limit},
    {"errors_kl_null_pointers", test_errors_kl_null_pointers},
    {"errors_kl_shapes_dtypes", test_errors_kl_shapes_dtypes},
    {"errors_kl_overlap", test_errors_kl_overlap},
    {"errors_kl_workspace_executor", test_errors_kl_workspace_executor},
    {"errors_kl_target", test_errors_kl_target},
    /* random problems, valid and invalid (LIG_FUZZ_SECONDS is shared by the two) */
    {"fuzz", test_fuzz},
    {"fuzz_forward_kl", test_fuzz_forward_kl},
};

/* ctest's SKIP_RETURN_CODE: the run asked for a kernel set this CPU cannot run */
#define EXIT_SKIPPED 77

int main(int argc, char **argv)
{
    /* the suite's small problems run on every thread, as under ctest, unless the caller says otherwise */
    setenv("LIG_MIN_FLOPS_PER_THREAD", "0", 0);
    const char *isa = getenv("LIG_ISA");
    if (lig_get_kernel_set()[0] == '\0') {
        printf("SKIPPED: LIG_ISA=%s: %s\n", isa ? isa : "", lig_get_last_error());
        return EXIT_SKIPPED;
    }
    printf("kernel set: %s (this CPU supports %s)\n", lig_get_kernel_set(), lig_kernel_sets());
    return th_run_tests(all_tests, sizeof all_tests / sizeof all_tests[0], argc, argv);
}
