/* API basics: version, status strings, tensor descriptors, the per-thread last error, executor
 * lifetime, thread settings, empty problems, and workspace handling. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backward_checks.h"
#include "case_generators.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "backward_runner.h"

LIG_TEST(api_version)
{
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", LIG_VERSION_MAJOR, LIG_VERSION_MINOR, LIG_VERSION_PATCH);
    const char *v = lig_version();
    REQUIRE(v != NULL, "lig_version() returned NULL");
    CHECK(strcmp(v, want) == 0, "lig_version() = \"%s\", macros say \"%s\"", v, want);
    CHECK(strcmp(v, LIG_VERSION_STRING) == 0, "lig_version() = \"%s\", LIG_VERSION_STRING = \"%s\"", v,
          LIG_VERSION_STRING);
}

/* The public shape formatter: what error messages print, cut short and terminated when small. */
LIG_TEST(api_format_shape)
{
    char buf[32];
    const int64_t shape[3] = {2, 0, 4096};
    CHECK(strcmp(lig_format_shape(buf, sizeof buf, 3, shape), "[2,0,4096]") == 0, "rank 3: %s", buf);
    CHECK(strcmp(lig_format_shape(buf, sizeof buf, 0, shape), "[]") == 0, "rank 0: %s", buf);
    const int64_t big[2] = {INT64_MIN, INT64_MAX};
    lig_format_shape(buf, sizeof buf, 2, big);
    CHECK(strlen(buf) == sizeof buf - 1 && strncmp(buf, "[-9223372036854775808,922", 25) == 0,
          "cut at the capacity: %s", buf);
    char tiny[4];
    memset(tiny, 'x', sizeof tiny);
    lig_format_shape(tiny, sizeof tiny, 3, shape);
    CHECK(tiny[3] == '\0' && strncmp(tiny, "[2,", 3) == 0, "capacity 4 holds \"[2,\": %.4s", tiny);
}

LIG_TEST(api_status_strings)
{
    const lig_status all[] = {LIG_SUCCESS, LIG_ERR_PARAM_NULLPTR, LIG_ERR_PARAM_INVALID, LIG_ERR_RUNTIME,
                              LIG_ERR_INNER};
    const size_t n = sizeof all / sizeof all[0];
    CHECK(LIG_ERR_PARAM_NULLPTR == 161001 && LIG_ERR_PARAM_INVALID == 161002 && LIG_ERR_RUNTIME == 361001 &&
              LIG_ERR_INNER == 561000,
          "status codes must be aclnn's values");
    for (size_t i = 0; i < n; i++) {
        const char *s = lig_status_string(all[i]);
        REQUIRE(s != NULL && s[0] != '\0', "lig_status_string(%d) is empty", (int)all[i]);
        for (size_t j = 0; j < i; j++) {
            CHECK(strcmp(s, lig_status_string(all[j])) != 0, "statuses %d and %d share the string \"%s\"",
                  (int)all[i], (int)all[j], s);
        }
    }
    const char *unknown = lig_status_string((lig_status)12345);
    CHECK(unknown != NULL && unknown[0] != '\0', "an unknown status must still give a string");
}

static void expect_rejected(const char *what, void *data, lig_dtype dtype, int64_t ndim, const int64_t *shape,
                            const int64_t *strides)
{
    lig_tensor *t = lig_create_tensor(data, dtype, ndim, shape, strides);
    if (!CHECK(t == NULL, "lig_create_tensor accepted %s", what)) {
        lig_destroy_tensor(t);
        return;
    }
    const char *m = lig_get_last_error();
    CHECK(m != NULL && m[0] != '\0', "no error message after rejecting %s", what);
}

static void expect_accepted(const char *what, void *data, lig_dtype dtype, int64_t ndim, const int64_t *shape,
                            const int64_t *strides)
{
    lig_tensor *t = lig_create_tensor(data, dtype, ndim, shape, strides);
    CHECK(t != NULL, "lig_create_tensor rejected %s: %s", what, lig_get_last_error());
    lig_destroy_tensor(t);
}

LIG_TEST(api_create_tensor)
{
    float data[64];
    memset(data, 0, sizeof data);
    const int64_t shape3[3] = {2, 3, 4};
    const int64_t neg_dim[3] = {2, -1, 4};
    const int64_t zero_dim[3] = {2, 0, 4};
    const int64_t neg_stride[3] = {12, -4, 1};
    const int64_t zero_stride[3] = {0, 4, 1};
    const int64_t shape9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int64_t shape8[8] = {1, 1, 1, 1, 1, 1, 1, 2};

    expect_rejected("a negative dimension", data, LIG_FLOAT32, 3, neg_dim, NULL);
    expect_rejected("ndim > LIG_MAX_DIMS", data, LIG_FLOAT32, LIG_MAX_DIMS + 1, shape9, NULL);
    expect_rejected("a negative ndim", data, LIG_FLOAT32, -1, shape3, NULL);
    expect_rejected("a negative stride", data, LIG_FLOAT32, 3, shape3, neg_stride);
    expect_rejected("NULL data with elements", NULL, LIG_FLOAT32, 3, shape3, NULL);
    expect_rejected("an unknown dtype (9)", data, (lig_dtype)9, 3, shape3, NULL);
    expect_rejected("an unknown dtype (-1)", data, (lig_dtype)-1, 3, shape3, NULL);
    expect_rejected("a NULL shape with ndim 3", data, LIG_FLOAT32, 3, NULL, NULL);

    expect_accepted("a plain 3-D tensor", data, LIG_FLOAT32, 3, shape3, NULL);
    expect_accepted("NULL data without elements", NULL, LIG_BFLOAT16, 3, zero_dim, NULL);
    expect_accepted("a stride-0 (broadcast) dimension", data, LIG_FLOAT32, 3, shape3, zero_stride);
    expect_accepted("LIG_MAX_DIMS dimensions", data, LIG_INT64, LIG_MAX_DIMS, shape8, NULL);
    expect_accepted("a 0-D tensor", data, LIG_INT32, 0, NULL, NULL);
    lig_destroy_tensor(NULL); /* must be a no-op */
}

static void *thread_last_error(void *arg)
{
    const char **out = arg;
    *out = lig_get_last_error();
    return NULL;
}

LIG_TEST(api_last_error_is_per_thread)
{
    const int64_t neg_dim[1] = {-3};
    CHECK(lig_create_tensor(NULL, LIG_FLOAT32, 1, neg_dim, NULL) == NULL, "negative dim accepted");
    const char *mine = lig_get_last_error();
    REQUIRE(mine != NULL && mine[0] != '\0', "no message after a failure");
    const char *theirs = NULL;
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, thread_last_error, &theirs) == 0, "pthread_create failed");
    pthread_join(th, NULL);
    CHECK(theirs != NULL && theirs[0] == '\0', "a fresh thread must see \"\", got \"%s\"", theirs ? theirs : "(null)");
}

/* A small valid case shared by the API tests. */
static void small_case(tcase *tc, th_rng *r, lig_dtype dtype)
{
    gen_opts o;
    gen_opts_default(&o);
    tc_init(tc);
    tc->dtype = tc->dw_dtype = dtype;
    tc_set_dims(tc, 2, 4, 2, 9, 4);
    tc->p.S1 = 5;
    tc->p.S2 = 7;
    tc->has_seq_q = tc->has_seq_k = 1;
    gen_bsnd(r, tc);
    gen_data(r, tc, &o);
}

LIG_TEST(api_destroy_executor)
{
    lig_status st = lig_destroy_executor(NULL);
    CHECK(st == LIG_SUCCESS || st == LIG_ERR_PARAM_NULLPTR, "lig_destroy_executor(NULL) returned %d", (int)st);
    th_rng r = th_rng_make(3);
    tcase tc;
    small_case(&tc, &r, LIG_BFLOAT16);
    run_inst ri;
    run_setup(&tc, &ri);
    st = inst_phase1(&ri);
    if (CHECK(st == LIG_SUCCESS, "phase 1 failed: %s", ri.message)) {
        CHECK(ri.executor != NULL, "phase 1 succeeded without an executor");
        /* Never run: destroying it must free everything (checked by LeakSanitizer in ASan builds). */
        CHECK(lig_destroy_executor(ri.executor) == LIG_SUCCESS, "destroying a never-run executor failed");
        ri.executor = NULL;
        CHECK(inst_all_unchanged(&ri), "destroying an executor wrote to a tensor");
    }
    inst_teardown(&ri);
    tc_free(&tc);
}

LIG_TEST(api_num_threads)
{
    lig_set_num_threads(3);
    CHECK(lig_get_num_threads() == 3, "after set(3), get() = %d", lig_get_num_threads());
    lig_set_num_threads(1);
    CHECK(lig_get_num_threads() == 1, "after set(1), get() = %d", lig_get_num_threads());
    lig_set_num_threads(0);
    int n = lig_get_num_threads();
    CHECK(n >= 1, "default thread count %d", n);
    int64_t env = th_env_int("LIG_NUM_THREADS", 0);
    if (env > 0) {
        CHECK(n == (int)env, "LIG_NUM_THREADS=%" PRId64 " but the default is %d", env, n);
    }
}

/* Tensors without elements are also passed with NULL data, which the header allows. */
static void null_data_for_empty(run_inst *ri)
{
    for (int i = 0; i < RB_COUNT; i++) {
        tbuf *b = &ri->buf[i];
        if (!ri->present[i] || tbuf_numel(b) != 0) {
            continue;
        }
        ri->arg[i] = inst_adopt(ri, lig_create_tensor(NULL, b->dtype, b->ndim, b->shape,
                                                     b->null_strides ? NULL : b->strides));
    }
}

static void run_empty(tcase *tc, const char *what)
{
    for (int variant = 0; variant < 2; variant++) {
        run_inst ri;
        run_setup(tc, &ri);
        if (variant == 1) {
            null_data_for_empty(&ri);
        }
        lig_status st = inst_phase1(&ri);
        if (CHECK(st == LIG_SUCCESS, "%s: phase 1 failed (%d): %s", what, (int)st, ri.message)) {
            CHECK(ri.workspace_size == 0, "%s: empty problem asks for %" PRIu64 " workspace bytes", what,
                  ri.workspace_size);
            st = inst_phase2(&ri, 0);
            if (CHECK(st == LIG_SUCCESS, "%s: phase 2 failed (%d): %s", what, (int)st, ri.message)) {
                CHECK(inst_gaps_ok(&ri), "%s: wrote outside the outputs", what);
                int nonzero = 0;
                for (int o = RB_DQ; o <= RB_DW; o++) {
                    int64_t n = tbuf_numel(&ri.buf[o]);
                    for (int64_t i = 0; i < n; i++) {
                        double v = tbuf_read(&ri.buf[o], i);
                        nonzero += v != 0.0;
                    }
                }
                CHECK(nonzero == 0, "%s: %d output elements not zero-filled", what, nonzero);
            }
        }
        inst_teardown(&ri);
    }
}

LIG_TEST(api_empty_problems)
{
    th_rng r = th_rng_make(17);
    gen_opts o;
    gen_opts_default(&o);
    /* zero in each dimension in turn: K, B, S1, S2, N1, D (BSND), then B, T1, T2 (TND) */
    static const struct {
        const char *what;
        int64_t B, S1, S2, N1, N2, D, K;
        int tnd;
    } cases[] = {
        {"K = 0", 2, 3, 4, 2, 1, 5, 0, 0},    {"B = 0", 0, 3, 4, 2, 1, 5, 3, 0},
        {"S1 = 0", 2, 0, 4, 2, 1, 5, 3, 0},   {"S2 = 0", 2, 3, 0, 2, 1, 5, 3, 0},
        {"N1 = 0", 2, 3, 4, 0, 1, 5, 3, 0},   {"D = 0", 2, 3, 4, 4, 2, 0, 3, 0},
        {"TND B = 0", 0, 0, 0, 2, 1, 5, 3, 1}, {"TND T1 = 0", 2, 0, 0, 2, 1, 5, 3, 1},
        {"TND K = 0", 3, 0, 0, 2, 2, 5, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tcase tc;
        tc_init(&tc);
        tc_set_dims(&tc, cases[i].B, cases[i].N1, cases[i].N2, cases[i].D, cases[i].K);
        tc.p.S1 = cases[i].S1;
        tc.p.S2 = cases[i].S2;
        tc.dw_dtype = LIG_FLOAT32;
        if (cases[i].tnd) {
            /* "T1 = 0": every batch empty; otherwise lengths up to 3 and a row past the end */
            int64_t maxlen = cases[i].B > 0 && strstr(cases[i].what, "T1") ? 0 : 3;
            gen_tnd(&r, &tc, maxlen, maxlen, maxlen > 0 && cases[i].B > 0, 0);
        } else {
            gen_bsnd(&r, &tc);
        }
        gen_data(&r, &tc, &o);
        run_empty(&tc, cases[i].what);
        tc_free(&tc);
    }
}

/* A workspace larger than asked for, or at another malloc-like (16-byte aligned) address, gives
 * the same bytes; the same executor recipe can be re-planned and re-run. */
LIG_TEST(api_workspace_reuse_and_alignment)
{
    th_rng r = th_rng_make(23);
    tcase tc;
    small_case(&tc, &r, LIG_BFLOAT16);
    unsigned char *first[3] = {NULL, NULL, NULL};
    for (int variant = 0; variant < 3; variant++) {
        run_inst ri;
        run_setup(&tc, &ri);
        lig_status st = inst_phase1(&ri);
        if (!CHECK(st == LIG_SUCCESS, "phase 1 failed: %s", ri.message)) {
            inst_teardown(&ri);
            break;
        }
        size_t size = (size_t)ri.workspace_size;
        unsigned char *mem = th_xmalloc(size + 4096 + 16);
        memset(mem, 0x5A, size + 4096 + 16);
        void *ws = variant == 2 ? (void *)(mem + 16) : (void *)mem;
        uint64_t give = variant == 1 ? (uint64_t)size + 4096 : (uint64_t)size;
        st = lig_indexer_grad(ws, give, ri.executor, NULL);
        ri.executor = NULL;
        free(mem);
        if (CHECK(st == LIG_SUCCESS, "variant %d: phase 2 failed: %s", variant, lig_get_last_error())) {
            for (int o = 0; o < 3; o++) {
                const tbuf *b = &ri.buf[RB_DQ + o];
                if (variant == 0) {
                    first[o] = th_xmalloc(b->bytes);
                    memcpy(first[o], b->base, b->bytes);
                } else if (first[o] != NULL) {
                    CHECK(memcmp(first[o], b->base, b->bytes) == 0, "variant %d: output %d differs", variant, o);
                }
            }
        }
        inst_teardown(&ri);
    }
    for (int o = 0; o < 3; o++) {
        free(first[o]);
    }
    CHECK(check_case(&tc, "small bf16 case"), "small bf16 case against the reference");
    tc_free(&tc);
}
