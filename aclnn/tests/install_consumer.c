/* Built by cmake/check_install.sh against the installed front end (pkg-config lig-aclnn and
 * find_package(lig) + lig::aclnn): a CANN-style forward call in C, checked. */
#include <stdint.h>
#include <stdio.h>

#include <acl/acl.h>
#include <aclnnop/aclnn_lightning_indexer.h>

#define TRY(call)                                                                          \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        if (rc_ != 0) {                                                                    \
            fprintf(stderr, "%s failed: %d (%s)\n", #call, rc_, aclGetRecentErrMsg());     \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int main(void) {
    enum { S = 4, D = 8, K = 4 };
    float q[S * D], k[S * D], w[S];
    int32_t idx[S * K];
    for (int i = 0; i < S * D; i++) q[i] = 1.0f, k[i] = (float)(i / D + 1); /* key s scores s + 1 */
    for (int i = 0; i < S; i++) w[i] = 1.0f;
    const int64_t qs[4] = {1, S, 1, D}, ws[3] = {1, S, 1}, is[4] = {1, S, 1, K};
    void *dq, *dk, *dw, *di, *work = NULL;
    aclrtStream stream;
    TRY(aclInit(NULL));
    TRY(aclrtSetDevice(0));
    TRY(aclrtCreateStream(&stream));
    TRY(aclrtMalloc(&dq, sizeof q, ACL_MEM_MALLOC_HUGE_FIRST));
    TRY(aclrtMalloc(&dk, sizeof k, ACL_MEM_MALLOC_HUGE_FIRST));
    TRY(aclrtMalloc(&dw, sizeof w, ACL_MEM_MALLOC_HUGE_FIRST));
    TRY(aclrtMalloc(&di, sizeof idx, ACL_MEM_MALLOC_HUGE_FIRST));
    TRY(aclrtMemcpy(dq, sizeof q, q, sizeof q, ACL_MEMCPY_HOST_TO_DEVICE));
    TRY(aclrtMemcpy(dk, sizeof k, k, sizeof k, ACL_MEMCPY_HOST_TO_DEVICE));
    TRY(aclrtMemcpy(dw, sizeof w, w, sizeof w, ACL_MEMCPY_HOST_TO_DEVICE));
    aclTensor *tq = aclCreateTensor(qs, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, qs, 4, dq);
    aclTensor *tk = aclCreateTensor(qs, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, qs, 4, dk);
    aclTensor *tw = aclCreateTensor(ws, 3, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, ws, 3, dw);
    aclTensor *ti = aclCreateTensor(is, 4, ACL_INT32, NULL, 0, ACL_FORMAT_ND, is, 4, di);
    uint64_t size = 0;
    aclOpExecutor *e = NULL;
    char layout[] = "BSND";
    TRY(aclnnLightningIndexerGetWorkspaceSize(tq, tk, tw, NULL, NULL, NULL, layout, layout, K, 3, INT64_MAX, INT64_MAX,
                                              false, ti, NULL, &size, &e));
    if (size) TRY(aclrtMalloc(&work, size, ACL_MEM_MALLOC_HUGE_FIRST));
    TRY(aclnnLightningIndexer(work, size, e, stream));
    TRY(aclrtSynchronizeStream(stream));
    TRY(aclrtMemcpy(idx, sizeof idx, di, sizeof idx, ACL_MEMCPY_DEVICE_TO_HOST));
    /* the last row sees every key and ranks them by descending score: 3, 2, 1, 0 */
    for (int j = 0; j < K; j++)
        if (idx[(S - 1) * K + j] != K - 1 - j) {
            fprintf(stderr, "sparse indices of the last row: got %d at %d, expected %d\n", idx[(S - 1) * K + j], j,
                    K - 1 - j);
            return 1;
        }
    aclDestroyTensor(tq), aclDestroyTensor(tk), aclDestroyTensor(tw), aclDestroyTensor(ti);
    aclrtFree(dq), aclrtFree(dk), aclrtFree(dw), aclrtFree(di);
    if (work) aclrtFree(work);
    TRY(aclrtDestroyStream(stream));
    TRY(aclrtResetDevice(0));
    TRY(aclFinalize());
    printf("lig-aclnn install consumer: aclnnLightningIndexer ran and ranked the keys\n");
    return 0;
}
