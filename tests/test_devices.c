/* Device tensors (docs/contract.md, "Device tensors and CUDA"): lig_create_tensor_on, one device
 * per call (host and CUDA tensors never mix, nor two CUDA ordinals), sequence lengths always on
 * the host, and what a build without the CUDA backend answers. Phase 1 never reads the data of
 * the tensors checked here, so host buffers stand in for device memory. */
#include <string.h>

#include "framework.h"
#include "lig.h"

enum { DV_Q, DV_K, DV_DY, DV_IDX, DV_W, DV_DQ, DV_DK, DV_DW, DV_AQ, DV_AK, DV_COUNT };
static const char *const dv_names[DV_COUNT] = {"query", "key", "dy", "sparse_indices", "weights",
                                                "d_query", "d_key", "d_weights",
                                                "actual_seq_lengths_query", "actual_seq_lengths_key"};

typedef struct dv_case {
    float q[4 * 2 * 8], k[4 * 8], dy[4 * 2], w[4 * 2], dq[4 * 2 * 8], dk[4 * 8], dw[4 * 2];
    int32_t idx[4 * 2], len[1];
    lig_tensor *t[DV_COUNT];
} dv_case;

/* A BSND backward, B 1, S 4, N1 2, N2 1, D 8, K 2; tensor i on devices[i] / ordinals[i]. */
static void dv_make(dv_case *c, const lig_device *devices, const int *ordinals) {
    memset(c, 0, sizeof *c);
    c->len[0] = 4;
    const int64_t q_shape[4] = {1, 4, 2, 8}, k_shape[4] = {1, 4, 1, 8}, slot_shape[3] = {1, 4, 2},
                  w_shape[3] = {1, 4, 2}, len_shape[1] = {1};
    void *data[DV_COUNT] = {c->q, c->k, c->dy, c->idx, c->w, c->dq, c->dk, c->dw, c->len, c->len};
    const lig_dtype dt[DV_COUNT] = {LIG_FLOAT32, LIG_FLOAT32, LIG_FLOAT32, LIG_INT32, LIG_FLOAT32,
                                    LIG_FLOAT32, LIG_FLOAT32, LIG_FLOAT32, LIG_INT32, LIG_INT32};
    const int64_t nd[DV_COUNT] = {4, 4, 3, 3, 3, 4, 4, 3, 1, 1};
    const int64_t *shape[DV_COUNT] = {q_shape, k_shape, slot_shape, slot_shape, w_shape,
                                      q_shape, k_shape, w_shape, len_shape, len_shape};
    for (int i = 0; i < DV_COUNT; i++) {
        c->t[i] = lig_create_tensor_on(data[i], dt[i], nd[i], shape[i], NULL, devices[i], ordinals[i]);
        REQUIRE(c->t[i] != NULL, "lig_create_tensor_on(%s) failed: %s", dv_names[i], lig_get_last_error());
    }
}

static void dv_free(dv_case *c) {
    for (int i = 0; i < DV_COUNT; i++) lig_destroy_tensor(c->t[i]);
}

static lig_status dv_phase1(dv_case *c, lig_executor **e) {
    uint64_t ws = 0;
    *e = NULL;
    return lig_indexer_grad_get_workspace_size(c->t[DV_Q], c->t[DV_K], c->t[DV_DY], c->t[DV_IDX], c->t[DV_W],
                                               c->t[DV_AQ], c->t[DV_AK], 0, "BSND", 3, INT64_MAX, INT64_MAX, true,
                                               c->t[DV_DQ], c->t[DV_DK], c->t[DV_DW], &ws, e);
}

/* Phase 1 with every tensor on (device, ordinal) but tensor `odd` on (odd_device, odd_ordinal)
 * must fail with LIG_ERR_PARAM_INVALID and a message holding every string of `want`. */
static void dv_expect_refused(int odd, lig_device device, int ordinal, lig_device odd_device, int odd_ordinal,
                              const char *const *want, int n_want) {
    lig_device devices[DV_COUNT];
    int ordinals[DV_COUNT];
    for (int i = 0; i < DV_COUNT; i++) {
        devices[i] = i >= DV_AQ ? LIG_DEVICE_HOST : device;
        ordinals[i] = i >= DV_AQ ? 0 : ordinal;
    }
    devices[odd] = odd_device;
    ordinals[odd] = odd_ordinal;
    dv_case c;
    dv_make(&c, devices, ordinals);
    lig_executor *e;
    const lig_status st = dv_phase1(&c, &e);
    const char *m = lig_get_last_error();
    if (CHECK(st == LIG_ERR_PARAM_INVALID, "%s on device %d:%d among %d:%d: expected LIG_ERR_PARAM_INVALID, got %d",
              dv_names[odd], (int)odd_device, odd_ordinal, (int)device, ordinal, (int)st)) {
        CHECK(e == NULL, "a refused phase 1 returned an executor");
        for (int i = 0; i < n_want; i++)
            CHECK(strstr(m, want[i]) != NULL, "message \"%s\" lacks \"%s\"", m, want[i]);
    } else {
        lig_destroy_executor(e);
    }
    dv_free(&c);
}

LIG_TEST(devices_create_tensor_on) {
    float x[4] = {0};
    const int64_t shape[1] = {4};
    struct {
        lig_device device;
        int ordinal;
        const char *want;
    } bad[] = {{(lig_device)4, 0, "device: expected a device kind lig.h lists (LIG_DEVICE_HOST = 0 .. LIG_DEVICE_ASCEND = 3), got 4"},
               {(lig_device)-1, 0, "got -1"},
               {LIG_DEVICE_HOST, 1, "device_index: expected 0 for a host tensor, got 1"},
               {LIG_DEVICE_CUDA, -1, "device_index: expected a device ordinal >= 0, got -1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lig_tensor *t = lig_create_tensor_on(x, LIG_FLOAT32, 1, shape, NULL, bad[i].device, bad[i].ordinal);
        if (!CHECK(t == NULL, "lig_create_tensor_on accepted device %d index %d", (int)bad[i].device,
                   bad[i].ordinal)) {
            lig_destroy_tensor(t);
            continue;
        }
        CHECK(strstr(lig_get_last_error(), bad[i].want) != NULL, "message \"%s\" lacks \"%s\"", lig_get_last_error(),
              bad[i].want);
    }
    lig_tensor *t = lig_create_tensor_on(x, LIG_FLOAT32, 1, shape, NULL, LIG_DEVICE_CUDA, 3);
    CHECK(t != NULL, "lig_create_tensor_on refused a CUDA tensor on device 3: %s", lig_get_last_error());
    lig_destroy_tensor(t);
    t = lig_create_tensor_on(NULL, LIG_FLOAT32, 1, shape, NULL, LIG_DEVICE_CUDA, 0);
    CHECK(t == NULL, "lig_create_tensor_on accepted NULL data with elements on a CUDA device");
    lig_destroy_tensor(t);
}

LIG_TEST(devices_mixing_refused) {
    /* a CUDA tensor among host tensors, and a host tensor among CUDA tensors, at every position */
    for (int odd = 0; odd < DV_AQ; odd++) {
        const int first = odd == 0 ? 1 : 0; /* the tensor the odd one is compared with */
        const char *want_host[] = {dv_names[odd], dv_names[first], "host device 0", "CUDA device 0"};
        dv_expect_refused(odd, LIG_DEVICE_HOST, 0, LIG_DEVICE_CUDA, 0, want_host, 4);
        dv_expect_refused(odd, LIG_DEVICE_CUDA, 0, LIG_DEVICE_HOST, 0, want_host, 4);
        const char *want_ordinal[] = {dv_names[odd], dv_names[first], "CUDA device 1", "CUDA device 0"};
        dv_expect_refused(odd, LIG_DEVICE_CUDA, 1, LIG_DEVICE_CUDA, 0, want_ordinal, 4);
    }
}

LIG_TEST(devices_lengths_on_host) {
    /* sequence lengths are read by phase 1: a device tensor there is refused, whatever the others */
    for (int odd = DV_AQ; odd < DV_COUNT; odd++) {
        const char *want[] = {dv_names[odd], "expected a host tensor (phase 1 reads the sequence lengths)",
                              "CUDA device 0"};
        dv_expect_refused(odd, LIG_DEVICE_HOST, 0, LIG_DEVICE_CUDA, 0, want, 3);
    }
}

LIG_TEST(devices_cuda_build) {
    lig_device devices[DV_COUNT];
    int ordinals[DV_COUNT] = {0};
    for (int i = 0; i < DV_COUNT; i++) devices[i] = i >= DV_AQ ? LIG_DEVICE_HOST : LIG_DEVICE_CUDA;
    dv_case c;
    dv_make(&c, devices, ordinals);
    lig_executor *e;
    const lig_status st = dv_phase1(&c, &e);
#ifdef LIG_TEST_HAVE_CUDA
    /* phase 1 of the CUDA backend reads no tensor data and touches no device */
    if (CHECK(st == LIG_SUCCESS, "CUDA phase 1 failed: %s", lig_get_last_error()))
        CHECK(strcmp(lig_executor_kernel_set(e), "cuda-simt") == 0, "CUDA plan runs \"%s\", expected cuda-simt (fp32)",
              lig_executor_kernel_set(e));
    lig_destroy_executor(e);
#else
    const char *want = "this build of lig has no CUDA backend (configure with -DLIG_CUDA=ON)";
    CHECK(st == LIG_ERR_PARAM_INVALID, "CUDA tensors in a build without CUDA: expected LIG_ERR_PARAM_INVALID, got %d",
          (int)st);
    CHECK(strstr(lig_get_last_error(), want) != NULL && strstr(lig_get_last_error(), "query") != NULL,
          "message \"%s\" lacks \"query\" and \"%s\"", lig_get_last_error(), want);
    char ws[128];
    CHECK(lig_workspace_status(LIG_DEVICE_CUDA, ws, NULL) == LIG_ERR_PARAM_INVALID,
          "lig_workspace_status(CUDA) in a build without CUDA must be LIG_ERR_PARAM_INVALID");
    CHECK(strstr(lig_get_last_error(), want) != NULL, "message \"%s\" lacks \"%s\"", lig_get_last_error(), want);
#endif
#ifdef LIG_TEST_HAVE_CUDA
    CHECK(lig_workspace_status(LIG_DEVICE_CUDA, NULL, NULL) == LIG_ERR_PARAM_NULLPTR,
          "lig_workspace_status(CUDA, NULL) must be LIG_ERR_PARAM_NULLPTR");
#endif
    dv_free(&c);
}

/* The seam's device-neutral entries: kinds without a backend in this build are refused by name in
 * phase 1 and by lig_workspace_status; the host has no device-side verdict to read. */
LIG_TEST(devices_seam) {
    const struct {
        lig_device device;
        const char *want;
    } absent[] = {{LIG_DEVICE_ROCM, "got one in ROCm memory: this build of lig has no ROCm backend"},
                  {LIG_DEVICE_ASCEND, "got one in Ascend memory: this build of lig has no Ascend backend"}};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
        const char *want[] = {"query", absent[i].want};
        lig_device devices[DV_COUNT];
        int ordinals[DV_COUNT] = {0};
        for (int j = 0; j < DV_COUNT; j++) devices[j] = j >= DV_AQ ? LIG_DEVICE_HOST : absent[i].device;
        dv_case c;
        dv_make(&c, devices, ordinals);
        lig_executor *e;
        const lig_status st = dv_phase1(&c, &e);
        if (CHECK(st == LIG_ERR_PARAM_INVALID, "device %d: expected LIG_ERR_PARAM_INVALID, got %d",
                  (int)absent[i].device, (int)st)) {
            CHECK(e == NULL, "a refused phase 1 returned an executor");
            for (int j = 0; j < 2; j++)
                CHECK(strstr(lig_get_last_error(), want[j]) != NULL, "message \"%s\" lacks \"%s\"",
                      lig_get_last_error(), want[j]);
        } else {
            lig_destroy_executor(e);
        }
        dv_free(&c);
        char ws[128];
        CHECK(lig_workspace_status(absent[i].device, ws, NULL) == LIG_ERR_PARAM_INVALID,
              "lig_workspace_status(%d) without its backend must be LIG_ERR_PARAM_INVALID", (int)absent[i].device);
        CHECK(strstr(lig_get_last_error(), "this build of lig has no") != NULL, "message \"%s\" lacks the reason",
              lig_get_last_error());
    }
    char copy[LIG_WORKSPACE_STATUS_BYTES] = {0};
    CHECK(lig_workspace_status_from_copy(LIG_DEVICE_HOST, NULL, copy) == LIG_SUCCESS,
          "lig_workspace_status_from_copy(host) must be LIG_SUCCESS: %s", lig_get_last_error());
    CHECK(lig_workspace_status_from_copy(LIG_DEVICE_ROCM, copy, copy) == LIG_ERR_PARAM_INVALID,
          "lig_workspace_status_from_copy(ROCm) without its backend must be LIG_ERR_PARAM_INVALID");
#ifdef LIG_TEST_HAVE_CUDA
    CHECK(lig_workspace_status_from_copy(LIG_DEVICE_CUDA, copy, NULL) == LIG_ERR_PARAM_NULLPTR,
          "lig_workspace_status_from_copy(CUDA, copy NULL) must be LIG_ERR_PARAM_NULLPTR");
    CHECK(lig_workspace_status_from_copy(LIG_DEVICE_CUDA, copy + 1, copy) == LIG_ERR_PARAM_INVALID &&
              strstr(lig_get_last_error(), "without a status") != NULL,
          "a copy without a status: \"%s\"", lig_get_last_error());
#endif
    CHECK(lig_workspace_status(LIG_DEVICE_HOST, NULL, NULL) == LIG_SUCCESS,
          "lig_workspace_status(host) must be LIG_SUCCESS: %s", lig_get_last_error());
    CHECK(lig_workspace_status((lig_device)9, NULL, NULL) == LIG_ERR_PARAM_INVALID,
          "lig_workspace_status(9) must be LIG_ERR_PARAM_INVALID");
    CHECK(strstr(lig_get_last_error(), "device: expected a device kind lig.h lists (LIG_DEVICE_*), got 9") != NULL,
          "message \"%s\" lacks the device", lig_get_last_error());
}
