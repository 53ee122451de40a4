/* Every kind of bad argument to the six operators: the ACLNN_ERR_* code of lig's status, lig's
 * message (or the front end's, for what only it checks), and nothing written on failure. */
#include <stdint.h>
#include <string.h>

#include <acl/acl.h>
#include <aclnnop/aclnn_lightning_indexer.h>
#include <aclnnop/aclnn_lightning_indexer_grad.h>
#include <aclnnop/aclnn_lightning_indexer_v2.h>
#include <aclnnop/aclnn_lightning_indexer_v2_metadata.h>
#include <aclnnop/aclnn_quant_lightning_indexer.h>
#include <aclnnop/aclnn_quant_lightning_indexer_v2.h>
#include <aclnnop/aclnn_quant_lightning_indexer_v2_metadata.h>
#include <aclnnop/aclnn_sparse_lightning_indexer_grad_kl_loss.h>
#include <lig.h>

#include "check.h"

enum { B = 1, S1 = 3, S2 = 4, N1 = 2, N2 = 1, D = 4, K = 2 };
#define SENTINEL 123.0f

typedef struct dev {
    void *mem;
    aclTensor *t;
} dev;

static dev make(const void *host, size_t bytes, const int64_t *shape, uint64_t nd, aclDataType dt) {
    dev d = {NULL, NULL};
    CHECK_EQ_INT(aclrtMalloc(&d.mem, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtMemcpy(d.mem, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    d.t = aclCreateTensor(shape, nd, dt, NULL, 0, ACL_FORMAT_ND, shape, nd, d.mem);
    CHECK(d.t != NULL);
    return d;
}

static void drop(dev *d) {
    if (d->t) CHECK_EQ_INT(aclDestroyTensor(d->t), ACLNN_SUCCESS);
    if (d->mem) CHECK_EQ_INT(aclrtFree(d->mem), ACL_SUCCESS);
    d->t = NULL;
    d->mem = NULL;
}

/* The inputs both operators' cases share: query and key patterns, weights, every row selecting
 * keys t and t-1 (or -1; row 1's second slot `bad_index` when not 0), outputs set to the sentinel. */
static void fill_inputs(float *q, float *k, float *w, int32_t *idx, float *out, size_t nout, int32_t bad_index) {
    for (int i = 0; i < B * S1 * N1 * D; i++) q[i] = (float)((i % 7) - 2) * 0.25f;
    for (int i = 0; i < B * S2 * N2 * D; i++) k[i] = (float)((i % 5) - 1) * 0.5f;
    for (int i = 0; i < B * S1 * N1; i++) w[i] = 0.5f + 0.125f * (float)i;
    for (int t = 0; t < S1; t++) {
        idx[t * K] = t;
        idx[t * K + 1] = t - 1;
    }
    idx[K + 1] = bad_index ? bad_index : idx[K + 1];
    for (size_t i = 0; i < nout; i++) out[i] = SENTINEL;
}

/* The backward's arguments: fp32 BSND, every row selecting keys t and t-1 (or -1). */
typedef struct grad_args {
    dev q, k, dy, idx, w, dq, dk, dw;
} grad_args;

static const int64_t q_shape[4] = {B, S1, N1, D}, k_shape[4] = {B, S2, N2, D}, slot_shape[3] = {B, S1, K},
                     w_shape[3] = {B, S1, N1};

/* fill_inputs' query, key, weights and index slots on the device, as both operators read them. */
static void make_inputs(dev *q, dev *k, dev *w, dev *idx, const float *hq, const float *hk, const float *hw,
                        const int32_t *hidx) {
    *q = make(hq, sizeof(float) * B * S1 * N1 * D, q_shape, 4, ACL_FLOAT);
    *k = make(hk, sizeof(float) * B * S2 * N2 * D, k_shape, 4, ACL_FLOAT);
    *w = make(hw, sizeof(float) * B * S1 * N1, w_shape, 3, ACL_FLOAT);
    *idx = make(hidx, sizeof(int32_t) * B * S1 * K, slot_shape, 3, ACL_INT32);
}

/* The gradients both operators write, shaped as query, key and weights, filled from `sentinels`. */
static void make_grads(dev *dq, dev *dk, dev *dw, const float *sentinels) {
    *dq = make(sentinels, sizeof(float) * B * S1 * N1 * D, q_shape, 4, ACL_FLOAT);
    *dk = make(sentinels, sizeof(float) * B * S2 * N2 * D, k_shape, 4, ACL_FLOAT);
    *dw = make(sentinels, sizeof(float) * B * S1 * N1, w_shape, 3, ACL_FLOAT);
}

static grad_args grad_make(int32_t bad_index) {
    float q[B * S1 * N1 * D], k[B * S2 * N2 * D], dy[B * S1 * K], w[B * S1 * N1], out[B * S2 * N1 * D];
    int32_t idx[B * S1 * K];
    fill_inputs(q, k, w, idx, out, sizeof out / sizeof out[0], bad_index);
    for (int t = 0; t < S1; t++) {
        dy[t * K] = 1.0f;
        dy[t * K + 1] = -0.5f;
    }
    grad_args a;
    make_inputs(&a.q, &a.k, &a.w, &a.idx, q, k, w, idx);
    a.dy = make(dy, sizeof dy, slot_shape, 3, ACL_FLOAT);
    make_grads(&a.dq, &a.dk, &a.dw, out);
    return a;
}

static void grad_drop(grad_args *a) {
    dev *all[] = {&a->q, &a->k, &a->dy, &a->idx, &a->w, &a->dq, &a->dk, &a->dw};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
}

/* Whether every element of an fp32 output still holds the sentinel. */
static bool untouched(const dev *d, size_t n) {
    float host[64];
    if (n > 64 || aclrtMemcpy(host, sizeof host, d->mem, n * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS)
        return false;
    for (size_t i = 0; i < n; i++)
        if (host[i] != SENTINEL) return false;
    return true;
}

static bool grad_outputs_untouched(const grad_args *a) {
    return untouched(&a->dq, B * S1 * N1 * D) && untouched(&a->dk, B * S2 * N2 * D) && untouched(&a->dw, B * S1 * N1);
}

static char bsnd[] = "BSND";

static aclnnStatus grad_phase1(const grad_args *a, const aclTensor *q, const aclTensor *k, char *layout,
                               uint64_t *ws, aclOpExecutor **e) {
    return aclnnLightningIndexerGradGetWorkspaceSize(q, k, a->dy.t, a->idx.t, a->w.t, NULL, NULL, N1, layout, 3,
                                                     INT64_MAX, INT64_MAX, true, a->dq.t, a->dk.t, a->dw.t, ws, e);
}

/* A phase-1 failure leaves the caller's workspaceSize and executor as they were. */
#define CHECK_PHASE1_FAILS(call, code, needle)                                  \
    do {                                                                        \
        uint64_t ws_ = 77;                                                      \
        aclOpExecutor *e_ = (aclOpExecutor *)&ws_;                              \
        CHECK_EQ_INT(call, code);                                               \
        CHECK_MSG_HAS(aclGetRecentErrMsg(), needle);                            \
        CHECK(ws_ == 77 && e_ == (aclOpExecutor *)&ws_);                        \
    } while (0)

static void test_grad_phase1(void) {
    grad_args a = grad_make(0);
    int not_a_tensor = 0;
    static float host_q[B * S1 * N1 * D];
    CHECK_PHASE1_FAILS(grad_phase1(&a, NULL, a.k.t, bsnd, &ws_, &e_), ACLNN_ERR_PARAM_NULLPTR, "query");
    CHECK_PHASE1_FAILS(grad_phase1(&a, a.q.t, a.k.t, NULL, &ws_, &e_), ACLNN_ERR_PARAM_NULLPTR, "inputLayout");
    CHECK_EQ_INT(grad_phase1(&a, a.q.t, a.k.t, bsnd, NULL, NULL), ACLNN_ERR_PARAM_NULLPTR);

    /* lig's own checks: its status as the ACLNN_ERR_* code, its message */
    char bnsd[] = "BNSD";
    CHECK_PHASE1_FAILS(grad_phase1(&a, a.q.t, a.k.t, bnsd, &ws_, &e_), ACLNN_ERR_PARAM_INVALID, "layout");
    CHECK_MSG_HAS(lig_get_last_error(), "BNSD"); /* ... and the message the front end passed on was lig's */
    dev k16;
    uint16_t k16_host[B * S2 * N2 * D] = {0};
    k16 = make(k16_host, sizeof k16_host, k_shape, 4, ACL_FLOAT16);
    CHECK_PHASE1_FAILS(grad_phase1(&a, a.q.t, k16.t, bsnd, &ws_, &e_), ACLNN_ERR_PARAM_INVALID, "key");
    {
        char lig_msg[512];
        snprintf(lig_msg, sizeof lig_msg, "%s", lig_get_last_error());
        uint64_t ws = 0;
        aclOpExecutor *e = NULL;
        CHECK_EQ_INT(grad_phase1(&a, a.q.t, k16.t, bsnd, &ws, &e), ACLNN_ERR_PARAM_INVALID);
        CHECK_MSG_HAS(aclGetRecentErrMsg(), lig_msg);
    }
    drop(&k16);

    /* what only the front end checks */
    CHECK_PHASE1_FAILS(grad_phase1(&a, (const aclTensor *)&not_a_tensor, a.k.t, bsnd, &ws_, &e_),
                       ACLNN_ERR_PARAM_INVALID, "query: ");
    aclTensor *host_backed = aclCreateTensor(q_shape, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, q_shape, 4, host_q);
    CHECK_PHASE1_FAILS(grad_phase1(&a, host_backed, a.k.t, bsnd, &ws_, &e_), ACLNN_ERR_PARAM_INVALID,
                       "not in memory from aclrtMalloc");
    aclDestroyTensor(host_backed);
    int64_t big[4] = {B, S1 + 1, N1, D}; /* the storage claims more than was allocated */
    aclTensor *overrun = aclCreateTensor(big, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, big, 4, a.q.mem);
    CHECK_PHASE1_FAILS(grad_phase1(&a, overrun, a.k.t, bsnd, &ws_, &e_), ACLNN_ERR_PARAM_INVALID,
                       "past the end of their allocation");
    aclDestroyTensor(overrun);
    aclTensor *as_double = aclCreateTensor(w_shape, 3, ACL_DOUBLE, NULL, 0, ACL_FORMAT_ND, w_shape, 3, a.q.mem);
    CHECK_PHASE1_FAILS(grad_phase1(&a, as_double, a.k.t, bsnd, &ws_, &e_), ACLNN_ERR_PARAM_INVALID, "ACL_DOUBLE");
    aclDestroyTensor(as_double);
    aclTensor *nz = aclCreateTensor(q_shape, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_FRACTAL_NZ, q_shape, 4, a.q.mem);
    CHECK_PHASE1_FAILS(grad_phase1(&a, nz, a.k.t, bsnd, &ws_, &e_), ACLNN_ERR_PARAM_INVALID, "ACL_FORMAT_FRACTAL_NZ");
    aclDestroyTensor(nz);
    int64_t rev_strides[4] = {-S1 * N1 * D, N1 * D, D, 1}; /* valid in CANN's model, refused by lig */
    aclTensor *rev = aclCreateTensor(q_shape, 4, ACL_FLOAT, rev_strides, 0, ACL_FORMAT_ND, q_shape, 4, a.q.mem);
    CHECK(rev != NULL);
    CHECK_PHASE1_FAILS(grad_phase1(&a, rev, a.k.t, bsnd, &ws_, &e_), ACLNN_ERR_PARAM_INVALID, "query: ");
    aclDestroyTensor(rev);
    CHECK(grad_outputs_untouched(&a));
    grad_drop(&a);
}

/* Phase 2 of a plan whose phase 1 returned `planned` (a failure is passed on), in a workspace from
 * aclrtMalloc that is freed afterwards. Call it after phase 1 has set ws and e, not around it. */
static aclnnStatus run_planned(aclnnStatus planned, uint64_t ws, aclOpExecutor *e,
                               aclnnStatus (*run)(void *, uint64_t, aclOpExecutor *, aclrtStream)) {
    if (planned != ACLNN_SUCCESS) return planned;
    void *work = NULL;
    if (ws) CHECK_EQ_INT(aclrtMalloc(&work, ws, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    aclnnStatus st = run(work, ws, e, NULL);
    if (work) aclrtFree(work);
    return st;
}

/* Runs phase 1 (which must succeed) and returns the executor. */
static aclOpExecutor *grad_plan(const grad_args *a, uint64_t *ws) {
    aclOpExecutor *e = NULL;
    CHECK_EQ_INT(grad_phase1(a, a->q.t, a->k.t, bsnd, ws, &e), ACLNN_SUCCESS);
    return e;
}

static void test_grad_phase2(void) {
    /* an index past the keys: lig finds it before writing anything */
    grad_args a = grad_make(S2 + 3);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    void *work = NULL;
    aclnnStatus st = grad_phase1(&a, a.q.t, a.k.t, bsnd, &ws, &e);
    st = run_planned(st, ws, e, aclnnLightningIndexerGrad);
    CHECK_EQ_INT(st, ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "sparse");
    CHECK(grad_outputs_untouched(&a));
    grad_drop(&a);

    a = grad_make(0);
    aclrtStream stream = NULL;
    CHECK_EQ_INT(aclrtCreateStream(&stream), ACL_SUCCESS);

    /* a workspace smaller than asked for, or not from aclrtMalloc */
    e = grad_plan(&a, &ws);
    if (ws > 0) {
        CHECK_EQ_INT(aclrtMalloc(&work, ws, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        CHECK_EQ_INT(aclnnLightningIndexerGrad(work, ws - 1, e, stream), ACLNN_ERR_PARAM_INVALID);
        CHECK_MSG_HAS(aclGetRecentErrMsg(), "workspaceSize: expected at least");
        e = grad_plan(&a, &ws);
        CHECK_EQ_INT(aclnnLightningIndexerGrad(work, ws + 1, e, stream), ACLNN_ERR_PARAM_INVALID);
        CHECK_MSG_HAS(aclGetRecentErrMsg(), "run past the end");
        e = grad_plan(&a, &ws);
        CHECK_EQ_INT(aclnnLightningIndexerGrad(&stream, ws, e, stream), ACLNN_ERR_PARAM_INVALID);
        CHECK_MSG_HAS(aclGetRecentErrMsg(), "workspace: ");
        e = grad_plan(&a, &ws);
    }
    CHECK(grad_outputs_untouched(&a));

    /* a stream that is not one, and an executor run twice */
    CHECK_EQ_INT(aclnnLightningIndexerGrad(work, ws, e, &stream), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "stream: ");
    CHECK(grad_outputs_untouched(&a));
    CHECK_EQ_INT(aclnnLightningIndexerGrad(work, ws, e, stream), ACLNN_ERR_PARAM_INVALID); /* consumed above */
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "already ran");
    CHECK_EQ_INT(aclnnLightningIndexerGrad(work, ws, NULL, stream), ACLNN_ERR_PARAM_NULLPTR);

    /* the grad executor handed to the forward */
    e = grad_plan(&a, &ws);
    CHECK_EQ_INT(aclnnLightningIndexer(work, ws, e, stream), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "aclnnLightningIndexerGradGetWorkspaceSize");

    /* an output freed between the phases */
    e = grad_plan(&a, &ws);
    void *dw_mem = a.dw.mem;
    CHECK_EQ_INT(aclrtFree(dw_mem), ACL_SUCCESS);
    a.dw.mem = NULL;
    CHECK_EQ_INT(aclnnLightningIndexerGrad(work, ws, e, stream), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "dweightsOut: its memory was freed");
    CHECK(untouched(&a.dq, B * S1 * N1 * D));

    /* an executor never run is released by aclDestroyAclOpExecutor, once */
    grad_drop(&a);
    a = grad_make(0);
    e = grad_plan(&a, &ws);
    CHECK_EQ_INT(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclDestroyAclOpExecutor(e), ACLNN_ERR_PARAM_INVALID);

    /* and the good call, for contrast: it runs and writes */
    e = grad_plan(&a, &ws);
    CHECK_EQ_INT(aclnnLightningIndexerGrad(work, ws, e, stream), ACLNN_SUCCESS);
    CHECK(!grad_outputs_untouched(&a));
    if (work) CHECK_EQ_INT(aclrtFree(work), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtDestroyStream(stream), ACL_SUCCESS);
    grad_drop(&a);
}

static void test_forward_phase1(void) {
    enum { SK = 8 };
    float q[B * S1 * N1 * D] = {0}, k[B * S2 * N2 * D] = {0}, w[B * S1 * N1] = {0}, vals[B * S1 * N2 * SK];
    int32_t idx[B * S1 * N2 * SK];
    int32_t bt_host[B * 1] = {0}, lens[B] = {S2};
    for (int i = 0; i < B * S1 * N2 * SK; i++) {
        vals[i] = SENTINEL;
        idx[i] = 99;
    }
    const int64_t out_shape[4] = {B, S1, N2, SK}, bt_shape[2] = {B, 1}, len_shape[1] = {B};
    dev dq = make(q, sizeof q, q_shape, 4, ACL_FLOAT), dk = make(k, sizeof k, k_shape, 4, ACL_FLOAT),
        dw = make(w, sizeof w, w_shape, 3, ACL_FLOAT), di = make(idx, sizeof idx, out_shape, 4, ACL_INT32),
        dv = make(vals, sizeof vals, out_shape, 4, ACL_FLOAT), dbt = make(bt_host, sizeof bt_host, bt_shape, 2, ACL_INT32),
        dlen = make(lens, sizeof lens, len_shape, 1, ACL_INT32);
    char bnsd[] = "BNSD", tnd[] = "TND", pa[] = "PA_BSND";
#define FWD(lq, lk, bt, alk, count, ret, vout, idxout) \
    aclnnLightningIndexerGetWorkspaceSize(dq.t, dk.t, dw.t, NULL, alk, bt, lq, lk, count, 3, INT64_MAX, INT64_MAX, ret, idxout, vout, &ws_, &e_)
    CHECK_PHASE1_FAILS(FWD(bnsd, bsnd, NULL, NULL, SK, true, dv.t, di.t), ACLNN_ERR_PARAM_INVALID,
                       "layoutQueryOptional: expected \"BSND\" or \"TND\", got \"BNSD\"");
    CHECK_PHASE1_FAILS(FWD(bsnd, tnd, NULL, NULL, SK, true, dv.t, di.t), ACLNN_ERR_PARAM_INVALID,
                       "layoutKeyOptional: expected \"BSND\"");
    CHECK_PHASE1_FAILS(FWD(bsnd, bsnd, dbt.t, NULL, SK, true, dv.t, di.t), ACLNN_ERR_PARAM_INVALID,
                       "blockTableOptional: expected nullptr");
    CHECK_PHASE1_FAILS(FWD(bsnd, bsnd, NULL, NULL, SK, true, NULL, di.t), ACLNN_ERR_PARAM_NULLPTR, "sparseValuesOut");
    CHECK_PHASE1_FAILS(FWD(bsnd, bsnd, NULL, NULL, SK, true, dv.t, NULL), ACLNN_ERR_PARAM_NULLPTR, "sparseIndicesOut");
    CHECK_PHASE1_FAILS(FWD(bsnd, bsnd, NULL, NULL, 0, true, dv.t, di.t), ACLNN_ERR_PARAM_INVALID, "sparse_count");
    CHECK_PHASE1_FAILS(FWD(bsnd, bsnd, NULL, NULL, SK, true, dv.t, dv.t), ACLNN_ERR_PARAM_INVALID, "sparse_indices");
#ifdef LIG_ACLNN_HAVE_PAGED
    CHECK_PHASE1_FAILS(FWD(bsnd, pa, NULL, dlen.t, SK, false, NULL, di.t), ACLNN_ERR_PARAM_NULLPTR, "blockTableOptional");
    CHECK_PHASE1_FAILS(FWD(bsnd, pa, dbt.t, NULL, SK, false, NULL, di.t), ACLNN_ERR_PARAM_NULLPTR,
                       "actualSeqLengthsKeyOptional");
#else
    CHECK_PHASE1_FAILS(FWD(bsnd, pa, dbt.t, dlen.t, SK, false, NULL, di.t), ACLNN_ERR_PARAM_INVALID,
                       "lig_indexer_paged_get_workspace_size");
#endif
#undef FWD
    /* FLOAT32 weights with FLOAT16 query and key are widened (CANN's A2/A3 mix); the scores then go
     * to a sparseValuesOut of the query's dtype or FLOAT32, nothing else */
    {
        uint16_t h[B * S1 * N1 * D] = {0}, hv[B * S1 * N2 * SK] = {0};
        dev hq = make(h, sizeof h, q_shape, 4, ACL_FLOAT16), hk = make(h, B * S2 * N2 * D * 2, k_shape, 4, ACL_FLOAT16),
            bv = make(hv, sizeof hv, out_shape, 4, ACL_BF16);
        uint64_t ws_ = 77;
        aclOpExecutor *e_ = (aclOpExecutor *)&ws_;
        CHECK_EQ_INT(aclnnLightningIndexerGetWorkspaceSize(hq.t, hk.t, dw.t, NULL, NULL, NULL, bsnd, bsnd, SK, 3,
                                                           INT64_MAX, INT64_MAX, true, di.t, bv.t, &ws_, &e_),
                     ACLNN_ERR_PARAM_INVALID);
        CHECK_MSG_HAS(aclGetRecentErrMsg(), "sparseValuesOut: expected dtype ACL_FLOAT16 (like query) or ACL_FLOAT, got ACL_BF16");
        CHECK(ws_ == 77 && e_ == (aclOpExecutor *)&ws_);
        drop(&hq), drop(&hk), drop(&bv);
    }
    /* NULL layouts are the documented default, BSND; returnValues false leaves sparseValuesOut alone */
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    void *work = NULL;
    CHECK_EQ_INT(aclnnLightningIndexerGetWorkspaceSize(dq.t, dk.t, dw.t, NULL, NULL, NULL, NULL, NULL, SK, 3, INT64_MAX,
                                                       INT64_MAX, false, di.t, dv.t, &ws, &e),
                 ACLNN_SUCCESS);
    if (ws) CHECK_EQ_INT(aclrtMalloc(&work, ws, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    CHECK_EQ_INT(aclnnLightningIndexer(work, ws, e, NULL), ACLNN_SUCCESS);
    CHECK(untouched(&dv, B * S1 * N2 * SK));
    CHECK_EQ_INT(aclrtMemcpy(idx, sizeof idx, di.mem, sizeof idx, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK_EQ_INT(idx[0], 0);      /* row 0 of sparse_mode 3 sees keys 0..S2-S1 */
    CHECK_EQ_INT(idx[SK - 1], -1); /* and pads the rest */
    if (work) aclrtFree(work);
    dev *all[] = {&dq, &dk, &dw, &di, &dv, &dbt, &dlen};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
    (void)pa;
}

/* A FLOAT16 query widened for FLOAT32 weights gets a FLOAT32 copy of every element of its view; a
 * broadcast view (zero strides over one element) of 6 x 2^59 or 6 x 2^60 elements has a copy of
 * 1.5 x 2^63 or 1.5 x 2^64 bytes, which is refused before anything is allocated rather than
 * attempted or wrapped. */
static void test_forward_huge_staged_view(void) {
    uint16_t h[B * S2 * N2 * D] = {0};
    float w[B * S1 * N1] = {0};
    int32_t idx[B * S1 * N2 * K] = {0};
    const int64_t out_shape[4] = {B, S1, N2, K}, one[1] = {1}, zero_strides[4] = {0, 0, 0, 0};
    dev hk = make(h, sizeof h, k_shape, 4, ACL_FLOAT16), dw = make(w, sizeof w, w_shape, 3, ACL_FLOAT),
        di = make(idx, sizeof idx, out_shape, 4, ACL_INT32), cell = make(h, 2, one, 1, ACL_FLOAT16);
    for (int e = 59; e <= 60; e++) {
        const int64_t huge[4] = {B, S1, N1, (int64_t)1 << e};
        aclTensor *q = aclCreateTensor(huge, 4, ACL_FLOAT16, zero_strides, 0, ACL_FORMAT_ND, one, 1, cell.mem);
        CHECK(q != NULL);
        uint64_t ws_ = 77;
        aclOpExecutor *e_ = (aclOpExecutor *)&ws_;
        CHECK_EQ_INT(aclnnLightningIndexerGetWorkspaceSize(q, hk.t, dw.t, NULL, NULL, NULL, bsnd, bsnd, K, 3, INT64_MAX,
                                                           INT64_MAX, false, di.t, NULL, &ws_, &e_),
                     ACLNN_ERR_PARAM_INVALID);
        CHECK_MSG_HAS(aclGetRecentErrMsg(), "query: expected a view whose FLOAT32 copy fits in memory");
        CHECK(ws_ == 77 && e_ == (aclOpExecutor *)&ws_);
        CHECK_EQ_INT(aclDestroyTensor(q), ACLNN_SUCCESS);
    }
    drop(&hk), drop(&dw), drop(&di), drop(&cell);
}

/* The KL loss's arguments: fp32 BSND, the main attention with N1 heads of D dims (no rope), the
 * indexer with N1 heads, rows selecting keys t and t-1 (or -1), statistics of every (row, head). */
typedef struct kl_args {
    dev q, k, qi, ki, w, idx, smax, ssum, dqi, dki, dw, loss;
} kl_args;

static const int64_t stat_shape[4] = {B, 1, S1, N1}, loss_shape[1] = {1};

static kl_args kl_make(int32_t bad_index) {
    float q[B * S1 * N1 * D], k[B * S2 * N2 * D], w[B * S1 * N1], st[B * S1 * N1], one[B * S1 * N1],
        out[B * S2 * N1 * D];
    int32_t idx[B * S1 * K];
    fill_inputs(q, k, w, idx, out, sizeof out / sizeof out[0], bad_index);
    for (int i = 0; i < B * S1 * N1; i++) {
        st[i] = 0.0f;
        one[i] = 4.0f;
    }
    kl_args a;
    make_inputs(&a.q, &a.k, &a.w, &a.idx, q, k, w, idx);
    a.qi = make(q, sizeof q, q_shape, 4, ACL_FLOAT);
    a.ki = make(k, sizeof k, k_shape, 4, ACL_FLOAT);
    a.smax = make(st, sizeof st, stat_shape, 4, ACL_FLOAT);
    a.ssum = make(one, sizeof one, stat_shape, 4, ACL_FLOAT);
    make_grads(&a.dqi, &a.dki, &a.dw, out);
    a.loss = make(out, sizeof(float), loss_shape, 1, ACL_FLOAT);
    return a;
}

static void kl_drop(kl_args *a) {
    dev *all[] = {&a->q, &a->k, &a->qi, &a->ki, &a->w, &a->idx, &a->smax, &a->ssum, &a->dqi, &a->dki, &a->dw, &a->loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
}

static bool kl_outputs_untouched(const kl_args *a) {
    return untouched(&a->dqi, B * S1 * N1 * D) && untouched(&a->dki, B * S2 * N2 * D) &&
           untouched(&a->dw, B * S1 * N1) && untouched(&a->loss, 1);
}

/* Phase 1 with the arguments of `a`, a few replaced: query, queryRope, smax, loss, aq, layout, mode. */
static aclnnStatus kl_phase1(const kl_args *a, const aclTensor *q, const aclTensor *qr, const aclTensor *smax,
                             const aclTensor *loss, const aclIntArray *aq, const aclIntArray *ak, char *layout,
                             int64_t mode, uint64_t *ws, aclOpExecutor **e) {
    return aclnnSparseLightningIndexerGradKLLossGetWorkspaceSize(
        q, a->k.t, a->qi.t, a->ki.t, a->w.t, a->idx.t, smax, a->ssum.t, qr, NULL, aq, ak, 0.5, layout, mode,
        INT64_MAX, INT64_MAX, true, a->dqi.t, a->dki.t, a->dw.t, loss, ws, e);
}

static void test_kl_loss(void) {
    kl_args a = kl_make(0);
    int not_an_array = 0;
    const aclTensor *lt = a.loss.t, *mt = a.smax.t;
    CHECK_PHASE1_FAILS(kl_phase1(&a, NULL, NULL, mt, lt, NULL, NULL, bsnd, 3, &ws_, &e_), ACLNN_ERR_PARAM_NULLPTR,
                       "query");
    CHECK_PHASE1_FAILS(kl_phase1(&a, a.q.t, NULL, mt, lt, NULL, NULL, NULL, 3, &ws_, &e_), ACLNN_ERR_PARAM_NULLPTR,
                       "layout");
    CHECK_EQ_INT(kl_phase1(&a, a.q.t, NULL, mt, lt, NULL, NULL, bsnd, 3, NULL, NULL), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_PHASE1_FAILS(kl_phase1(&a, a.q.t, a.q.t, mt, lt, NULL, NULL, bsnd, 3, &ws_, &e_), ACLNN_ERR_PARAM_NULLPTR,
                       "keyRope: expected a tensor, since queryRope is given");
    CHECK_PHASE1_FAILS(kl_phase1(&a, a.q.t, NULL, NULL, lt, NULL, NULL, bsnd, 3, &ws_, &e_), ACLNN_ERR_PARAM_NULLPTR,
                       "softmaxMax");
    CHECK_PHASE1_FAILS(kl_phase1(&a, a.q.t, NULL, mt, NULL, NULL, NULL, bsnd, 3, &ws_, &e_), ACLNN_ERR_PARAM_NULLPTR,
                       "loss");
    CHECK_PHASE1_FAILS(kl_phase1(&a, a.q.t, NULL, mt, lt, (const aclIntArray *)&not_an_array, NULL, bsnd, 3, &ws_, &e_),
                       ACLNN_ERR_PARAM_INVALID, "actualSeqLengthsQuery: ");
    CHECK_PHASE1_FAILS(kl_phase1(&a, (const aclTensor *)&not_an_array, NULL, mt, lt, NULL, NULL, bsnd, 3, &ws_, &e_),
                       ACLNN_ERR_PARAM_INVALID, "query: ");
    /* lig's checks: its status and message */
    CHECK_PHASE1_FAILS(kl_phase1(&a, a.q.t, NULL, mt, lt, NULL, NULL, bsnd, 1, &ws_, &e_), ACLNN_ERR_PARAM_INVALID,
                       "sparse_mode");
    char tnd[] = "TND";
    CHECK_PHASE1_FAILS(kl_phase1(&a, a.q.t, NULL, mt, lt, NULL, NULL, tnd, 3, &ws_, &e_), ACLNN_ERR_PARAM_INVALID,
                       "query");
    {
        uint16_t h[B * S1 * N1] = {0};
        const int64_t two[1] = {2};
        dev half_stat = make(h, sizeof h, stat_shape, 4, ACL_FLOAT16), loss2 = make(h, 8, two, 1, ACL_FLOAT);
        CHECK_PHASE1_FAILS(kl_phase1(&a, a.q.t, NULL, half_stat.t, lt, NULL, NULL, bsnd, 3, &ws_, &e_),
                           ACLNN_ERR_PARAM_INVALID, "softmax_max");
        CHECK_PHASE1_FAILS(kl_phase1(&a, a.q.t, NULL, mt, loss2.t, NULL, NULL, bsnd, 3, &ws_, &e_),
                           ACLNN_ERR_PARAM_INVALID, "loss");
        drop(&half_stat), drop(&loss2);
    }
    CHECK(kl_outputs_untouched(&a));
    kl_drop(&a);

    /* phase 2: an index past the keys, found before anything is written */
    a = kl_make(S2 + 3);
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    const aclnnStatus planned = kl_phase1(&a, a.q.t, NULL, a.smax.t, a.loss.t, NULL, NULL, bsnd, 3, &ws, &e);
    CHECK_EQ_INT(run_planned(planned, ws, e, aclnnSparseLightningIndexerGradKLLoss), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "sparse");
    CHECK(kl_outputs_untouched(&a));
    kl_drop(&a);
    void *work = NULL;

    /* the KL executor handed to the backward, and the good call with lengths as int arrays that
     * are destroyed between the phases (their values were copied in phase 1) */
    a = kl_make(0);
    CHECK_EQ_INT(kl_phase1(&a, a.q.t, NULL, a.smax.t, a.loss.t, NULL, NULL, bsnd, 3, &ws, &e), ACLNN_SUCCESS);
    if (ws) CHECK_EQ_INT(aclrtMalloc(&work, ws, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    CHECK_EQ_INT(aclnnLightningIndexerGrad(work, ws, e, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "aclnnSparseLightningIndexerGradKLLossGetWorkspaceSize");
    if (work) CHECK_EQ_INT(aclrtFree(work), ACL_SUCCESS);
    work = NULL;
    const int64_t lq[1] = {S1}, lk[1] = {S2};
    aclIntArray *aq = aclCreateIntArray(lq, 1), *ak = aclCreateIntArray(lk, 1);
    CHECK(aq != NULL && ak != NULL);
    CHECK_EQ_INT(kl_phase1(&a, a.q.t, NULL, a.smax.t, a.loss.t, aq, ak, bsnd, 3, &ws, &e), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclDestroyIntArray(aq), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclDestroyIntArray(ak), ACLNN_SUCCESS);
    if (ws) CHECK_EQ_INT(aclrtMalloc(&work, ws, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    CHECK_EQ_INT(aclnnSparseLightningIndexerGradKLLoss(work, ws, e, NULL), ACLNN_SUCCESS);
    CHECK(!untouched(&a.dqi, B * S1 * N1 * D) && !untouched(&a.loss, 1));
    if (work) CHECK_EQ_INT(aclrtFree(work), ACL_SUCCESS);
    kl_drop(&a);
}

/* The quantized forward's arguments: INT8 BSND codes, FLOAT16 weights, FLOAT scales, INT32 indices
 * [B,S1,N2,QK] set to 99; a paged cache of one block of S2 keys with its table and lengths. */
enum { QK = 8 };
typedef struct quant_args {
    dev q, k, w, sq, sk, out, cache, cache_sk, table, bad_table, lens;
} quant_args;

static const int64_t q_out_shape[4] = {B, S1, N2, QK}, sk_shape[3] = {B, S2, N2}, cache_shape[4] = {1, S2, N2, D},
                     cache_sk_shape[3] = {1, S2, N2}, table_shape[2] = {B, 1}, lens_shape[1] = {B};

static quant_args quant_make(void) {
    int8_t q[B * S1 * N1 * D], k[B * S2 * N2 * D];
    uint16_t w[B * S1 * N1];
    float sq[B * S1 * N1], sk[B * S2 * N2];
    int32_t out[B * S1 * N2 * QK], table[B] = {0}, bad_table[B] = {5}, lens[B] = {S2};
    for (int i = 0; i < B * S1 * N1 * D; i++) q[i] = (int8_t)((i % 7) - 3);
    for (int i = 0; i < B * S2 * N2 * D; i++) k[i] = (int8_t)((i % 5) - 1);
    for (int i = 0; i < B * S1 * N1; i++) {
        w[i] = aclFloatToFloat16(0.5f);
        sq[i] = 0.25f;
    }
    for (int i = 0; i < B * S2 * N2; i++) sk[i] = 0.125f;
    for (int i = 0; i < B * S1 * N2 * QK; i++) out[i] = 99;
    quant_args a;
    const struct {
        dev *d;
        const void *host;
        size_t bytes;
        const int64_t *shape;
        uint64_t nd;
        aclDataType dt;
    } spec[] = {
        {&a.q, q, sizeof q, q_shape, 4, ACL_INT8},
        {&a.k, k, sizeof k, k_shape, 4, ACL_INT8},
        {&a.w, w, sizeof w, w_shape, 3, ACL_FLOAT16},
        {&a.sq, sq, sizeof sq, w_shape, 3, ACL_FLOAT},
        {&a.sk, sk, sizeof sk, sk_shape, 3, ACL_FLOAT},
        {&a.out, out, sizeof out, q_out_shape, 4, ACL_INT32},
        {&a.cache, k, sizeof k, cache_shape, 4, ACL_INT8}, /* one block holding the same keys */
        {&a.cache_sk, sk, sizeof sk, cache_sk_shape, 3, ACL_FLOAT},
        {&a.table, table, sizeof table, table_shape, 2, ACL_INT32},
        {&a.bad_table, bad_table, sizeof bad_table, table_shape, 2, ACL_INT32}, /* block 5 of a 1-block cache */
        {&a.lens, lens, sizeof lens, lens_shape, 1, ACL_INT32},
    };
    for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++)
        *spec[i].d = make(spec[i].host, spec[i].bytes, spec[i].shape, spec[i].nd, spec[i].dt);
    return a;
}

static void quant_drop(quant_args *a) {
    dev *all[] = {&a->q, &a->k, &a->w, &a->sq, &a->sk, &a->out, &a->cache, &a->cache_sk, &a->table, &a->bad_table,
                  &a->lens};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
}

static bool quant_out_untouched(const quant_args *a) {
    int32_t host[B * S1 * N2 * QK];
    if (aclrtMemcpy(host, sizeof host, a->out.mem, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) return false;
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        if (host[i] != 99) return false;
    return true;
}

/* A view of `like`'s memory as another dtype (the bytes do not matter: phase 1 fails first). */
static aclTensor *retyped(const dev *like, const int64_t *shape, uint64_t nd, aclDataType dt) {
    aclTensor *t = aclCreateTensor(shape, nd, dt, NULL, 0, ACL_FORMAT_ND, shape, nd, like->mem);
    CHECK(t != NULL);
    return t;
}

static void test_quant_indexer(void) {
    quant_args a = quant_make();
    char tnd[] = "TND", pa[] = "PA_BSND", bnsd[] = "BNSD";
#define QUANT(q, k, sq, sk, lk, bt, qmode, lq, lkey, count, out) \
    aclnnQuantLightningIndexerGetWorkspaceSize(q, k, a.w.t, sq, sk, NULL, lk, bt, qmode, 0, lq, lkey, count, 3, INT64_MAX, INT64_MAX, out, &ws_, &e_)
    /* required arguments */
    CHECK_EQ_INT(aclnnQuantLightningIndexerGetWorkspaceSize(a.q.t, a.k.t, a.w.t, a.sq.t, a.sk.t, NULL, NULL, NULL, 0, 0,
                                                            bsnd, bsnd, QK, 3, INT64_MAX, INT64_MAX, a.out.t, NULL, NULL),
                 ACLNN_ERR_PARAM_NULLPTR);
    CHECK_PHASE1_FAILS(QUANT(NULL, a.k.t, a.sq.t, a.sk.t, NULL, NULL, 0, bsnd, bsnd, QK, a.out.t), ACLNN_ERR_PARAM_NULLPTR,
                       "query");
    CHECK_PHASE1_FAILS(QUANT(a.q.t, a.k.t, NULL, a.sk.t, NULL, NULL, 0, bsnd, bsnd, QK, a.out.t), ACLNN_ERR_PARAM_NULLPTR,
                       "queryDequantScale: expected a [B,S1,N1] or [T1,N1] tensor");
    CHECK_PHASE1_FAILS(QUANT(a.q.t, a.k.t, a.sq.t, NULL, NULL, NULL, 0, bsnd, bsnd, QK, a.out.t), ACLNN_ERR_PARAM_NULLPTR,
                       "keyDequantScale");
    CHECK_PHASE1_FAILS(QUANT(a.q.t, a.k.t, a.sq.t, a.sk.t, NULL, NULL, 0, bsnd, bsnd, QK, NULL), ACLNN_ERR_PARAM_NULLPTR,
                       "out");
    /* dtypes: HiFloat8 named as unsupported, other 8-bit floats refused, a mix left to lig */
    aclTensor *hif_q = retyped(&a.q, q_shape, 4, ACL_HIFLOAT8), *hif_k = retyped(&a.k, k_shape, 4, ACL_HIFLOAT8),
              *e5m2 = retyped(&a.q, q_shape, 4, ACL_FLOAT8_E5M2), *fp8_k = retyped(&a.k, k_shape, 4, ACL_FLOAT8_E4M3FN),
              *f_out = retyped(&a.out, q_out_shape, 4, ACL_FLOAT);
    CHECK_PHASE1_FAILS(QUANT(hif_q, a.k.t, a.sq.t, a.sk.t, NULL, NULL, 0, bsnd, bsnd, QK, a.out.t),
                       ACLNN_ERR_PARAM_INVALID, "query: got ACL_HIFLOAT8, and lig does not support HiFloat8");
    CHECK_PHASE1_FAILS(QUANT(hif_q, hif_k, a.sq.t, a.sk.t, NULL, NULL, 0, bsnd, bsnd, QK, a.out.t),
                       ACLNN_ERR_PARAM_INVALID, "lig does not support HiFloat8");
    CHECK_PHASE1_FAILS(QUANT(a.q.t, hif_k, a.sq.t, a.sk.t, NULL, NULL, 0, bsnd, bsnd, QK, a.out.t),
                       ACLNN_ERR_PARAM_INVALID, "key: got ACL_HIFLOAT8");
    CHECK_PHASE1_FAILS(QUANT(e5m2, a.k.t, a.sq.t, a.sk.t, NULL, NULL, 0, bsnd, bsnd, QK, a.out.t),
                       ACLNN_ERR_PARAM_INVALID, "got ACL_FLOAT8_E5M2");
    CHECK_PHASE1_FAILS(QUANT(a.q.t, fp8_k, a.sq.t, a.sk.t, NULL, NULL, 0, bsnd, bsnd, QK, a.out.t),
                       ACLNN_ERR_PARAM_INVALID, "key");
    CHECK_PHASE1_FAILS(QUANT(a.q.t, a.k.t, a.sq.t, a.sk.t, NULL, NULL, 0, bsnd, bsnd, QK, f_out),
                       ACLNN_ERR_PARAM_INVALID, "sparse_indices");
    aclTensor *retypes[] = {hif_q, hif_k, e5m2, fp8_k, f_out};
    for (size_t i = 0; i < sizeof retypes / sizeof retypes[0]; i++) CHECK_EQ_INT(aclDestroyTensor(retypes[i]), ACLNN_SUCCESS);
    /* attributes: lig's checks, lig's message */
    CHECK_PHASE1_FAILS(QUANT(a.q.t, a.k.t, a.sq.t, a.sk.t, NULL, NULL, 1, bsnd, bsnd, QK, a.out.t),
                       ACLNN_ERR_PARAM_INVALID, "query_quant_mode");
    CHECK_PHASE1_FAILS(QUANT(a.q.t, a.k.t, a.sq.t, a.sk.t, NULL, NULL, 0, bsnd, bsnd, 0, a.out.t),
                       ACLNN_ERR_PARAM_INVALID, "sparse_count");
    /* layouts and the block table, as for aclnnLightningIndexer */
    CHECK_PHASE1_FAILS(QUANT(a.q.t, a.k.t, a.sq.t, a.sk.t, NULL, NULL, 0, bnsd, bsnd, QK, a.out.t),
                       ACLNN_ERR_PARAM_INVALID, "layoutQueryOptional: expected \"BSND\" or \"TND\", got \"BNSD\"");
    CHECK_PHASE1_FAILS(QUANT(a.q.t, a.k.t, a.sq.t, a.sk.t, NULL, NULL, 0, bsnd, tnd, QK, a.out.t),
                       ACLNN_ERR_PARAM_INVALID, "layoutKeyOptional: expected \"BSND\"");
    CHECK_PHASE1_FAILS(QUANT(a.q.t, a.k.t, a.sq.t, a.sk.t, NULL, a.table.t, 0, bsnd, bsnd, QK, a.out.t),
                       ACLNN_ERR_PARAM_INVALID, "blockTableOptional: expected nullptr");
    CHECK_PHASE1_FAILS(QUANT(a.q.t, a.cache.t, a.sq.t, a.cache_sk.t, a.lens.t, NULL, 0, bsnd, pa, QK, a.out.t),
                       ACLNN_ERR_PARAM_NULLPTR, "blockTableOptional");
    CHECK_PHASE1_FAILS(QUANT(a.q.t, a.cache.t, a.sq.t, a.cache_sk.t, NULL, a.table.t, 0, bsnd, pa, QK, a.out.t),
                       ACLNN_ERR_PARAM_NULLPTR, "actualSeqLengthsKeyOptional");
    CHECK(quant_out_untouched(&a));

    /* phase 2: a table entry past the cache, found before anything is written */
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    void *work = NULL;
    aclnnStatus planned = aclnnQuantLightningIndexerGetWorkspaceSize(a.q.t, a.cache.t, a.w.t, a.sq.t, a.cache_sk.t, NULL,
                                                                     a.lens.t, a.bad_table.t, 0, 0, bsnd, pa, QK, 3,
                                                                     INT64_MAX, INT64_MAX, a.out.t, &ws, &e);
    CHECK_EQ_INT(run_planned(planned, ws, e, aclnnQuantLightningIndexer), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "block_table");
    CHECK(quant_out_untouched(&a));

    /* the quantized executor handed to the forward */
    CHECK_EQ_INT(aclnnQuantLightningIndexerGetWorkspaceSize(a.q.t, a.k.t, a.w.t, a.sq.t, a.sk.t, NULL, NULL, NULL, 0, 0,
                                                            bsnd, bsnd, QK, 3, INT64_MAX, INT64_MAX, a.out.t, &ws, &e),
                 ACLNN_SUCCESS);
    if (ws) CHECK_EQ_INT(aclrtMalloc(&work, ws, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    CHECK_EQ_INT(aclnnLightningIndexer(work, ws, e, NULL), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "aclnnQuantLightningIndexerGetWorkspaceSize");
    if (work) CHECK_EQ_INT(aclrtFree(work), ACL_SUCCESS);
    work = NULL;
    CHECK(quant_out_untouched(&a));

    /* the good call with NULL layouts (the documented default, BSND), and the same over the paged
     * cache (one block holding the same keys): both select the same keys */
    int32_t plain[B * S1 * N2 * QK], paged[B * S1 * N2 * QK];
    for (int v = 0; v < 2; v++) {
        planned = aclnnQuantLightningIndexerGetWorkspaceSize(
            a.q.t, v ? a.cache.t : a.k.t, a.w.t, a.sq.t, v ? a.cache_sk.t : a.sk.t, NULL, v ? a.lens.t : NULL,
            v ? a.table.t : NULL, 0, 0, v ? bsnd : NULL, v ? pa : NULL, QK, 3, INT64_MAX, INT64_MAX, a.out.t, &ws, &e);
        CHECK_EQ_INT(run_planned(planned, ws, e, aclnnQuantLightningIndexer), ACLNN_SUCCESS);
        CHECK_EQ_INT(aclrtMemcpy(v ? paged : plain, sizeof plain, a.out.mem, sizeof plain, ACL_MEMCPY_DEVICE_TO_HOST),
                     ACL_SUCCESS);
    }
    CHECK(memcmp(plain, paged, sizeof plain) == 0);
    CHECK(plain[0] >= 0 && plain[0] < S2);           /* row 0 of sparse_mode 3 sees keys 0..S2-S1 */
    CHECK_EQ_INT(plain[QK - 1], -1);                 /* and pads the rest */
#undef QUANT
    quant_drop(&a);
}

/* The V4-era pair (aclnnQuantLightningIndexerV2, aclnnLightningIndexerV2) on the quantized
 * forward's arguments: what only the front end checks (quantMode, maskMode, cmpRatio, the residual,
 * the lengths, the layouts, outputIdxOffset, returnValue), nothing written on failure; and with
 * cmpRatio 1 and maskMode 3, which is the causal mask, the same indices as the V1 operators. */
static void test_v2_indexers(void) {
    quant_args a = quant_make();
    char tnd[] = "TND", pa[] = "PA_BSND", pa_bbnd[] = "PA_BBND";
    const int64_t one[1] = {1}, off_shape[3] = {B, S1, N2};
    int32_t res4[1] = {4}, res1[1] = {1}, used9[1] = {9}, cu[2] = {0, S1}, offsets[B * S1 * N2] = {0};
    float foff[B * S1 * N2] = {0};
    dev r4 = make(res4, sizeof res4, one, 1, ACL_INT32), r1 = make(res1, sizeof res1, one, 1, ACL_INT32),
        u9 = make(used9, sizeof used9, one, 1, ACL_INT32), cuq = make(cu, sizeof cu, (const int64_t[]){2}, 1, ACL_INT32),
        off = make(offsets, sizeof offsets, off_shape, 3, ACL_INT32), foff_d = make(foff, sizeof foff, off_shape, 3, ACL_FLOAT);
    uint16_t vals[B * S1 * N2 * QK] = {0};
    dev bfv = make(vals, sizeof vals, q_out_shape, 4, ACL_BF16);
#define QV2(q, k, sk, cuQ, usedK, res, bt, offs, qmode, lq, lk, mask, ratio, rv, vals) \
    aclnnQuantLightningIndexerV2GetWorkspaceSize(q, k, a.w.t, a.sq.t, sk, cuQ, NULL, NULL, usedK, res, bt, offs, NULL, QK, \
                                                 qmode, 0, lq, lk, mask, ratio, rv, a.out.t, vals, &ws_, &e_)
    /* what only the front end checks, on the plain INT8 BSND key: the argument that differs, the code, the message */
    const struct {
        const aclTensor *usedK, *res, *offs;
        int64_t qmode;
        char *lq, *lk;
        int64_t mask, ratio, rv;
        aclnnStatus code;
        const char *needle;
    } plain[] = {
        {NULL, r1.t, NULL, 5, bsnd, bsnd, 3, 4, 0, ACLNN_ERR_PARAM_INVALID,
         "query: expected dtype ACL_FLOAT4_E2M1 with quantMode 5, got ACL_INT8"},
        {NULL, r1.t, NULL, 4, bsnd, bsnd, 3, 4, 0, ACLNN_ERR_PARAM_INVALID,
         "quantMode: 4 (HiFloat8)"},
        {NULL, r1.t, NULL, 3, bsnd, bsnd, 3, 4, 0, ACLNN_ERR_PARAM_INVALID,
         "quantMode: 3 (MXFP8"},
        {NULL, r1.t, NULL, 0, bsnd, bsnd, 3, 4, 0, ACLNN_ERR_PARAM_INVALID,
         "quantMode: expected 1 (FLOAT8_E4M3FN), 2 (INT8) or 5 (MXFP4)"},
        {NULL, r1.t, NULL, 1, bsnd, bsnd, 3, 4, 0, ACLNN_ERR_PARAM_INVALID,
         "query: expected dtype ACL_FLOAT8_E4M3FN with quantMode 1, got ACL_INT8"},
        {NULL, r1.t, NULL, 2, bsnd, bsnd, 2, 4, 0, ACLNN_ERR_PARAM_INVALID,
         "maskMode: expected 0 (no mask) or 3 (right-down causal), got 2"},
        {NULL, r1.t, NULL, 2, bsnd, bsnd, 3, 129, 0, ACLNN_ERR_PARAM_INVALID,
         "cmpRatio: expected 1..128, got 129"},
        {NULL, r1.t, NULL, 2, bsnd, bsnd, 3, 0, 0, ACLNN_ERR_PARAM_INVALID,
         "cmpRatio: expected 1..128, got 0"},
        {NULL, NULL, NULL, 2, bsnd, bsnd, 3, 4, 0, ACLNN_ERR_PARAM_NULLPTR,
         "cmpResidualKOptional: expected the (B,) residual"},
        {NULL, r4.t, NULL, 2, bsnd, bsnd, 3, 4, 0, ACLNN_ERR_PARAM_INVALID,
         "cmpResidualKOptional[0]: expected 0..3 (below cmpRatio 4), got 4"},
        {NULL, r1.t, NULL, 2, bsnd, bsnd, 3, 4, 2, ACLNN_ERR_PARAM_INVALID,
         "returnValueOptional: expected 0 or 1, got 2"},
        {NULL, r1.t, NULL, 2, bsnd, bsnd, 3, 4, 1, ACLNN_ERR_PARAM_NULLPTR,
         "sparseValuesOut: expected a tensor when returnValueOptional is 1"},
        {NULL, r1.t, NULL, 2, tnd, tnd, 3, 4, 0, ACLNN_ERR_PARAM_INVALID,
         "query: expected [T1,N1,D]"},
        {u9.t, r1.t, NULL, 2, bsnd, bsnd, 3, 4, 0, ACLNN_ERR_PARAM_INVALID,
         "sequsedKOptional[0]: expected 0..4 (the batch's keys), got 9"},
        {NULL, r1.t, foff_d.t, 2, bsnd, bsnd, 3, 4, 0, ACLNN_ERR_PARAM_INVALID,
         "outputIdxOffsetOptional: expected dtype ACL_INT32"},
    };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        CHECK_PHASE1_FAILS(QV2(a.q.t, a.k.t, a.sk.t, NULL, plain[i].usedK, plain[i].res, NULL, plain[i].offs, plain[i].qmode,
                               plain[i].lq, plain[i].lk, plain[i].mask, plain[i].ratio, plain[i].rv, NULL),
                           plain[i].code, plain[i].needle);
    {
        /* MX scales with per-token codes, and per-token scales with MXFP4 codes */
        aclTensor *e8m0 = retyped(&a.sk, sk_shape, 3, ACL_FLOAT8_E8M0);
        const int64_t fp4_q_shape[4] = {B, S1, N1, 2 * D}, fp4_k_shape[4] = {B, S2, N2, 2 * D};
        aclTensor *fp4_q = retyped(&a.q, fp4_q_shape, 4, ACL_FLOAT4_E2M1), *fp4_k = retyped(&a.k, fp4_k_shape, 4, ACL_FLOAT4_E2M1);
        CHECK_PHASE1_FAILS(QV2(a.q.t, a.k.t, e8m0, NULL, NULL, r1.t, NULL, NULL, 2, bsnd, bsnd, 3, 4, 0, NULL),
                           ACLNN_ERR_PARAM_INVALID, "keyDequantScale: expected ACL_FLOAT or ACL_FLOAT16 with quantMode 2");
        CHECK_PHASE1_FAILS(QV2(fp4_q, fp4_k, e8m0, NULL, NULL, r1.t, NULL, NULL, 5, bsnd, bsnd, 3, 4, 0, NULL),
                           ACLNN_ERR_PARAM_INVALID, "queryDequantScale: expected dtype ACL_FLOAT8_E8M0 with quantMode 5");
        /* an FP4 view that splits a byte (an odd last extent), and e8m0 scales not shaped (.., D/64, 2) */
        const int64_t odd_q_shape[4] = {B, S1, N1, 2 * D - 1}, e8_q_shape[3] = {B, S1, N1};
        aclTensor *odd_q = retyped(&a.q, odd_q_shape, 4, ACL_FLOAT4_E2M1), *e8_q = retyped(&a.sq, e8_q_shape, 3, ACL_FLOAT8_E8M0);
        uint64_t ws_ = 77;
        aclOpExecutor *e_ = (aclOpExecutor *)&ws_;
        CHECK_EQ_INT(aclnnQuantLightningIndexerV2GetWorkspaceSize(odd_q, fp4_k, a.w.t, e8_q, e8m0, NULL, NULL, NULL, NULL, r1.t,
                                                                  NULL, NULL, NULL, QK, 5, 0, bsnd, bsnd, 3, 4, 0, a.out.t,
                                                                  NULL, &ws_, &e_),
                     ACLNN_ERR_PARAM_INVALID);
        CHECK_MSG_HAS(aclGetRecentErrMsg(), "query: an ACL_FLOAT4_E2M1 view must cover whole bytes");
        CHECK_EQ_INT(aclnnQuantLightningIndexerV2GetWorkspaceSize(fp4_q, fp4_k, a.w.t, e8_q, e8m0, NULL, NULL, NULL, NULL, r1.t,
                                                                  NULL, NULL, NULL, QK, 5, 0, bsnd, bsnd, 3, 4, 0, a.out.t,
                                                                  NULL, &ws_, &e_),
                     ACLNN_ERR_PARAM_INVALID);
        CHECK_MSG_HAS(aclGetRecentErrMsg(), "keyDequantScale: expected MX scales shaped (.., D/64, 2)");
        CHECK(ws_ == 77 && e_ == (aclOpExecutor *)&ws_);
        aclTensor *drop_these[] = {e8m0, fp4_q, fp4_k, odd_q, e8_q};
        for (size_t i = 0; i < sizeof drop_these / sizeof drop_these[0]; i++)
            CHECK_EQ_INT(aclDestroyTensor(drop_these[i]), ACLNN_SUCCESS);
    }
    CHECK_PHASE1_FAILS(QV2(a.q.t, a.cache.t, a.cache_sk.t, NULL, a.lens.t, r1.t, a.table.t, NULL, 2, bsnd, pa_bbnd, 3, 4, 0,
                           NULL),
                       ACLNN_ERR_PARAM_INVALID, "layoutK: expected \"BSND\" (layoutQ's layout) or \"PA_BSND\"");
    CHECK_PHASE1_FAILS(QV2(a.q.t, a.cache.t, a.cache_sk.t, NULL, NULL, r1.t, a.table.t, NULL, 2, bsnd, pa, 3, 4, 0, NULL),
                       ACLNN_ERR_PARAM_NULLPTR, "sequsedKOptional: expected the (B,) key lengths");
    CHECK(quant_out_untouched(&a));

    /* phase 2: a table entry past the cache, found before anything is written */
    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus planned = aclnnQuantLightningIndexerV2GetWorkspaceSize(
        a.q.t, a.cache.t, a.w.t, a.sq.t, a.cache_sk.t, NULL, NULL, NULL, a.lens.t, NULL, a.bad_table.t, off.t, NULL, QK,
        2, 0, bsnd, pa, 3, 1, 1, a.out.t, bfv.t, &ws, &e);
    CHECK_EQ_INT(run_planned(planned, ws, e, aclnnQuantLightningIndexerV2), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "block_table");
    CHECK(quant_out_untouched(&a));
    /* a V2 executor handed to the V1 operator */
    CHECK_EQ_INT(aclnnQuantLightningIndexerV2GetWorkspaceSize(a.q.t, a.k.t, a.w.t, a.sq.t, a.sk.t, NULL, NULL, NULL, NULL,
                                                              NULL, NULL, NULL, NULL, QK, 2, 0, bsnd, bsnd, 3, 1, 0,
                                                              a.out.t, NULL, &ws, &e),
                 ACLNN_SUCCESS);
    CHECK_EQ_INT(run_planned(ACLNN_SUCCESS, ws, e, aclnnQuantLightningIndexer), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "aclnnQuantLightningIndexerV2GetWorkspaceSize");
    CHECK(quant_out_untouched(&a));

    /* cmpRatio 1, maskMode 3 is V1's sparse mode 3: the same indices, plain keys and paged (TND
     * query over the cache included) */
    int32_t v1[B * S1 * N2 * QK], v2[B * S1 * N2 * QK];
    planned = aclnnQuantLightningIndexerGetWorkspaceSize(a.q.t, a.k.t, a.w.t, a.sq.t, a.sk.t, NULL, NULL, NULL, 0, 0, bsnd,
                                                         bsnd, QK, 3, INT64_MAX, INT64_MAX, a.out.t, &ws, &e);
    CHECK_EQ_INT(run_planned(planned, ws, e, aclnnQuantLightningIndexer), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclrtMemcpy(v1, sizeof v1, a.out.mem, sizeof v1, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    aclTensor *tq = aclCreateTensor((const int64_t[]){S1, N1, D}, 3, ACL_INT8, NULL, 0, ACL_FORMAT_ND,
                                    (const int64_t[]){S1, N1, D}, 3, a.q.mem),
              *tw = aclCreateTensor((const int64_t[]){S1, N1}, 2, ACL_FLOAT16, NULL, 0, ACL_FORMAT_ND,
                                    (const int64_t[]){S1, N1}, 2, a.w.mem),
              *tsq = aclCreateTensor((const int64_t[]){S1, N1}, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND,
                                     (const int64_t[]){S1, N1}, 2, a.sq.mem),
              *tout = aclCreateTensor((const int64_t[]){S1, N2, QK}, 3, ACL_INT32, NULL, 0, ACL_FORMAT_ND,
                                      (const int64_t[]){S1, N2, QK}, 3, a.out.mem);
    for (int v = 0; v < 2; v++) {
        planned = v ? aclnnQuantLightningIndexerV2GetWorkspaceSize(tq, a.cache.t, tw, tsq, a.cache_sk.t, cuq.t, NULL, NULL,
                                                                   a.lens.t, NULL, a.table.t, NULL, NULL, QK, 2, S1, tnd,
                                                                   pa, 3, 1, 0, tout, NULL, &ws, &e)
                    : aclnnQuantLightningIndexerV2GetWorkspaceSize(a.q.t, a.k.t, a.w.t, a.sq.t, a.sk.t, NULL, NULL, NULL,
                                                                   NULL, NULL, NULL, NULL, NULL, QK, 2, S1, NULL, NULL,
                                                                   3, 1, 0, a.out.t, NULL, &ws, &e);
        CHECK_EQ_INT(run_planned(planned, ws, e, aclnnQuantLightningIndexerV2), ACLNN_SUCCESS);
        CHECK_EQ_INT(aclrtMemcpy(v2, sizeof v2, a.out.mem, sizeof v2, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
        CHECK(memcmp(v1, v2, sizeof v1) == 0);
    }
    aclTensor *views[] = {tq, tw, tsq, tout};
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++) CHECK_EQ_INT(aclDestroyTensor(views[i]), ACLNN_SUCCESS);

    /* aclnnLightningIndexerV2: FLOAT16 q and k with FLOAT w and values, as CANN's; the same
     * indices and values as aclnnLightningIndexer's sparse mode 3 when cmpRatio is 1 */
    static float hq[B * S1 * N1 * D], hk[B * S2 * N2 * D], hw[B * S1 * N1];
    uint16_t q16[B * S1 * N1 * D], k16[B * S2 * N2 * D];
    float fv[B * S1 * N2 * QK];
    for (int i = 0; i < B * S1 * N1 * D; i++) q16[i] = aclFloatToFloat16(hq[i] = (float)((i % 7) - 3) * 0.25f);
    for (int i = 0; i < B * S2 * N2 * D; i++) k16[i] = aclFloatToFloat16(hk[i] = (float)((i % 5) - 1) * 0.5f);
    for (int i = 0; i < B * S1 * N1; i++) hw[i] = 0.5f + 0.125f * (float)i;
    for (int i = 0; i < B * S1 * N2 * QK; i++) fv[i] = SENTINEL;
    dev fq = make(q16, sizeof q16, q_shape, 4, ACL_FLOAT16), fk = make(k16, sizeof k16, k_shape, 4, ACL_FLOAT16),
        fw = make(hw, sizeof hw, w_shape, 3, ACL_FLOAT), fval = make(fv, sizeof fv, q_out_shape, 4, ACL_FLOAT);
    int32_t nines[B * S1 * N2 * QK];
    for (int i = 0; i < B * S1 * N2 * QK; i++) nines[i] = 99;
    CHECK_EQ_INT(aclrtMemcpy(a.out.mem, sizeof nines, nines, sizeof nines, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
#define LIV2(k, offs, lk, rv, vals) \
    aclnnLightningIndexerV2GetWorkspaceSize(fq.t, k, fw.t, NULL, NULL, NULL, NULL, NULL, NULL, offs, NULL, QK, S1, bsnd, lk, \
                                            3, 1, rv, a.out.t, vals, &ws_, &e_)
    CHECK_PHASE1_FAILS(LIV2(fk.t, NULL, bsnd, 1, bfv.t), ACLNN_ERR_PARAM_INVALID,
                       "sparseValuesOut: expected dtype ACL_FLOAT, got ACL_BF16");
    CHECK_PHASE1_FAILS(LIV2(fk.t, NULL, pa, 0, NULL), ACLNN_ERR_PARAM_INVALID, "or \"PA_BBND\" (a paged cache)");
    CHECK_PHASE1_FAILS(LIV2(fk.t, NULL, bsnd, 1, NULL), ACLNN_ERR_PARAM_NULLPTR, "sparseValuesOut");
    CHECK(quant_out_untouched(&a));
    float v1val[B * S1 * N2 * QK], v2val[B * S1 * N2 * QK];
    planned = aclnnLightningIndexerGetWorkspaceSize(fq.t, fk.t, fw.t, NULL, NULL, NULL, bsnd, bsnd, QK, 3, INT64_MAX,
                                                    INT64_MAX, true, a.out.t, fval.t, &ws, &e);
    CHECK_EQ_INT(run_planned(planned, ws, e, aclnnLightningIndexer), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclrtMemcpy(v1, sizeof v1, a.out.mem, sizeof v1, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtMemcpy(v1val, sizeof v1val, fval.mem, sizeof v1val, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    planned = aclnnLightningIndexerV2GetWorkspaceSize(fq.t, fk.t, fw.t, NULL, NULL, NULL, NULL, NULL, NULL, off.t, NULL, QK,
                                                      S1, NULL, NULL, 3, 1, 1, a.out.t, fval.t, &ws, &e);
    CHECK_EQ_INT(run_planned(planned, ws, e, aclnnLightningIndexerV2), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclrtMemcpy(v2, sizeof v2, a.out.mem, sizeof v2, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtMemcpy(v2val, sizeof v2val, fval.mem, sizeof v2val, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK(memcmp(v1, v2, sizeof v1) == 0 && memcmp(v1val, v2val, sizeof v1val) == 0);
    CHECK(v1[0] >= 0 && v1[QK - 1] == -1);
#undef LIV2
#undef QV2
    dev *all[] = {&r4, &r1, &u9, &cuq, &off, &foff_d, &bfv, &fq, &fk, &fw, &fval};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
    quant_drop(&a);
}

/* The V2 metadata ops: CANN's argument checks, nothing written on failure, and the documented
 * description written by phase 2 (the rest of the 1024 values zeroed). */
static void test_v2_metadata(void) {
    enum { WORDS = 1024 };
    static int32_t init[WORDS];
    for (int i = 0; i < WORDS; i++) init[i] = 7;
    const int64_t meta_shape[1] = {WORDS}, one[1] = {1}, empty[1] = {0};
    int32_t len1[1] = {5};
    float fmeta[WORDS] = {0};
    dev meta = make(init, sizeof init, meta_shape, 1, ACL_INT32), fm = make(fmeta, sizeof fmeta, meta_shape, 1, ACL_FLOAT),
        used1 = make(len1, sizeof len1, one, 1, ACL_INT32), none = make(len1, sizeof len1, empty, 1, ACL_INT32);
    char bsnd_[] = "BSND", tnd[] = "TND", pa_bsnd[] = "PA_BSND";
#define META(cuq, usedk, res, bs, lq, lk, mask, ratio, m) \
    aclnnLightningIndexerV2MetadataGetWorkspaceSize(cuq, NULL, NULL, usedk, res, 16, 1, 128, 32, bs, 64, 32, lq, lk, mask, \
                                                    ratio, m, &ws_, &e_)
    CHECK_PHASE1_FAILS(META(NULL, NULL, NULL, 2, bsnd_, bsnd_, 1, 4, meta.t), ACLNN_ERR_PARAM_INVALID,
                       "maskMode: expected 0 (no mask) or 3");
    CHECK_PHASE1_FAILS(META(NULL, NULL, NULL, 2, bsnd_, bsnd_, 3, 4, meta.t), ACLNN_ERR_PARAM_NULLPTR,
                       "cmpResidualKOptional");
    CHECK_PHASE1_FAILS(META(NULL, NULL, none.t, 2, bsnd_, bsnd_, 3, 4, meta.t), ACLNN_ERR_PARAM_NULLPTR,
                       "cmpResidualKOptional"); /* CANN's (0,) tensor is "absent" */
    CHECK_PHASE1_FAILS(META(NULL, NULL, NULL, 2, tnd, tnd, 0, 4, meta.t), ACLNN_ERR_PARAM_NULLPTR, "cuSeqlensQOptional");
    CHECK_PHASE1_FAILS(META(NULL, used1.t, NULL, 2, bsnd_, bsnd_, 0, 4, meta.t), ACLNN_ERR_PARAM_INVALID,
                       "batch size 2 and the key's 1");
    CHECK_PHASE1_FAILS(META(NULL, NULL, NULL, 2, bsnd_, bsnd_, 0, 0, meta.t), ACLNN_ERR_PARAM_INVALID, "cmpRatio");
    CHECK_PHASE1_FAILS(META(NULL, NULL, NULL, -1, bsnd_, bsnd_, 0, 4, meta.t), ACLNN_ERR_PARAM_INVALID, "batchSize");
    CHECK_PHASE1_FAILS(META(NULL, NULL, NULL, 2, bsnd_, bsnd_, 0, 4, fm.t), ACLNN_ERR_PARAM_INVALID,
                       "metaData: expected an ACL_INT32 vector");
    CHECK_PHASE1_FAILS(META(NULL, NULL, NULL, 2, bsnd_, bsnd_, 0, 4, NULL), ACLNN_ERR_PARAM_NULLPTR, "metaData");
    CHECK_PHASE1_FAILS(aclnnQuantLightningIndexerV2MetadataGetWorkspaceSize(NULL, NULL, NULL, NULL, NULL, 16, 1, 128, 32, 0,
                                                                            2, 64, 32, bsnd_, pa_bsnd, 0, 4, meta.t, &ws_,
                                                                            &e_),
                       ACLNN_ERR_PARAM_INVALID, "quantMode: expected 1..5");
    int32_t host[WORDS];
    CHECK_EQ_INT(aclrtMemcpy(host, sizeof host, meta.mem, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK(memcmp(host, init, sizeof host) == 0);

    uint64_t ws = 0;
    aclOpExecutor *e = NULL;
    aclnnStatus planned = aclnnQuantLightningIndexerV2MetadataGetWorkspaceSize(
        NULL, NULL, NULL, NULL, used1.t, 16, 1, 128, 32, 2, 2, 64, 32, bsnd_, pa_bsnd, 3, 4, meta.t, &ws, &e);
    CHECK_EQ_INT(run_planned(planned, ws, e, aclnnQuantLightningIndexerV2Metadata), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "cmpResidualKOptional: expected 2 values (the query's batch size), got 1");
    planned = aclnnQuantLightningIndexerV2MetadataGetWorkspaceSize(NULL, NULL, NULL, NULL, NULL, 16, 1, 128, 32, 2, 2, 64,
                                                                  32, bsnd_, pa_bsnd, 0, 4, meta.t, &ws, &e);
    CHECK_EQ_INT(run_planned(planned, ws, e, aclnnQuantLightningIndexerV2Metadata), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclrtMemcpy(host, sizeof host, meta.mem, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK_EQ_INT(host[0], 0x4C494756);
    CHECK_EQ_INT(host[1], 1);
    CHECK_EQ_INT(host[2], 2);
    CHECK_EQ_INT(host[3], 0);
    CHECK_EQ_INT(host[4], 4);
    CHECK_EQ_INT(host[5], 16);
    CHECK_EQ_INT(host[7], 32);
    CHECK_EQ_INT(host[8], 0);
    CHECK_EQ_INT(host[WORDS - 1], 0);
#undef META
    /* a metadata executor handed to the indexer */
    CHECK_EQ_INT(aclnnLightningIndexerV2MetadataGetWorkspaceSize(NULL, NULL, NULL, NULL, NULL, 16, 1, 128, 32, 2, 64, 32,
                                                                 bsnd_, bsnd_, 0, 4, meta.t, &ws, &e),
                 ACLNN_SUCCESS);
    CHECK_EQ_INT(run_planned(ACLNN_SUCCESS, ws, e, aclnnLightningIndexerV2), ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "aclnnLightningIndexerV2MetadataGetWorkspaceSize");
    dev *all[] = {&meta, &fm, &used1, &none};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
}

int main(void) {
    CHECK_EQ_INT(aclInit(NULL), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtSetDevice(0), ACL_SUCCESS);
    test_grad_phase1();
    test_grad_phase2();
    test_forward_phase1();
    test_forward_huge_staged_view();
    test_kl_loss();
    test_quant_indexer();
    test_v2_indexers();
    test_v2_metadata();
    CHECK_EQ_INT(aclrtResetDevice(0), ACL_SUCCESS);
    CHECK_EQ_INT(aclFinalize(), ACL_SUCCESS);
    return check_report("aclnn-op-errors");
}
