/*
 * aclnnQuantLightningIndexer in fuzz-aclnn (fuzz_aclnn_quant.h). lig's own call runs on the case's
 * host memory (fuzz-lig-fwd checks that one against float64); the front end's on copies in
 * aclrtMalloc memory. The views are read from the descriptors qcall_make made (white-box:
 * core/tensor.h), so the aclnn tensors describe exactly lig's views, padded strides included.
 */
#include "fuzz_aclnn_quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_quant_lightning_indexer.h"
#include "core/tensor.h"
#include "framework.h"
#include "fuzz_aclnn_kl_loss.h"
#include "fuzz_case.h"
#include "fuzz_quant_spec.h"
#include "quant_case.h"

enum { QF_NONE = -1, QF_DESTROYED = 0, QF_FREED_BEFORE, QF_FREED_BETWEEN, QF_FORMAT, QF_DTYPE, QF_RUN_TWICE,
       QF_EXEC_DESTROYED, QF_WS_SHORT, QF_STREAM, QF_KINDS };

enum { QF_SLOTS = 10 }; /* qcall's buffers, QB_Q .. QB_VAL */

typedef struct quant_mirror {
    void *dev[QF_SLOTS];
    aclTensor *t[QF_SLOTS];
    int freed[QF_SLOTS];
} quant_mirror;

/* The case's tensors as aclnn tensors over copies of their (unrun) buffers; codes victims of the
 * dtype defect become ACL_HIFLOAT8, other victims ACL_DOUBLE. */
static void mirror_make(const qcall *call, quant_mirror *m, int defect, int victim)
{
    memset(m, 0, sizeof *m);
    for (int i = 0; i < QF_SLOTS; i++) {
        const lig_tensor *lt = call->own[i];
        if (lt == NULL) {
            continue;
        }
        const size_t bytes = call->bytes[i], esize = lig_dtype_size(lt->dtype);
        CHECK(aclrtMalloc(&m->dev[i], bytes ? bytes : 1, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "aclrtMalloc(%zu)",
              bytes);
        CHECK(bytes == 0 || aclrtMemcpy(m->dev[i], bytes, call->snapshot[i], bytes, ACL_MEMCPY_HOST_TO_DEVICE) ==
                                ACL_SUCCESS,
              "aclrtMemcpy host to device");
        const int64_t offset = (int64_t)(((const char *)lt->data - (const char *)call->buf[i]) / (ptrdiff_t)esize);
        const int64_t storage = (int64_t)(bytes / esize);
        aclDataType dt = fz_acl_dtype(lt->dtype);
        if (defect == QF_DTYPE && i == victim) {
            dt = i == QB_Q || i == QB_K ? ACL_HIFLOAT8 : ACL_DOUBLE;
        }
        const aclFormat fmt = defect == QF_FORMAT && i == victim ? ACL_FORMAT_FRACTAL_NZ : ACL_FORMAT_ND;
        m->t[i] = aclCreateTensor(lt->shape, (uint64_t)lt->ndim, dt, lt->strides, offset, fmt, &storage, 1, m->dev[i]);
        CHECK(m->t[i] != NULL, "aclCreateTensor refused lig's view: %s", aclGetRecentErrMsg());
    }
}

static int output_unchanged(const qcall *call, const quant_mirror *m)
{
    return m->dev[QB_IDX] == NULL || m->freed[QB_IDX] ||
           memcmp(m->dev[QB_IDX], call->snapshot[QB_IDX], call->bytes[QB_IDX]) == 0;
}

static aclnnStatus acl_phase1(const qcall *call, const quant_mirror *m, char *lq, char *lk, uint64_t *ws,
                              aclOpExecutor **ex)
{
    aclTensor *const *t = m->t;
    return aclnnQuantLightningIndexerGetWorkspaceSize(t[QB_Q], t[QB_K], t[QB_W], t[QB_SQ], t[QB_SK], t[QB_AQ],
                                                      t[QB_AK], t[QB_TABLE], call->query_quant_mode,
                                                      call->key_quant_mode, lq, lk, call->sparse_count,
                                                      call->sparse_mode, call->pre_tokens, call->next_tokens,
                                                      t[QB_IDX], ws, ex);
}

int fz_aclnn_quant(fz_in *in, char *label, size_t label_size)
{
    const uint8_t d = fz_u8(in);
    const int defect = d < 128 ? QF_NONE : d % QF_KINDS;
    qspec s;
    th_rng r = th_rng_make(fz_decode_qspec(in, &s, 0));
    s.with_values = 0; /* CANN's operator writes indices only */
    qcase c;
    qcase_make(&r, &s, &c);
    qcall call;
    qcall_make(&c, &call);
    /* lig's own call on the host memory (the mirror copies the snapshots taken before it) */
    uint64_t lws = 0;
    lig_executor *lex = NULL;
    const lig_status l1 = qcall_phase1(&call, &lws, &lex);
    const lig_status l2 = fz_lig_phase2(l1, lws, lex, lig_quant_indexer);
    int slots[QF_SLOTS], n_slots = 0;
    for (int i = 0; i < QF_SLOTS; i++) {
        if (call.own[i] != NULL) {
            slots[n_slots++] = i;
        }
    }
    const int victim = slots[fz_range(in, 0, n_slots - 1)];
    char desc[400];
    qcase_describe(&c, desc, sizeof desc);
    snprintf(label, label_size, "aclnn quantized forward [%s] front-end defect %d on tensor %d", desc, defect, victim);
    quant_mirror m;
    mirror_make(&call, &m, defect, victim);

    const int memory_defect = defect == QF_FREED_BEFORE || defect == QF_FREED_BETWEEN;
    /* lig's call may leave the query scales out; CANN's signature requires them */
    const int fe_must_fail = !s.has_sq || (defect != QF_NONE && defect != QF_RUN_TWICE && defect != QF_EXEC_DESTROYED &&
                                           defect != QF_WS_SHORT && !(memory_defect && lig_tensor_numel(call.own[victim]) == 0));
    if (defect == QF_DESTROYED) {
        CHECK(aclDestroyTensor(m.t[victim]) == ACLNN_SUCCESS, "aclDestroyTensor");
    } else if (defect == QF_FREED_BEFORE) {
        CHECK(aclrtFree(m.dev[victim]) == ACL_SUCCESS, "aclrtFree");
        m.freed[victim] = 1;
    }
    char lq[8], lk[8];
    snprintf(lq, sizeof lq, "%s", call.layout_query);
    snprintf(lk, sizeof lk, "%s", call.layout_key);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const aclnnStatus a1 = acl_phase1(&call, &m, lq, lk, &ws, &ex);
    aclnnStatus a2 = ACLNN_SUCCESS;
    int phase2_defect = 0;
    if (a1 == ACLNN_SUCCESS) {
        CHECK(ws == lws, "%s: workspace %llu, lig's %llu", label, (unsigned long long)ws, (unsigned long long)lws);
        static const int p2_of[QF_KINDS] = {[QF_WS_SHORT] = FZ_ACL_P2_WS_SHORT,
                                            [QF_STREAM] = FZ_ACL_P2_STREAM,
                                            [QF_EXEC_DESTROYED] = FZ_ACL_P2_EXEC_DESTROYED,
                                            [QF_RUN_TWICE] = FZ_ACL_P2_RUN_TWICE}; /* the rest: none */
        if (defect == QF_FREED_BETWEEN) {
            m.freed[victim] = CHECK(aclrtFree(m.dev[victim]) == ACL_SUCCESS, "aclrtFree");
        }
        void *outs[1] = {m.dev[QB_IDX]};
        const size_t out_bytes[1] = {call.bytes[QB_IDX]};
        a2 = fz_acl_phase2(aclnnQuantLightningIndexer, ws, ex, defect < 0 ? FZ_ACL_P2_NONE : p2_of[defect], outs,
                           out_bytes, 1, &phase2_defect, label);
    }
    if (a1 == ACLNN_SUCCESS && a2 == ACLNN_SUCCESS && fz_env_flag("LIG_FUZZ_PERTURB") && call.bytes[QB_IDX] > 0 &&
        !m.freed[QB_IDX]) {
        ((unsigned char *)m.dev[QB_IDX])[0] ^= 1; /* the first byte of the indices' buffer (its view's, unpadded) */
    }
    const int failed = a1 != ACLNN_SUCCESS || a2 != ACLNN_SUCCESS;
    fz_acl_judge(label, a1, a2, l1, l2, fe_must_fail, phase2_defect, !failed || output_unchanged(&call, &m));
    if (!failed && !fe_must_fail) {
        CHECK(m.freed[QB_IDX] || memcmp(m.dev[QB_IDX], call.buf[QB_IDX], call.bytes[QB_IDX]) == 0,
              "%s: the indices differ from lig's", label);
    }
    qcall_free(&call);
    qcase_free(&c);
    return !failed ? FZ_ACL_MATCHED : defect == QF_NONE && s.has_sq ? FZ_ACL_FAILED_ALIKE : FZ_ACL_REFUSED_DEFECT;
}
