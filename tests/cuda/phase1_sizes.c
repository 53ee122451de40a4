/*
 * cuda-phase1-sizes: the CUDA backend's phase 1 at DeepSeek's sizes, on a machine
 * without a GPU. Phase 1 reads no tensor data and touches no device (docs/cuda.md), so CUDA tensors
 * with fake, non-NULL device addresses stand in for device memory: nothing here calls CUDA.
 *
 * For each problem (N1 64, N2 1, D 128, K 2048, bf16, BSND, sparse_mode 3) at B 1, S1 = S2 = 128K and
 * at B 1024, S1 = S2 = 4096, it sizes the workspace of every CUDA operator through lig.h:
 *   lig_indexer (with and without sparse_values), lig_indexer_grad (deterministic and not),
 *   lig_kl_loss_and_dy,
 * prints each size and checks it against the bound of docs/cuda.md (its chunked workspace): 4 GiB, plus, for the backward,
 * the fp32 dK accumulator (key_rows * N2 * D * 4 bytes), whatever B and S are.
 * The operators without a CUDA form (the quantized forward, the paged forward, the quantized
 * logits, the fused KL loss) must be refused in phase 1 with a message naming a tensor (the one
 * whose device chose the backend), the operator and CUDA.
 * Exit 0 when every check passes, 1 otherwise (each failure printed).
 */
#define _POSIX_C_SOURCE 200112L /* unsetenv */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lig.h"

static int failures;

#define GIB (1ull << 30)
static const uint64_t BOUND = 4 * GIB; /* the fixed-size region of any operator */

/* A fake device address per tensor, 1 TiB apart (the largest tensor here, the B 1024 query, is
 * 64 GiB), so that no two tensors overlap should phase 1 compare their extents. Never dereferenced. */
static void *fake_address(int slot) { return (void *)(uintptr_t)((uint64_t)(slot + 1) << 40); }

/* A tensor on `device`, or the run ends with lig's message naming `what`. */
static lig_tensor *tensor_on(void *data, lig_dtype dtype, int64_t ndim, const int64_t *shape, lig_device device,
                             const char *what) {
    lig_tensor *t = lig_create_tensor_on(data, dtype, ndim, shape, NULL, device, 0);
    if (!t) {
        fprintf(stderr, "FATAL: lig_create_tensor_on (%s) failed: %s\n", what, lig_get_last_error());
        exit(1);
    }
    return t;
}

static lig_tensor *cuda_tensor(int slot, lig_dtype dtype, int64_t ndim, const int64_t *shape) {
    char what[32];
    snprintf(what, sizeof what, "tensor %d", slot);
    return tensor_on(fake_address(slot), dtype, ndim, shape, LIG_DEVICE_CUDA, what);
}

static lig_tensor *host_tensor(void *data, lig_dtype dtype, int64_t ndim, const int64_t *shape) {
    return tensor_on(data, dtype, ndim, shape, LIG_DEVICE_HOST, "host tensor");
}

static double gib(uint64_t bytes) { return (double)bytes / (double)GIB; }

/* Phase 1 returned `st` and `bytes` for `what`: it must succeed and stay within `bound`. */
static void check_size(const char *what, long long B, long long S, lig_status st, uint64_t bytes, uint64_t bound,
                       lig_executor *e) {
    if (st != LIG_SUCCESS) {
        printf("FAIL %-34s B %4lld S %6lld: phase 1 refused it: %s\n", what, B, S, lig_get_last_error());
        failures++;
        return;
    }
    const int ok = bytes <= bound;
    printf("%s %-34s B %4lld S %6lld: workspace %14llu bytes (%9.3f GiB), bound %7.3f GiB%s\n", ok ? "ok  " : "FAIL",
           what, B, S, (unsigned long long)bytes, gib(bytes), gib(bound), ok ? "" : ": over the bound");
    if (!ok) failures++;
    lig_destroy_executor(e);
}

typedef struct shape {
    int64_t B, S, N1, N2, D, K;
} shape;

static void size_operators(shape p) {
    const int64_t q_shape[4] = {p.B, p.S, p.N1, p.D}, k_shape[4] = {p.B, p.S, p.N2, p.D},
                  w_shape[3] = {p.B, p.S, p.N1}, slot_shape[4] = {p.B, p.S, p.N2, p.K}, loss_shape[1] = {1};
    enum { Q, K, W, IDX, VAL, TARGET, DY, DQ, DK, DW, LOSS, TENSORS };
    lig_tensor *t[TENSORS];
    t[Q] = cuda_tensor(Q, LIG_BFLOAT16, 4, q_shape);
    t[K] = cuda_tensor(K, LIG_BFLOAT16, 4, k_shape);
    t[W] = cuda_tensor(W, LIG_BFLOAT16, 3, w_shape);
    t[IDX] = cuda_tensor(IDX, LIG_INT32, 4, slot_shape); /* S <= 128K: every key index fits INT32 */
    t[VAL] = cuda_tensor(VAL, LIG_BFLOAT16, 4, slot_shape);
    t[TARGET] = cuda_tensor(TARGET, LIG_BFLOAT16, 4, slot_shape);
    t[DY] = cuda_tensor(DY, LIG_BFLOAT16, 4, slot_shape);
    t[DQ] = cuda_tensor(DQ, LIG_BFLOAT16, 4, q_shape);
    t[DK] = cuda_tensor(DK, LIG_BFLOAT16, 4, k_shape);
    t[DW] = cuda_tensor(DW, LIG_BFLOAT16, 3, w_shape);
    t[LOSS] = cuda_tensor(LOSS, LIG_FLOAT32, 1, loss_shape);
    /* the backward may also keep the fp32 dK accumulator, [key rows][N2][D] */
    const uint64_t dk_acc = (uint64_t)p.B * (uint64_t)p.S * (uint64_t)p.N2 * (uint64_t)p.D * 4u;

    for (int with_values = 1; with_values >= 0; with_values--) {
        uint64_t bytes = 0;
        lig_executor *e = NULL;
        const lig_status st = lig_indexer_get_workspace_size(t[Q], t[K], t[W], NULL, NULL, "BSND", p.K, 3, INT64_MAX,
                                                             INT64_MAX, t[IDX], with_values ? t[VAL] : NULL, &bytes, &e);
        check_size(with_values ? "lig_indexer (with values)" : "lig_indexer (indices only)", p.B, p.S, st, bytes,
                   BOUND, e);
    }
    for (int deterministic = 1; deterministic >= 0; deterministic--) {
        uint64_t bytes = 0;
        lig_executor *e = NULL;
        const lig_status st = lig_indexer_grad_get_workspace_size(
            t[Q], t[K], t[DY], t[IDX], t[W], NULL, NULL, 0, "BSND", 3, INT64_MAX, INT64_MAX, deterministic != 0, t[DQ],
            t[DK], t[DW], &bytes, &e);
        check_size(deterministic ? "lig_indexer_grad (deterministic)" : "lig_indexer_grad (atomic dK)", p.B, p.S, st,
                   bytes, BOUND + dk_acc, e);
    }
    {
        uint64_t bytes = 0;
        lig_executor *e = NULL;
        const lig_status st =
            lig_kl_loss_and_dy_get_workspace_size(t[VAL], t[IDX], t[TARGET], t[LOSS], t[DY], &bytes, &e);
        check_size("lig_kl_loss_and_dy", p.B, p.S, st, bytes, BOUND, e);
    }
    for (int i = 0; i < TENSORS; i++) lig_destroy_tensor(t[i]);
}

/* Phase 1 refused `what` with LIG_ERR_PARAM_INVALID and a message naming `tensor`, the operator and CUDA. */
static void check_refused(const char *what, const char *tensor, lig_status st, lig_executor *e) {
    const char *m = lig_get_last_error();
    char named[64];
    snprintf(named, sizeof named, "%s:", tensor);
    const int ok = st == LIG_ERR_PARAM_INVALID && e == NULL && strncmp(m, named, strlen(named)) == 0 &&
                   strstr(m, "CUDA") != NULL && strstr(m, what) != NULL;
    printf("%s %-34s refused on CUDA: status %d, \"%s\"\n", ok ? "ok  " : "FAIL", what, (int)st,
           st == LIG_SUCCESS ? "(accepted)" : m);
    if (!ok) failures++;
    if (st == LIG_SUCCESS) lig_destroy_executor(e);
}

/* The operators with no CUDA form, at a small shape (B 1, S 16, N1 4, D 8, K 4): refused by name. */
static void refuse_operators(void) {
    enum { B = 1, S = 16, N1 = 4, D = 8, KK = 4, BLOCKS = 2, BLOCK = 8 };
    const int64_t q_shape[4] = {B, S, N1, D}, k_shape[4] = {B, S, 1, D}, w_shape[3] = {B, S, N1},
                  slot_shape[4] = {B, S, 1, KK}, ks_shape[3] = {B, S, 1}, cache_shape[4] = {BLOCKS, BLOCK, 1, D},
                  table_shape[2] = {B, BLOCKS}, len_shape[1] = {B}, row_shape[2] = {B, S}, logits_shape[4] = {B, S, 1, S},
                  lse_shape[4] = {B, 1, S, N1}, loss_shape[1] = {1};
    int32_t key_len[B] = {S}, key_end[B * S];
    for (int r = 0; r < S; r++) key_end[r] = r + 1;
    int slot = 0;
    lig_tensor *q8 = cuda_tensor(slot++, LIG_FLOAT8_E4M3FN, 4, q_shape), *k8 = cuda_tensor(slot++, LIG_FLOAT8_E4M3FN, 4, k_shape),
               *wf = cuda_tensor(slot++, LIG_FLOAT32, 3, w_shape), *ksc = cuda_tensor(slot++, LIG_FLOAT32, 3, ks_shape),
               *idx = cuda_tensor(slot++, LIG_INT32, 4, slot_shape), *val = cuda_tensor(slot++, LIG_FLOAT32, 4, slot_shape),
               *q = cuda_tensor(slot++, LIG_BFLOAT16, 4, q_shape), *k = cuda_tensor(slot++, LIG_BFLOAT16, 4, k_shape),
               *w = cuda_tensor(slot++, LIG_BFLOAT16, 3, w_shape), *cache = cuda_tensor(slot++, LIG_BFLOAT16, 4, cache_shape),
               *table = cuda_tensor(slot++, LIG_INT32, 2, table_shape),
               *logits = cuda_tensor(slot++, LIG_FLOAT32, 4, logits_shape),
               *lse = cuda_tensor(slot++, LIG_FLOAT32, 4, lse_shape), *dq = cuda_tensor(slot++, LIG_BFLOAT16, 4, q_shape),
               *dk = cuda_tensor(slot++, LIG_BFLOAT16, 4, k_shape), *dw = cuda_tensor(slot++, LIG_BFLOAT16, 3, w_shape),
               *loss = cuda_tensor(slot++, LIG_FLOAT32, 1, loss_shape);
    lig_tensor *lengths = host_tensor(key_len, LIG_INT32, 1, len_shape), *ends = host_tensor(key_end, LIG_INT32, 2, row_shape);
    uint64_t bytes = 0;
    lig_executor *e = NULL;
    lig_status st = lig_quant_indexer_get_workspace_size(q8, k8, wf, NULL, ksc, NULL, NULL, NULL, 0, 0, "BSND", "BSND", KK,
                                                         3, INT64_MAX, INT64_MAX, idx, val, &bytes, &e);
    check_refused("lig_quant_indexer", "query", st, e);
    e = NULL;
    st = lig_quant_logits_get_workspace_size(q8, k8, wf, NULL, ksc, NULL, NULL, ends, "BSND", "BSND", true, false, logits,
                                             0, NULL, NULL, NULL, &bytes, &e);
    check_refused("lig_quant_logits", "query", st, e);
    e = NULL;
    st = lig_indexer_paged_get_workspace_size(q, cache, table, w, NULL, lengths, "BSND", KK, 3, INT64_MAX, INT64_MAX, idx,
                                              NULL, &bytes, &e);
    check_refused("lig_indexer_paged", "query", st, e);
    e = NULL;
    st = lig_sparse_indexer_grad_kl_loss_get_workspace_size(q, k, q, k, w, idx, NULL, NULL, lse, NULL, NULL, NULL, NULL, 0.125,
                                                       "BSND", 3, INT64_MAX, INT64_MAX, LIG_KL_TARGET_L1, true, dq, dk, dw,
                                                       loss, &bytes, &e);
    check_refused("lig_sparse_indexer_grad_kl_loss", "query", st, e);
    lig_tensor *all[] = {q8, k8, wf, ksc, idx, val, q, k, w, cache, table, logits, lse, dq, dk, dw, loss, lengths, ends};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) lig_destroy_tensor(all[i]);
}

int main(void) {
    /* the default chunk budget, not a test knob left in the environment (cuda_plan.cuh) */
    unsetenv("LIG_CUDA_CHUNK_BYTES");
    const shape shapes[] = {{1, 131072, 64, 1, 128, 2048}, {1024, 4096, 64, 1, 128, 2048}};
    printf("cuda-phase1-sizes: N1 64, N2 1, D 128, K 2048, bf16, BSND, sparse_mode 3; bound 4 GiB (+ fp32 dK "
           "accumulator for the backward)\n");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) size_operators(shapes[i]);
    refuse_operators();
    if (failures) {
        printf("FAIL cuda-phase1-sizes: %d check(s) failed\n", failures);
        return 1;
    }
    printf("PASS cuda-phase1-sizes: every CUDA operator's phase-1 workspace within its bound\n");
    return 0;
}
