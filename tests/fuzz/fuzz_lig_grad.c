/*
 * libFuzzer target: lig_indexer_grad (the backward) through the public C API.
 *
 * An input decodes to (fuzz_case.h): threads and kernel set, up to two defects, the views of the
 * eight tensors (query, d_query, key, d_key, dy, sparse_indices, weights, d_weights: NULL, padded,
 * permuted, zero, overlapping or negative strides, offsets), then the problem -- dtypes, layout,
 * B, N1, N2, D, K (zeros included), S1/S2 or TND ends, optional BSND lengths, sparse_mode, band,
 * head_num, short index form, determinism -- and its data on the 1/8 grid, then one index per slot
 * (padding, any key of the batch, or with the index defect an out-of-range value).
 * The call then either succeeds and matches the float64 reference (tests/harness/backward_checks.h), or fails with
 * the status its defects call for, a message, and nothing written (tests/harness/fuzz_helpers.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tensor_buffers.h"
#include "fuzz_case.h"
#include "framework.h"
#include "backward_runner.h"

enum { G_SEQ = FZ_D_COMMON, G_INDEX, G_HEAD, G_SHORT_WS, G_STREAM, G_NULL_WS, G_DEFECTS };

static const int k_slots[8] = {RB_Q, RB_K, RB_DY, RB_IDX, RB_W, RB_DQ, RB_DK, RB_DW};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in;
    const int before = fz_begin(&in, data, size);
    char env[96];
    fz_decode_env(&in, env, sizeof env);
    int kinds[2];
    fz_views vs;
    fz_decode_defects_and_views(&in, G_DEFECTS, kinds, &vs, 8);
    tcase tc;
    fz_decode_tcase(&in, &tc, 0);
    fuzz_expect ex;
    memset(&ex, 0, sizeof ex);
    const int p2 = fz_p2_of(kinds, G_SHORT_WS, G_STREAM, G_NULL_WS);
    for (int i = 0; i < 2; i++) {
        if (kinds[i] == G_SEQ) {
            fz_defect_seq(&in, &tc, &ex);
        }
    }
    fz_decode_indices(&in, &tc, kinds[0] == G_INDEX || kinds[1] == G_INDEX);

    run_inst ri;
    run_setup(&tc, &ri);
    tbuf_set_stride_source(NULL, NULL);
    char desc[512], label[1024];
    tc_describe(&tc, desc, sizeof desc);
    if (!fz_creation_failed(&ri)) {
        /* with stride-0 views the library sees the last value written to each element */
        tbuf_read_doubles(&ri.buf[RB_DY], tc.dy);
        for (int64_t i = 0; i < tc_numel_slots(&tc); i++) {
            tc.idx[i] = tbuf_read_int(&ri.buf[RB_IDX], i);
        }
        const ref_problem *p = &tc.p;
        const int seq_ok = ref_seq_ok(p, NULL, 0);
        ex.invalid1 |= !seq_ok;
        ex.empty = p->B == 0 || p->S1 == 0 || p->S2 == 0 || p->N1 == 0 || p->D == 0 || p->K == 0;
        fz_expect_outputs(&ri, &ex);
        const int invalid2 = seq_ok && ref_find_bad_index(p, tc.idx) >= 0;
        if (invalid2) {
            fuzz_note_defect(&ex, "index out of range in a valid row");
        }
        fz_op_desc op = {k_slots, 8, k_slots, 8, {0}, 1};
        const unsigned fl = 1u << tc.dtype;
        op.allowed[RB_Q] = op.allowed[RB_K] = op.allowed[RB_DY] = op.allowed[RB_W] = fl;
        op.allowed[RB_DQ] = op.allowed[RB_DK] = fl;
        op.allowed[RB_DW] = fl | 1u << LIG_FLOAT32;
        op.allowed[RB_IDX] = 1u << LIG_INT32 | 1u << LIG_INT64;
        for (int i = 0; i < 2; i++) {
            if (kinds[i] >= 0 && kinds[i] < FZ_D_COMMON) {
                fz_defect_common(&in, kinds[i], &ri, &op, &ex);
            } else if (kinds[i] == G_HEAD) {
                ri.head_num = fz_u8(&in) & 1 ? p->N1 + fz_range(&in, 1, 4) : -fz_range(&in, 1, 4);
                ex.invalid1 = 1;
                fuzz_note_defect(&ex, "head_num");
            }
        }
        snprintf(label, sizeof label, "backward [%s] %s defects: %s%s", desc, env, ex.what[0] ? ex.what : "none",
                 fz_p2_name(p2));
        suite_case sc = {.tc = &tc};
        fz_run(&in, &ri, &ex, p2, invalid2, &suite_backward, &sc, label);
    } else {
        snprintf(label, sizeof label, "backward [%s] (a negative stride)", desc);
    }
    inst_teardown(&ri);
    tc_free(&tc);
    fz_reset_env();
    fz_verdict(before, label);
    return 0;
}
