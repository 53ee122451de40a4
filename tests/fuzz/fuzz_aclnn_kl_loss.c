/*
 * aclnnSparseLightningIndexerGradKLLoss (and its V2, with or without sinks) in fuzz-aclnn
 * (fuzz_aclnn_kl_loss.h). lig's own call runs on the case's host memory (fuzz-lig-fwd checks that
 * one against float64); the front end's on copies in aclrtMalloc memory, described with
 * aclCreateTensor, the lengths as aclIntArray.
 */
#include "fuzz_aclnn_kl_loss.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_sparse_lightning_indexer_grad_kl_loss.h"
#include "aclnnop/aclnn_sparse_lightning_indexer_grad_kl_loss_v2.h"
#include "float_formats.h"
#include "framework.h"
#include "fuzz_case.h"
#include "fuzz_kl_loss.h"

aclDataType fz_acl_dtype(lig_dtype d)
{
    switch (d) {
    case LIG_FLOAT32: return ACL_FLOAT;
    case LIG_FLOAT16: return ACL_FLOAT16;
    case LIG_BFLOAT16: return ACL_BF16;
    case LIG_INT32: return ACL_INT32;
    case LIG_INT8: return ACL_INT8;
    case LIG_FLOAT8_E4M3FN: return ACL_FLOAT8_E4M3FN;
    default: return ACL_INT64;
    }
}

void fz_acl_judge(const char *label, aclnnStatus a1, aclnnStatus a2, lig_status l1, lig_status l2, int must_fail,
                  int phase2_defect, int outputs_unchanged)
{
    const char *msg = aclGetRecentErrMsg();
    const int failed = a1 != ACLNN_SUCCESS || a2 != ACLNN_SUCCESS;
    if (failed) {
        CHECK(outputs_unchanged, "%s: a failed call (%d, %d) wrote to an output", label, (int)a1, (int)a2);
        CHECK(msg != NULL && msg[0] != '\0', "%s: a failure without a message", label);
    }
    if (must_fail) {
        CHECK(failed, "%s: the front end accepted a defective call", label);
        CHECK(a1 == ACLNN_SUCCESS || a1 == ACLNN_ERR_PARAM_INVALID || a1 == ACLNN_ERR_PARAM_NULLPTR,
              "%s: phase 1 returned %d", label, (int)a1);
        CHECK(a2 == ACLNN_SUCCESS || a2 == ACLNN_ERR_PARAM_INVALID, "%s: phase 2 returned %d", label, (int)a2);
        return;
    }
    /* lig's statuses are CANN's codes (docs/aclnn.md, Return codes) */
    CHECK(a1 == (aclnnStatus)l1, "%s: phase 1 returned %d, lig %d: %s", label, (int)a1, (int)l1, msg ? msg : "");
    if (a1 == ACLNN_SUCCESS && !phase2_defect) {
        CHECK(a2 == (aclnnStatus)l2, "%s: phase 2 returned %d, lig %d: %s", label, (int)a2, (int)l2, msg ? msg : "");
    } else if (a1 == ACLNN_SUCCESS) {
        CHECK(a2 == ACLNN_ERR_PARAM_INVALID || (l2 != LIG_SUCCESS && a2 == (aclnnStatus)l2),
              "%s: phase 2 with a defect returned %d", label, (int)a2);
    }
}

lig_status fz_lig_phase2(lig_status planned, uint64_t ws, lig_executor *ex,
                         lig_status (*run)(void *, uint64_t, lig_executor *, void *))
{
    if (planned != LIG_SUCCESS) {
        return LIG_SUCCESS;
    }
    void *w = th_xmalloc((size_t)ws + 1);
    const lig_status st = run(w, ws, ex, NULL);
    free(w);
    return st;
}

aclnnStatus fz_acl_phase2(aclnnStatus (*run)(void *, uint64_t, aclOpExecutor *, aclrtStream), uint64_t ws,
                          aclOpExecutor *ex, int defect, void *const *outs, const size_t *out_bytes, int n,
                          int *phase2_defect, const char *label)
{
    void *wmem = NULL;
    if (ws > 0) {
        CHECK(aclrtMalloc(&wmem, (size_t)ws, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "workspace");
    }
    uint64_t run_size = ws;
    aclrtStream stream = NULL;
    int dummy;
    *phase2_defect = 0;
    if (defect == FZ_ACL_P2_WS_SHORT && ws > 0) {
        run_size = ws - 1;
        *phase2_defect = 1;
    } else if (defect == FZ_ACL_P2_STREAM) {
        stream = &dummy;
    } else if (defect == FZ_ACL_P2_EXEC_DESTROYED) {
        CHECK(aclDestroyAclOpExecutor(ex) == ACLNN_SUCCESS, "aclDestroyAclOpExecutor");
        *phase2_defect = 1;
    }
    const aclnnStatus st = run(wmem, run_size, ex, stream);
    if (defect == FZ_ACL_P2_RUN_TWICE && st == ACLNN_SUCCESS) {
        unsigned char *after[8] = {0};
        for (int i = 0; i < n && i < 8; i++) {
            after[i] = th_xmalloc(out_bytes[i] + 1);
            memcpy(after[i], outs[i], out_bytes[i]);
        }
        CHECK(run(wmem, ws, ex, NULL) == ACLNN_ERR_PARAM_INVALID, "%s: a consumed executor ran", label);
        for (int i = 0; i < n && i < 8; i++) {
            CHECK(memcmp(after[i], outs[i], out_bytes[i]) == 0, "%s: a refused second run wrote", label);
            free(after[i]);
        }
    }
    if (wmem) {
        aclrtFree(wmem);
    }
    return st;
}

enum { KF_NONE = -1, KF_DESTROYED = 0, KF_FREED_BEFORE, KF_FREED_BETWEEN, KF_FORMAT, KF_DTYPE, KF_RUN_TWICE,
       KF_EXEC_DESTROYED, KF_WS_SHORT, KF_STREAM, KF_ARRAY_DESTROYED, KF_ARRAY_BETWEEN, KF_KINDS };

/* The case's tensors in aclrtMalloc memory, and their descriptions. */
typedef struct kl_mirror {
    void *dev[KA_COUNT];
    aclTensor *t[KA_COUNT];
    int freed[KA_COUNT];
    unsigned char *before[KA_COUNT]; /* the outputs as they were before any call */
    aclIntArray *seq[2];
} kl_mirror;

static void mirror_make(const lkcase *c, kl_mirror *m, int defect, int victim)
{
    memset(m, 0, sizeof *m);
    for (int a = 0; a < KA_COUNT; a++) {
        if (c->t[a] == NULL || a == KA_AQ || a == KA_AK) {
            continue;
        }
        const size_t bytes = (size_t)c->bytes[a];
        /* the runtime refuses 0-byte allocations and copies: an empty tensor gets one spare byte */
        CHECK(aclrtMalloc(&m->dev[a], bytes ? bytes : 1, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS,
              "aclrtMalloc(%zu)", bytes);
        CHECK(bytes == 0 || aclrtMemcpy(m->dev[a], bytes, c->buf[a], bytes, ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS,
              "aclrtMemcpy host to device");
        m->before[a] = th_xmalloc(bytes + 1);
        memcpy(m->before[a], c->buf[a], bytes);
        const int64_t storage = (int64_t)(bytes / th_dtype_size(c->dtype[a]));
        const aclDataType dt = defect == KF_DTYPE && a == victim ? ACL_DOUBLE : fz_acl_dtype(c->dtype[a]);
        const aclFormat fmt = defect == KF_FORMAT && a == victim ? ACL_FORMAT_FRACTAL_NZ : ACL_FORMAT_ND;
        m->t[a] = aclCreateTensor(c->shape[a], (uint64_t)c->ndim[a], dt, NULL, 0, fmt, &storage, 1, m->dev[a]);
        CHECK(m->t[a] != NULL, "aclCreateTensor refused a contiguous tensor: %s", aclGetRecentErrMsg());
    }
    for (int i = 0; i < 2; i++) {
        const int a = i ? KA_AK : KA_AQ;
        if (c->t[a]) {
            m->seq[i] = aclCreateIntArray((const int64_t *)c->buf[a], (uint64_t)c->d.B);
            CHECK(m->seq[i] != NULL, "aclCreateIntArray");
        }
    }
}

static int outputs_unchanged(const lkcase *c, const kl_mirror *m)
{
    for (int a = KA_DQ; a <= KA_LOSS; a++) {
        if (m->dev[a] && !m->freed[a] && memcmp(m->dev[a], m->before[a], (size_t)c->bytes[a]) != 0) {
            return 0;
        }
    }
    return 1;
}

static void mirror_free(kl_mirror *m)
{
    for (int a = 0; a < KA_COUNT; a++) {
        free(m->before[a]); /* the handles and memory go with aclFinalize */
    }
}

static aclnnStatus acl_phase1(const lkcase *c, const kl_mirror *m, char *layout, uint64_t *ws, aclOpExecutor **ex)
{
    aclTensor *const *t = m->t;
    if (c->d.sinks || c->d.v2)
        return aclnnSparseLightningIndexerGradKLLossV2GetWorkspaceSize(
            t[KA_Q], t[KA_K], t[KA_QI], t[KA_KI], t[KA_W], t[KA_IDX], t[KA_SMAX], t[KA_SSUM], t[KA_QR], t[KA_KR],
            m->seq[0], m->seq[1], t[KA_SINKS], c->scale, layout, c->sparse_mode, c->pre_tokens, c->next_tokens,
            c->deterministic, t[KA_DQ], t[KA_DK], t[KA_DW], t[KA_LOSS], ws, ex);
    return aclnnSparseLightningIndexerGradKLLossGetWorkspaceSize(
        t[KA_Q], t[KA_K], t[KA_QI], t[KA_KI], t[KA_W], t[KA_IDX], t[KA_SMAX], t[KA_SSUM], t[KA_QR], t[KA_KR],
        m->seq[0], m->seq[1], c->scale, layout, c->sparse_mode, c->pre_tokens, c->next_tokens, c->deterministic,
        t[KA_DQ], t[KA_DK], t[KA_DW], t[KA_LOSS], ws, ex);
}

int fz_aclnn_kl_loss(fz_in *in, char *label, size_t label_size)
{
    const uint8_t d = fz_u8(in);
    int defect = d < 128 ? KF_NONE : d % KF_KINDS;
    lkcase c;
    char desc[512];
    fz_decode_lkcase(in, &c, 1, desc, sizeof desc);
    int slots[KA_COUNT], n_slots = 0;
    for (int a = 0; a < KA_COUNT; a++) {
        if (c.t[a] && a != KA_AQ && a != KA_AK) {
            slots[n_slots++] = a;
        }
    }
    const int victim = slots[fz_range(in, 0, n_slots - 1)];
    const int array = c.t[KA_AQ] ? (int)(fz_u8(in) & 1) : -1;
    if ((defect == KF_ARRAY_DESTROYED || defect == KF_ARRAY_BETWEEN) && array < 0) {
        defect = KF_NONE;
    }
    snprintf(label, label_size, "aclnn sparse KL loss [%s] front-end defect %d on tensor %d", desc, defect, victim);
    kl_mirror m;
    mirror_make(&c, &m, defect, victim);

    /* lig's own call on the host memory */
    uint64_t lws = 0;
    lig_executor *lex = NULL;
    const lig_status l1 = lkcase_phase1(&c, &lws, &lex);
    const lig_status l2 = fz_lig_phase2(l1, lws, lex, lig_sparse_indexer_grad_kl_loss);

    const int memory_defect = defect == KF_FREED_BEFORE || defect == KF_FREED_BETWEEN;
    const int fe_must_fail = defect != KF_NONE && defect != KF_RUN_TWICE && defect != KF_EXEC_DESTROYED &&
                             defect != KF_WS_SHORT && defect != KF_ARRAY_BETWEEN &&
                             !(memory_defect && c.bytes[victim] == 0);
    if (defect == KF_DESTROYED) {
        CHECK(aclDestroyTensor(m.t[victim]) == ACLNN_SUCCESS, "aclDestroyTensor");
    } else if (defect == KF_FREED_BEFORE) {
        CHECK(aclrtFree(m.dev[victim]) == ACL_SUCCESS, "aclrtFree");
        m.freed[victim] = 1;
    } else if (defect == KF_ARRAY_DESTROYED) {
        CHECK(aclDestroyIntArray(m.seq[array]) == ACLNN_SUCCESS, "aclDestroyIntArray");
    }
    char layout[8];
    snprintf(layout, sizeof layout, "%s", c.layout);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const aclnnStatus a1 = acl_phase1(&c, &m, layout, &ws, &ex);
    aclnnStatus a2 = ACLNN_SUCCESS;
    int phase2_defect = 0;
    if (a1 == ACLNN_SUCCESS) {
        CHECK(ws == lws, "%s: workspace %llu, lig's %llu", label, (unsigned long long)ws, (unsigned long long)lws);
        if (defect == KF_FREED_BETWEEN) {
            CHECK(aclrtFree(m.dev[victim]) == ACL_SUCCESS, "aclrtFree");
            m.freed[victim] = 1;
        } else if (defect == KF_ARRAY_BETWEEN) {
            /* CANN reads the lengths in phase 1: destroying the array then is allowed */
            CHECK(aclDestroyIntArray(m.seq[array]) == ACLNN_SUCCESS, "aclDestroyIntArray");
        }
        const int p2 = defect == KF_WS_SHORT        ? FZ_ACL_P2_WS_SHORT
                       : defect == KF_STREAM        ? FZ_ACL_P2_STREAM
                       : defect == KF_EXEC_DESTROYED ? FZ_ACL_P2_EXEC_DESTROYED
                       : defect == KF_RUN_TWICE     ? FZ_ACL_P2_RUN_TWICE
                                                    : FZ_ACL_P2_NONE;
        void *outs[4];
        size_t out_bytes[4];
        for (int a = KA_DQ; a <= KA_LOSS; a++) {
            outs[a - KA_DQ] = m.dev[a];
            out_bytes[a - KA_DQ] = (size_t)c.bytes[a];
        }
        a2 = fz_acl_phase2(c.d.sinks || c.d.v2 ? aclnnSparseLightningIndexerGradKLLossV2
                                               : aclnnSparseLightningIndexerGradKLLoss,
                           ws, ex, p2, outs, out_bytes, 4, &phase2_defect, label);
    }
    if (a1 == ACLNN_SUCCESS && a2 == ACLNN_SUCCESS && fz_env_flag("LIG_FUZZ_PERTURB")) {
        ((unsigned char *)m.dev[KA_LOSS])[0] ^= 1; /* the loss always has its element */
    }
    const int failed = a1 != ACLNN_SUCCESS || a2 != ACLNN_SUCCESS;
    fz_acl_judge(label, a1, a2, l1, l2, fe_must_fail, phase2_defect, !failed || outputs_unchanged(&c, &m));
    if (!failed && !fe_must_fail) {
        /* d_key_index is bitwise reproducible only in deterministic mode (contract 2.5) */
        for (int a = KA_DQ; a <= KA_LOSS; a++) {
            CHECK((a == KA_DK && !c.deterministic) || m.freed[a] ||
                      memcmp(m.dev[a], c.buf[a], (size_t)c.bytes[a]) == 0,
                  "%s: output %d differs from lig's", label, a);
        }
    }
    mirror_free(&m);
    lkcase_free(&c);
    return !failed ? FZ_ACL_MATCHED : defect == KF_NONE ? FZ_ACL_FAILED_ALIKE : FZ_ACL_REFUSED_DEFECT;
}
