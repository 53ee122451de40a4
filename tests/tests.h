/* Prototypes of every test function; main.c lists them in its table. */
#ifndef LIG_TESTS_TESTS_H
#define LIG_TESTS_TESTS_H

/* test_half.c */
void test_half_known_values(void);
void test_half_roundtrip_all_patterns(void);
void test_half_rounding_midpoints(void);
void test_half_bf16_matches_bit_trick(void);
void test_half_public_conversions(void);

/* test_fp8.c */
void test_fp8_decode_all_codes(void);
void test_fp8_encode_midpoints(void);
void test_fp8_encode_special_values(void);
void test_fp8_encode_brute_force(void);
void test_fp8_matches_torch(void);

/* test_quant_forward.c */
void test_quant_fwd_matrix(void);
void test_quant_fwd_bands(void);
void test_quant_fwd_degenerate(void);
void test_quant_fwd_int8_long_dot(void);
void test_quant_fwd_nan_codes(void);
void test_quant_fwd_determinism_threads(void);
void test_quant_fwd_matches_float_forward(void);
void test_quant_fwd_same_on_every_set(void);
void test_quant_fwd_fp8_each_set(void);
void test_quant_fwd_nonfinite_weights_and_scales(void);

/* test_quant_logits.c */
void test_quant_logits_matrix(void);
void test_quant_logits_matches_indexer(void);
void test_quant_logits_threads_and_schedule(void);
void test_quant_logits_every_set(void);
void test_quant_logits_fused_cache(void);
void test_quant_logits_schedule_values(void);
void test_quant_logits_degenerate(void);

/* test_errors_logits.c */
void test_errors_logits_phase1(void);
void test_errors_logits_phase2(void);
void test_errors_logits_schedule(void);

/* test_forward_split.c */
void test_fwd_split_plan(void);
void test_fwd_split_decode(void);
void test_fwd_split_ties_and_nan(void);
void test_quant_fwd_split_decode(void);

/* test_errors_quant.c */
void test_errors_quant_table(void);
void test_errors_quant_phase2(void);
void test_errors_quant_cuda_refused(void);
void test_sizes_quant_forward(void);

/* test_check.c */
void test_check_per_element_bound(void);

/* test_reference.c */
void test_ref_visibility_rules(void);
void test_ref_visible_range_matches_pointwise(void);
void test_ref_row_info_tnd(void);
void test_ref_seq_ok_rules(void);
void test_ref_hand_example(void);
void test_ref_backward_matches_finite_differences(void);
void test_ref_generator_mix(void);

/* test_api.c */
void test_api_version(void);
void test_api_format_shape(void);
void test_api_status_strings(void);
void test_api_create_tensor(void);
void test_api_last_error_is_per_thread(void);
void test_api_destroy_executor(void);
void test_api_num_threads(void);
void test_api_empty_problems(void);
void test_api_workspace_reuse_and_alignment(void);
void test_devices_create_tensor_on(void);
void test_devices_mixing_refused(void);
void test_devices_lengths_on_host(void);
void test_devices_cuda_build(void);
void test_devices_seam(void);

/* test_errors.c */
void test_errors_null_pointers(void);
void test_errors_layout(void);
void test_errors_rank(void);
void test_errors_shape_pairs(void);
void test_errors_dtypes(void);
void test_errors_heads_modes_band(void);
void test_errors_seq_lengths(void);
void test_errors_overlap(void);
void test_errors_workspace(void);
void test_errors_index_range(void);
void test_errors_message_shapes(void);
void test_errors_invalid_rows_are_not_read(void);

/* test_tuning.c */
void test_tuning_defaults_and_values(void);
void test_tuning_bad_values_ignored(void);
void test_tuning_override(void);

/* test_process_state.c */
void test_fp_mode_of_caller(void);
void test_fork_after_threaded_calls(void);
void test_own_thread_tasks(void);

/* test_grad_matrix.c */
void test_grad_matrix_bsnd(void);
void test_grad_matrix_tnd(void);
void test_grad_strides(void);
void test_grad_band_limits(void);
void test_grad_continuous_data(void);
void test_grad_poison_is_ignored(void);
void test_grad_forward_like_indices(void);
void test_grad_head_num_and_forms(void);

/* test_determinism.c */
void test_determinism_bitwise(void);
void test_determinism_off_loses_no_update(void);
void test_grad_threads_change_between_phases(void);

/* test_large.c */
void test_large_bsnd_128k(void);
void test_large_tnd_128k(void);
void test_large_batch_1024(void);
void test_large_head_dims(void);
void test_large_topk_counts(void);
void test_large_heads_80_groups_5(void);
void test_large_deepseek_shape(void);

/* test_fuzz.c */
void test_fuzz(void);

/* test_forward.c */
void test_fwd_ref_hand_example(void);
void test_fwd_ref_self_consistency(void);
void test_fwd_matrix_bsnd(void);
void test_fwd_matrix_tnd(void);
void test_fwd_ties(void);
void test_fwd_strides(void);
void test_fwd_band_limits(void);
void test_fwd_continuous_data(void);
void test_fwd_topk_counts(void);
void test_fwd_trivial_cases(void);
void test_fwd_invalid_rows(void);
void test_fwd_feeds_backward(void);
void test_fwd_determinism_threads(void);
void test_fwd_workspace_bounded(void);
void test_fwd_long_sequence(void);
void test_fwd_nonfinite_inputs(void);
void test_fwd_nonfinite_weights_wide_groups(void);
void test_fwd_threads_change_between_phases(void);
void test_fwd_large_batch_1024(void);
void test_fwd_deepseek_shape(void);

/* test_kl.c */
void test_kl_ref_hand_example(void);
void test_kl_ref_finite_differences(void);
void test_kl_matrix(void);
void test_kl_strides(void);
void test_kl_special_rows(void);
void test_kl_large_logits(void);
void test_kl_empty(void);
void test_kl_determinism_threads(void);
void test_kl_chain_forward_kl_backward(void);
void test_kl_threads_change_between_phases(void);
void test_fwd_kl_workspace_alignment(void);

/* test_sparse_kl_loss.c */
void test_kl_loss_ref_finite_differences(void);
void test_kl_loss_matrix(void);
void test_kl_loss_sparse_statistics_targets_agree(void);
void test_kl_loss_cann_matrix(void);
void test_kl_loss_cann_clamps(void);
void test_kl_loss_determinism_threads(void);
void test_kl_loss_errors(void);
void test_kl_loss_empty_index_dims(void);
void test_kl_loss_bf16_di_not_rounded(void);
void test_devices_kl_loss_refused_on_cuda(void);

/* test_concurrent.c */
void test_concurrent_calls_all_operators(void);

/* test_errors_fwd.c */
void test_errors_fwd_null_pointers(void);
void test_errors_fwd_layout_rank_shape(void);
void test_errors_fwd_dtypes(void);
void test_errors_fwd_count_modes_band(void);
void test_errors_fwd_seq_lengths(void);
void test_errors_fwd_overlap(void);
void test_errors_fwd_workspace_executor(void);
void test_errors_fwd_int32_limit(void);
void test_errors_kl_null_pointers(void);
void test_errors_kl_shapes_dtypes(void);
void test_errors_kl_overlap(void);
void test_errors_kl_workspace_executor(void);
void test_errors_kl_target(void);

/* test_fuzz_fwd.c */
void test_fuzz_forward_kl(void);

/* test_kernels.c (white-box) */
void test_kernels_sets_reported(void);
void test_kernels_f32_gemm_ukernels(void);
void test_kernels_f32_gemm_driver(void);
void test_kernels_gate_and_scores(void);
void test_kernels_rows(void);
void test_kernels_bf16_gemm(void);
void test_kernels_bf16_operands(void);

/* test_quant_engines.c (white-box: the quantized forward's score kernels and INT8 engine) */
void test_quant_engines_scores(void);
void test_quant_engines_int8_same_as_portable(void);

/* test_kernels_i8.c (white-box: the quantized forward's kernels) */
struct lig_kernel_set;
/* Every kernel set the CPU supports (scalar first) into out (room for all); reports the others. */
int supported_sets(const struct lig_kernel_set **out);
void test_kernels_i8_gemm(void);
void test_kernels_fp8_all_codes(void);
void test_kernels_fp8_rows(void);

/* test_paged.c */
void test_paged_forward(void);
void test_paged_errors(void);

/* test_subnormal.c */
void test_subnormal_inputs(void);

/* test_topk.c (white-box) */
void test_topk_against_sorted_reference(void);
void test_topk_many_cuts(void);

/* test_commit_ring.c (white-box) */
void test_commit_ring_capacity(void);

/* test_sizes.c */
void test_sizes_create_tensor(void);
void test_sizes_forward(void);
void test_sizes_batch_count(void);
void test_sizes_paged_forward(void);
void test_sizes_backward(void);
void test_sizes_kl_step(void);

#endif /* LIG_TESTS_TESTS_H */
