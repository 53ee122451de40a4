/*
 * libFuzzer target: the CANN-compatible front end (liblig_aclnn, docs/aclnn.md).
 *
 * An input is a session between aclInit and aclFinalize: up to eight runtime commands, then
 * (half the time) one operator call.
 *   commands: aclrtMalloc / aclrtMallocHost (sizes 0..512), aclrtFree / aclrtFreeHost (the start
 *     of a live allocation, a pointer inside one, a freed one, the wrong allocator, caller memory),
 *     aclrtMemcpy / aclrtMemcpyAsync (every aclrtMemcpyKind and an invalid one, tracked and caller
 *     memory, counts past destMax or past the allocation, overlapping ranges), aclrtMemset,
 *     aclCreateTensor (ranks 0..9, extents, strides of any sign, offsets, storage shapes, every
 *     dtype and format) with its getters, aclCreateIntArray and the destroy calls, twice too.
 *     Each is judged by a model of the runtime built from the table of docs/aclnn.md: the code,
 *     and for copies the destination (the source's old bytes after success, unchanged after
 *     failure).
 *   operator: the KL loss (fuzz_aclnn_kl_loss.h), the quantized forward (fuzz_aclnn_quant.h), or a backward or forward problem decoded as for the lig targets (fuzz_case.h), its
 *     tensors copied into aclrtMalloc memory and described with aclCreateTensor (same strides
 *     and offsets), run through aclnnLightningIndexerGrad* / aclnnLightningIndexer*, and compared
 *     with lig's own call on the same data: the same status in each phase and, after success, the
 *     same output bytes (lig's call is checked against float64 by fuzz-lig-grad / fuzz-lig-fwd).
 *     With a front-end defect (a tensor destroyed, memory freed before phase 1 or between the
 *     phases, a fractal format, a dtype lig lacks, the executor run twice, run by the other
 *     operator or destroyed, a workspace not from aclrtMalloc or too small, a stream it did not
 *     make) the call must fail with ACLNN_ERR_PARAM_INVALID. Every failure leaves every output
 *     unchanged.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_lightning_indexer.h"
#include "aclnnop/aclnn_lightning_indexer_grad.h"
#include "tensor_buffers.h"
#include "fuzz_case.h"
#include "float_formats.h"
#include "framework.h"
#include "forward_kl_runner.h"
#include "backward_runner.h"
#include "fuzz_aclnn_kl_loss.h"
#include "fuzz_aclnn_quant.h"

/* ---- the runtime model ---- */

/* aclGetRecentErrMsg clears the message it returns: read it once. */
static const char *recent_message(void)
{
    const char *m = aclGetRecentErrMsg();
    return m != NULL ? m : "(no message)";
}

#define MAX_ALLOCS 12
#define MAX_DEAD 32
#define MAX_HANDLES 8
#define CALLER_BYTES 256

typedef struct alloc {
    unsigned char *p;
    size_t size;
    int host; /* aclrtMallocHost */
} alloc;

typedef struct session {
    alloc live[MAX_ALLOCS];
    int n_live;
    void *dead[MAX_DEAD]; /* freed allocations: never dereferenced, only handed back */
    int n_dead;
    aclTensor *tensors[MAX_HANDLES];
    int tensor_live[MAX_HANDLES];
    int n_tensors;
    aclIntArray *arrays[MAX_HANDLES];
    int array_live[MAX_HANDLES];
    int n_arrays;
    unsigned char caller[2][CALLER_BYTES]; /* the program's own memory (untracked) */
} session;

/* The live allocation holding p, or -1. */
static int find_live(const session *s, const void *p)
{
    for (int i = 0; i < s->n_live; i++) {
        if ((const unsigned char *)p >= s->live[i].p && (const unsigned char *)p < s->live[i].p + s->live[i].size) {
            return i;
        }
    }
    return -1;
}

static void forget(session *s, int i)
{
    if (s->n_dead < MAX_DEAD) {
        s->dead[s->n_dead++] = s->live[i].p;
    }
    s->live[i] = s->live[--s->n_live];
}

static void cmd_malloc(fz_in *in, session *s)
{
    const int host = fz_u8(in) & 1;
    const uint8_t b = fz_u8(in);
    const size_t size = b < 16 ? 0 : (size_t)b * 2;
    void *p = NULL;
    const aclError st = host ? aclrtMallocHost(&p, size) : aclrtMalloc(&p, size, ACL_MEM_MALLOC_HUGE_FIRST);
    if (size == 0) {
        CHECK(st == ACL_ERROR_INVALID_PARAM, "aclrtMalloc%s of 0 bytes returned %d", host ? "Host" : "", (int)st);
        return;
    }
    if (!CHECK(st == ACL_SUCCESS && p != NULL, "aclrtMalloc%s(%zu) returned %d", host ? "Host" : "", size, (int)st)) {
        return;
    }
    memset(p, fz_u8(in), size);
    if (s->n_live < MAX_ALLOCS) {
        s->live[s->n_live++] = (alloc){p, size, host};
    } else {
        CHECK((host ? aclrtFreeHost(p) : aclrtFree(p)) == ACL_SUCCESS, "freeing a fresh allocation failed");
    }
}

static void cmd_free(fz_in *in, session *s)
{
    const uint8_t how = fz_u8(in);
    const int host_api = how & 1;
    void *p;
    int expect_ok = 0, victim = -1;
    if ((how >> 1) % 4 == 0 && s->n_dead > 0) {
        p = s->dead[fz_range(in, 0, s->n_dead - 1)];
    } else if ((how >> 1) % 4 == 1) {
        p = s->caller[how >> 7];
    } else if (s->n_live > 0) {
        victim = (int)fz_range(in, 0, s->n_live - 1);
        const int inside = (how >> 1) % 4 == 3 && s->live[victim].size > 1;
        p = s->live[victim].p + (inside ? fz_range(in, 1, (int64_t)s->live[victim].size - 1) : 0);
        expect_ok = !inside && s->live[victim].host == host_api;
    } else {
        return;
    }
    /* a freed address may have been handed out again: the model decides by address */
    const int holder = find_live(s, p);
    if (holder >= 0 && s->live[holder].p == p) {
        victim = holder;
        expect_ok = s->live[holder].host == host_api;
    }
    const aclError st = host_api ? aclrtFreeHost(p) : aclrtFree(p);
    if (expect_ok) {
        if (CHECK(st == ACL_SUCCESS, "aclrtFree%s of a live allocation returned %d", host_api ? "Host" : "", (int)st)) {
            forget(s, victim);
        }
    } else {
        CHECK(st == ACL_ERROR_INVALID_PARAM, "aclrtFree%s(%p) of no live allocation from it returned %d",
              host_api ? "Host" : "", p, (int)st);
    }
}

/* A pointer for a copy: into a live allocation, into caller memory, NULL, or a freed address.
 * *real: the bytes really there from p (what the program may let the runtime touch). */
static unsigned char *pick_pointer(fz_in *in, session *s, size_t *real, int *stale)
{
    const uint8_t w = fz_u8(in);
    *stale = 0;
    *real = 0;
    if (w < 16) {
        return NULL;
    }
    if (w < 40 && s->n_dead > 0) {
        unsigned char *p = s->dead[w % s->n_dead];
        const int i = find_live(s, p);
        *stale = i < 0;
        *real = i < 0 ? 0 : s->live[i].size - (size_t)(p - s->live[i].p);
        return p;
    }
    if (w < 110 || s->n_live == 0) {
        const size_t off = (size_t)fz_range(in, 0, CALLER_BYTES - 1);
        *real = CALLER_BYTES - off;
        return s->caller[w & 1] + off;
    }
    const alloc *a = &s->live[w % s->n_live];
    const size_t off = (size_t)fz_range(in, 0, (int64_t)a->size - 1);
    *real = a->size - off;
    return a->p + off;
}

static int kind_dst_device(int kind)
{
    return kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE ||
           kind == ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE || kind == ACL_MEMCPY_INNER_DEVICE_TO_DEVICE ||
           kind == ACL_MEMCPY_INTER_DEVICE_TO_DEVICE;
}

static int kind_src_device(int kind)
{
    return kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE ||
           kind == ACL_MEMCPY_INNER_DEVICE_TO_DEVICE || kind == ACL_MEMCPY_INTER_DEVICE_TO_DEVICE;
}

/* Whether `count` bytes at p pass the runtime's side check: inside a live allocation, or
 * caller memory where the kind does not say device. */
static int side_ok(const session *s, const unsigned char *p, size_t count, int device)
{
    const int i = find_live(s, p);
    if (i >= 0) {
        return count <= s->live[i].size - (size_t)(p - s->live[i].p);
    }
    return !device;
}

static void cmd_memcpy(fz_in *in, session *s, int memset_only)
{
    size_t dreal, sreal;
    int dstale, sstale;
    unsigned char *dst = pick_pointer(in, s, &dreal, &dstale);
    unsigned char *src = memset_only ? NULL : pick_pointer(in, s, &sreal, &sstale);
    const int kind = memset_only ? ACL_MEMCPY_HOST_TO_HOST : (int)fz_range(in, 0, 8); /* 8: not a kind */
    size_t count = (size_t)fz_u8(in) * 2;
    size_t dest_max = count + (size_t)fz_range(in, 0, 16) - 8 * (fz_u8(in) & 1);
    const int untracked_dst = dst != NULL && find_live(s, dst) < 0;
    const int untracked_src = src != NULL && find_live(s, src) < 0;
    /* The program keeps its own promises: caller memory is as large as destMax (and the source
     * as count) says, and a freed address is handed over only where the kind says device memory,
     * which the runtime then refuses without touching it. */
    if (untracked_dst && !dstale && dest_max > dreal) {
        dest_max = dreal;
    }
    if (!memset_only && untracked_src && !sstale && count > sreal) {
        count = sreal;
    }
    if ((dstale && !kind_dst_device(kind) && kind != 8) || (!memset_only && sstale && !kind_src_device(kind) && kind != 8)) {
        return;
    }
    if (memset_only && dstale) {
        return;
    }
    int ok = dst != NULL && (memset_only || (src != NULL && kind != 8)) && count <= dest_max;
    ok = ok && side_ok(s, dst, count, !memset_only && kind_dst_device(kind));
    ok = ok && (memset_only || side_ok(s, src, count, kind_src_device(kind)));
    /* snapshot of what may change: the destination's whole reachable range, and the source */
    const size_t span = dst != NULL && !dstale ? dreal : 0;
    unsigned char *before = th_xmalloc(span + 1), *from = th_xmalloc(count + 1);
    if (span) {
        memcpy(before, dst, span);
    }
    if (ok && !memset_only) {
        memcpy(from, src, count);
    }
    const int value = fz_u8(in);
    aclError st;
    if (memset_only) {
        st = aclrtMemset(dst, dest_max, value, count);
    } else if (fz_u8(in) & 1) {
        st = aclrtMemcpyAsync(dst, dest_max, src, count, (aclrtMemcpyKind)kind, NULL);
    } else {
        st = aclrtMemcpy(dst, dest_max, src, count, (aclrtMemcpyKind)kind);
    }
    const char *api = memset_only ? "aclrtMemset" : "aclrtMemcpy";
    if (ok) {
        CHECK(st == ACL_SUCCESS, "%s of %zu bytes (destMax %zu, kind %d) returned %d: %s", api, count, dest_max, kind,
              (int)st, recent_message());
        for (size_t i = 0; i < count && st == ACL_SUCCESS; i++) {
            const unsigned char want = memset_only ? (unsigned char)value : from[i];
            if (!CHECK(dst[i] == want, "%s: byte %zu of %zu is %d, expected %d", api, i, count, dst[i], want)) {
                break;
            }
        }
        CHECK(span < count || memcmp(dst + count, before + count, span - count) == 0,
              "%s wrote past its %zu bytes", api, count);
    } else {
        CHECK(st == ACL_ERROR_INVALID_PARAM, "%s of %zu bytes (destMax %zu, kind %d) must fail, returned %d", api,
              count, dest_max, kind, (int)st);
        CHECK(span == 0 || memcmp(dst, before, span) == 0, "a failed %s wrote", api);
    }
    free(before);
    free(from);
}

/* a * b and a + b that say when they leave int64 */
static int mul64(int64_t a, int64_t b, int64_t *r)
{
    if (a == 0 || b == 0) {
        *r = 0;
        return 1;
    }
    const int64_t m = a < 0 ? -a : a, n = b < 0 ? -b : b; /* |a|, |b| < 2^62 here */
    if (m > INT64_MAX / n) {
        return 0;
    }
    *r = a * b;
    return 1;
}

static int64_t decode_dim(fz_in *in)
{
    const uint8_t b = fz_u8(in);
    return b < 200 ? b % 7 : b < 240 ? (int64_t)1 << (b % 40 + 20) : -1 - (b & 3);
}

static void cmd_tensor(fz_in *in, session *s)
{
    static const int formats[] = {ACL_FORMAT_ND, ACL_FORMAT_NCHW, ACL_FORMAT_FRACTAL_NZ, ACL_FORMAT_NC1HWC0, -1, 1000};
    const uint64_t ndim = (uint64_t)fz_range(in, 0, 9);
    const uint64_t sdim = (uint64_t)fz_range(in, 0, 3);
    const aclDataType dtype = (aclDataType)fz_range(in, -1, 42); /* 34..41: the 8, 6 and 4-bit types; 42: none */
    const int format = formats[fz_range(in, 0, 5)];
    const uint8_t f = fz_u8(in);
    int64_t dims[9], strides[9], storage[3];
    for (int i = 0; i < 9; i++) {
        dims[i] = decode_dim(in);
        strides[i] = (int64_t)(int8_t)fz_u8(in) % 9;
    }
    for (int i = 0; i < 3; i++) {
        storage[i] = decode_dim(in);
    }
    const int64_t offset = (int64_t)(int8_t)fz_u8(in) % 12;
    const int with_strides = f & 1;
    void *data = s->n_live > 0 && (f & 2) ? s->live[f % s->n_live].p : NULL;
    /* the oracle (docs/aclnn.md, aclCreateTensor): whole-byte dtype (or ACL_FLOAT4_E2M1, counted in
     * elements), at most 8 dims, sizes >= 0, offset >= 0, and a view inside its storage; overflowing
     * counts are refused too */
    const int64_t es = (int64_t)aclDataTypeSize(dtype);
    int must_fail = (es == 0 && dtype != ACL_FLOAT4_E2M1) || ndim > 8 || offset < 0, unknown = 0;
    int64_t numel = 1, snumel = 1;
    for (uint64_t i = 0; i < ndim && i < 9; i++) {
        must_fail |= dims[i] < 0;
    }
    for (uint64_t i = 0; i < sdim; i++) {
        must_fail |= storage[i] < 0;
    }
    if (!must_fail) {
        for (uint64_t i = 0; i < ndim; i++) {
            unknown |= !mul64(numel, dims[i], &numel);
        }
        for (uint64_t i = 0; i < sdim; i++) {
            unknown |= !mul64(snumel, storage[i], &snumel);
        }
        int64_t bytes;
        unknown |= !mul64(snumel, es, &bytes);
        if (!unknown && numel > 0) {
            int64_t lo = offset, hi = offset, inner = 1, ext;
            for (int64_t i = (int64_t)ndim - 1; i >= 0 && !unknown; i--) {
                const int64_t st = with_strides ? strides[i] : inner;
                unknown |= !mul64(dims[i] - 1, st, &ext);
                *(ext < 0 ? &lo : &hi) += ext; /* |ext| < 2^62 * 8: sums of 8 stay in int64 */
                unknown |= !mul64(inner, dims[i] > 1 ? dims[i] : 1, &inner);
            }
            must_fail |= !unknown && (lo < 0 || hi >= snumel);
        }
        /* contiguous strides of an empty view can still overflow: the runtime may refuse it */
        for (uint64_t i = 0, inner = 1; !with_strides && numel == 0 && i < ndim; i++) {
            int64_t next;
            unknown |= !mul64((int64_t)inner, dims[i] > 1 ? dims[i] : 1, &next);
            inner = unknown ? 1 : (uint64_t)next;
        }
    }
    aclTensor *t = aclCreateTensor(dims, ndim, dtype, with_strides ? strides : NULL, offset, (aclFormat)format,
                                   storage, sdim, data);
    if (t == NULL) {
        CHECK(must_fail || unknown, "aclCreateTensor(ndim %llu, dtype %d, offset %lld) refused a valid view: %s",
              (unsigned long long)ndim, (int)dtype, (long long)offset, recent_message());
        return;
    }
    CHECK(!must_fail, "aclCreateTensor(ndim %llu, dtype %d, offset %lld) accepted an invalid view",
          (unsigned long long)ndim, (int)dtype, (long long)offset);
    int64_t got_offset = -1;
    aclDataType got_dtype = ACL_DT_UNDEFINED;
    aclFormat got_format = ACL_FORMAT_UNDEFINED;
    CHECK(aclGetViewOffset(t, &got_offset) == ACLNN_SUCCESS && got_offset == offset, "aclGetViewOffset");
    CHECK(aclGetDataType(t, &got_dtype) == ACLNN_SUCCESS && got_dtype == dtype, "aclGetDataType");
    CHECK(aclGetFormat(t, &got_format) == ACLNN_SUCCESS && (int)got_format == format, "aclGetFormat");
    if (s->n_tensors < MAX_HANDLES) {
        s->tensor_live[s->n_tensors] = 1;
        s->tensors[s->n_tensors++] = t;
    }
}

/* Destroys a tensor or an int array, live or already destroyed (refused: the runtime records its
 * handles and never dereferences one it does not hold), or NULL (a no-op). */
static void cmd_destroy(fz_in *in, session *s)
{
    const uint8_t w = fz_u8(in);
    const int arrays = w & 1;
    void **handles = arrays ? (void **)s->arrays : (void **)s->tensors;
    int *live = arrays ? s->array_live : s->tensor_live;
    const int n = arrays ? s->n_arrays : s->n_tensors;
    if (w & 2 || n == 0) {
        const aclnnStatus st = arrays ? aclDestroyIntArray(NULL) : aclDestroyTensor(NULL);
        CHECK(st == ACLNN_SUCCESS, "destroying NULL returned %d", (int)st);
        return;
    }
    const int i = (int)fz_range(in, 0, n - 1);
    /* a destroyed handle's address may belong to a newer live one */
    int alive = live[i];
    for (int j = 0; j < n && !alive; j++) {
        alive = live[j] && handles[j] == handles[i];
    }
    const aclnnStatus st = arrays ? aclDestroyIntArray(handles[i]) : aclDestroyTensor(handles[i]);
    CHECK(st == (alive ? ACLNN_SUCCESS : ACLNN_ERR_PARAM_INVALID), "destroying a %s %s returned %d",
          alive ? "live" : "destroyed", arrays ? "int array" : "tensor", (int)st);
    for (int j = 0; j < n; j++) {
        live[j] &= handles[j] != handles[i];
    }
    if (!alive) {
        uint64_t size;
        CHECK(arrays ? aclGetIntArraySize(handles[i], &size) == ACLNN_ERR_PARAM_INVALID
                     : aclGetViewOffset(handles[i], (int64_t *)&size) == ACLNN_ERR_PARAM_INVALID,
              "a getter accepted a destroyed handle");
    }
}

static void cmd_int_array(fz_in *in, session *s)
{
    int64_t values[8];
    const uint64_t n = (uint64_t)fz_range(in, 0, 8);
    for (uint64_t i = 0; i < n; i++) {
        values[i] = (int64_t)fz_u32(in) - (1 << 30);
    }
    aclIntArray *a = aclCreateIntArray(n ? values : NULL, n);
    uint64_t size = 0;
    if (!CHECK(a != NULL && aclGetIntArraySize(a, &size) == ACLNN_SUCCESS && size == n, "aclCreateIntArray(%llu)",
               (unsigned long long)n)) {
        return;
    }
    if (s->n_arrays < MAX_HANDLES) {
        s->array_live[s->n_arrays] = 1;
        s->arrays[s->n_arrays++] = a;
    }
}

/* ---- the operators ---- */

enum { FE_NONE = -1, FE_DESTROYED = 0, FE_FREED_BEFORE, FE_FREED_BETWEEN, FE_FORMAT, FE_DTYPE, FE_RUN_TWICE,
       FE_OTHER_OP, FE_EXEC_DESTROYED, FE_WS_CALLER, FE_WS_SHORT, FE_STREAM, FE_KINDS };

typedef struct mirror {
    void *dev[INST_MAX_BUFS];       /* each buffer's copy in aclrtMalloc memory */
    aclTensor *t[INST_MAX_BUFS];    /* and its description */
    int freed[INST_MAX_BUFS];
} mirror;

static void mirror_make(const inst *oi, mirror *m, int defect, int victim)
{
    memset(m, 0, sizeof *m);
    for (int i = 0; i < oi->nbuf; i++) {
        const tbuf *b = &oi->buf[i];
        if (!oi->present[i]) {
            continue;
        }
        CHECK(aclrtMalloc(&m->dev[i], b->bytes, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "aclrtMalloc(%zu)",
              b->bytes);
        CHECK(aclrtMemcpy(m->dev[i], b->bytes, b->base, b->bytes, ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS,
              "aclrtMemcpy host to device");
        const int64_t storage = (int64_t)(b->bytes / th_dtype_size(b->dtype));
        const aclDataType dt = defect == FE_DTYPE && i == victim ? ACL_DOUBLE : fz_acl_dtype(b->dtype);
        const aclFormat fmt = defect == FE_FORMAT && i == victim ? ACL_FORMAT_FRACTAL_NZ : ACL_FORMAT_ND;
        m->t[i] = aclCreateTensor(b->shape, (uint64_t)b->ndim, dt, b->null_strides ? NULL : b->strides, b->offset, fmt,
                                  &storage, 1, m->dev[i]);
        CHECK(m->t[i] != NULL, "aclCreateTensor refused a view inside its storage: %s",
              recent_message());
    }
}

/* Every output's memory as it was before any call (the instance's snapshots). */
static int outputs_unchanged(const inst *oi, const mirror *m)
{
    for (int i = oi->first_output; i < oi->nbuf; i++) {
        if (oi->present[i] && !m->freed[i] && memcmp(m->dev[i], oi->buf[i].snapshot, oi->buf[i].bytes) != 0) {
            return 0;
        }
    }
    return 1;
}

static aclnnStatus acl_phase1(int backward, const inst *oi, const mirror *m, char *layout, uint64_t *ws,
                              aclOpExecutor **ex)
{
    if (backward) {
        return aclnnLightningIndexerGradGetWorkspaceSize(
            m->t[RB_Q], m->t[RB_K], m->t[RB_DY], m->t[RB_IDX], m->t[RB_W], m->t[RB_SQ], m->t[RB_SK], oi->head_num,
            layout, oi->sparse_mode, oi->pre_tokens, oi->next_tokens, oi->deterministic, m->t[RB_DQ], m->t[RB_DK],
            m->t[RB_DW], ws, ex);
    }
    return aclnnLightningIndexerGetWorkspaceSize(m->t[FW_Q], m->t[FW_K], m->t[FW_W], m->t[FW_SQ], m->t[FW_SK], NULL,
                                                 layout, layout, oi->sparse_count, oi->sparse_mode, oi->pre_tokens,
                                                 oi->next_tokens, oi->present[FW_VAL], m->t[FW_IDX], m->t[FW_VAL], ws,
                                                 ex);
}

static aclnnStatus acl_phase2(int backward, void *ws, uint64_t size, aclOpExecutor *ex, aclrtStream stream)
{
    return backward ? aclnnLightningIndexerGrad(ws, size, ex, stream) : aclnnLightningIndexer(ws, size, ex, stream);
}

/* Operator calls over the process (LIG_FUZZ_STATS=1 prints them at exit). */
static int64_t g_calls, g_matched, g_failed_alike, g_refused_defect;

static void print_stats(void)
{
    fprintf(stderr,
            "lig fuzz: %lld aclnn operator calls: %lld matched lig's output bytes, %lld failed as lig did, %lld "
            "refused a front-end defect\n",
            (long long)g_calls, (long long)g_matched, (long long)g_failed_alike, (long long)g_refused_defect);
}

static void operator_call(fz_in *in, char *label, size_t label_size)
{
    static int registered;
    if (!registered) {
        registered = 1;
        if (fz_env_flag("LIG_FUZZ_STATS")) {
            atexit(print_stats);
        }
    }
    g_calls++;
    const int which = fz_u8(in) % 4; /* 0 forward, 1 backward, 2 the KL loss, 3 the quantized forward */
    if (which >= 2) {
        const int outcome = which == 2 ? fz_aclnn_kl_loss(in, label, label_size) : fz_aclnn_quant(in, label, label_size);
        g_matched += outcome == FZ_ACL_MATCHED;
        g_failed_alike += outcome == FZ_ACL_FAILED_ALIKE;
        g_refused_defect += outcome == FZ_ACL_REFUSED_DEFECT;
        return;
    }
    const int backward = which;
    const uint8_t d = fz_u8(in);
    const int defect = d < 128 ? FE_NONE : d % FE_KINDS;
    fz_views vs;
    fz_decode_views(in, &vs, backward ? 8 : 5);
    tcase tc;
    fz_decode_tcase(in, &tc, !backward);
    inst oi;
    if (backward) {
        fz_decode_indices(in, &tc, fz_u8(in) < 32);
        run_setup(&tc, &oi);
    } else {
        fwd_setup(&tc, fz_u8(in) & 1, tc.dtype, &oi);
    }
    tbuf_set_stride_source(NULL, NULL);
    /* the victim of a defect: one tensor of the call */
    int slots[INST_MAX_BUFS], n_slots = 0;
    for (int i = 0; i < oi.nbuf; i++) {
        if (oi.present[i]) {
            slots[n_slots++] = i;
        }
    }
    const int victim = slots[fz_range(in, 0, n_slots - 1)];
    char desc[512];
    tc_describe(&tc, desc, sizeof desc);
    snprintf(label, label_size, "aclnn %s [%s] front-end defect %d on buffer %d", backward ? "backward" : "forward",
             desc, defect, victim);
    const int refused_view = fz_creation_failed(&oi); /* a negative stride: lig cannot describe it */
    mirror m;
    mirror_make(&oi, &m, defect, victim);

    /* lig's own call on the instance's memory */
    lig_status l1 = LIG_ERR_PARAM_INVALID, l2 = LIG_SUCCESS;
    if (!refused_view) {
        l1 = inst_phase1(&oi);
        if (l1 == LIG_SUCCESS) {
            l2 = inst_phase2(&oi, 0);
        }
    }
    /* a view without elements needs no memory: freeing it is no defect */
    const int memory_defect = defect == FE_FREED_BEFORE || defect == FE_FREED_BETWEEN;
    const int fe_must_fail = defect != FE_NONE && defect != FE_RUN_TWICE && defect != FE_EXEC_DESTROYED &&
                             defect != FE_OTHER_OP && defect != FE_WS_SHORT && defect != FE_WS_CALLER &&
                             !(memory_defect && tbuf_numel(&oi.buf[victim]) == 0);
    if (defect == FE_DESTROYED) {
        CHECK(aclDestroyTensor(m.t[victim]) == ACLNN_SUCCESS, "aclDestroyTensor");
    }
    if (defect == FE_FREED_BEFORE) {
        CHECK(aclrtFree(m.dev[victim]) == ACL_SUCCESS, "aclrtFree");
        m.freed[victim] = 1;
    }
    char layout[8];
    snprintf(layout, sizeof layout, "%s", oi.layout);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const aclnnStatus a1 = acl_phase1(backward, &oi, &m, layout, &ws, &ex);
    aclnnStatus a2 = ACLNN_SUCCESS;
    int phase2_defect = 0;
    if (a1 == ACLNN_SUCCESS) {
        void *wmem = NULL;
        if (ws > 0) {
            CHECK(aclrtMalloc(&wmem, (size_t)ws, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "workspace");
        }
        void *run_ws = wmem;
        uint64_t run_size = ws;
        aclrtStream stream = NULL;
        int dummy;
        if (defect == FE_FREED_BETWEEN) {
            CHECK(aclrtFree(m.dev[victim]) == ACL_SUCCESS, "aclrtFree");
            m.freed[victim] = 1;
        } else if (defect == FE_WS_CALLER && ws > 0) {
            run_ws = &dummy; /* the program's memory, not aclrtMalloc's */
            phase2_defect = 1;
        } else if (defect == FE_WS_SHORT && ws > 0) {
            run_size = ws - 1;
            phase2_defect = 1;
        } else if (defect == FE_STREAM) {
            stream = &dummy;
        } else if (defect == FE_EXEC_DESTROYED) {
            CHECK(aclDestroyAclOpExecutor(ex) == ACLNN_SUCCESS, "aclDestroyAclOpExecutor");
            phase2_defect = 1;
        } else if (defect == FE_OTHER_OP) {
            phase2_defect = 1;
        }
        a2 = defect == FE_OTHER_OP ? acl_phase2(!backward, run_ws, run_size, ex, stream)
                                   : acl_phase2(backward, run_ws, run_size, ex, stream);
        if (defect == FE_RUN_TWICE && a2 == ACLNN_SUCCESS) {
            /* the executor was consumed: a second run is refused and writes nothing */
            unsigned char *after[INST_MAX_BUFS] = {0};
            for (int i = oi.first_output; i < oi.nbuf; i++) {
                if (oi.present[i]) {
                    after[i] = th_xmalloc(oi.buf[i].bytes);
                    memcpy(after[i], m.dev[i], oi.buf[i].bytes);
                }
            }
            CHECK(acl_phase2(backward, wmem, ws, ex, NULL) == ACLNN_ERR_PARAM_INVALID, "%s: a consumed executor ran",
                  label);
            for (int i = oi.first_output; i < oi.nbuf; i++) {
                if (after[i]) {
                    CHECK(memcmp(after[i], m.dev[i], oi.buf[i].bytes) == 0, "%s: a refused second run wrote", label);
                    free(after[i]);
                }
            }
        }
        if (wmem) {
            aclrtFree(wmem);
        }
    }
    if (a1 == ACLNN_SUCCESS && a2 == ACLNN_SUCCESS && fz_env_flag("LIG_FUZZ_PERTURB")) {
        for (int i = oi.first_output; i < oi.nbuf; i++) {
            if (oi.present[i] && !m.freed[i] && tbuf_numel(&oi.buf[i]) > 0) {
                ((unsigned char *)m.dev[i])[tbuf_elem_offset(&oi.buf[i], 0) * (int64_t)th_dtype_size(oi.buf[i].dtype)] ^= 1;
                break;
            }
        }
    }
    const int failed = a1 != ACLNN_SUCCESS || a2 != ACLNN_SUCCESS;
    g_matched += !failed;
    g_refused_defect += failed && (refused_view || defect != FE_NONE);
    g_failed_alike += failed && !refused_view && defect == FE_NONE;
    const int must_fail = refused_view || fe_must_fail;
    fz_acl_judge(label, a1, a2, l1, l2, must_fail, phase2_defect, !failed || outputs_unchanged(&oi, &m));
    if (!failed && !must_fail) {
        for (int i = oi.first_output; i < oi.nbuf; i++) {
            CHECK(!oi.present[i] || m.freed[i] || memcmp(m.dev[i], oi.buf[i].base, oi.buf[i].bytes) == 0,
                  "%s: output buffer %d differs from lig's", label, i);
        }
    }
    inst_teardown(&oi);
    tc_free(&tc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in;
    const int before = fz_begin(&in, data, size);
    char label[1024] = "aclnn runtime commands";
    if (!CHECK(aclInit(NULL) == ACL_SUCCESS, "aclInit") ||
        !CHECK(aclrtSetDevice(0) == ACL_SUCCESS, "aclrtSetDevice(0)")) {
        fz_verdict(before, label);
    }
    session *s = th_xcalloc(1, sizeof *s);
    const int n = (int)fz_range(&in, 0, 8);
    for (int c = 0; c < n; c++) {
        switch (fz_u8(&in) % 6) {
        case 0: cmd_malloc(&in, s); break;
        case 1: cmd_free(&in, s); break;
        case 2: cmd_memcpy(&in, s, 0); break;
        case 3: cmd_memcpy(&in, s, 1); break;
        case 4: cmd_tensor(&in, s); break;
        default: fz_u8(&in) & 1 ? cmd_int_array(&in, s) : cmd_destroy(&in, s); break;
        }
    }
    if (fz_u8(&in) & 1) {
        char env[96];
        fz_decode_env(&in, env, sizeof env);
        operator_call(&in, label, sizeof label);
        fz_reset_env();
    }
    /* aclFinalize releases what the session left alive: allocations, tensors, arrays, executors */
    CHECK(aclFinalize() == ACL_SUCCESS, "aclFinalize");
    free(s);
    fz_verdict(before, label);
    return 0;
}
