/*
 * The knobs (src/core/tuning.h), white-box: how each environment variable is read (through a fake
 * environment, since the real one is read once per process), that a bad value is ignored with a
 * warning naming the variable, what was expected and what was received, that the process's
 * snapshot is what the environment says, and that a test's override reaches the library and is
 * undone.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/settings.h"
#include "core/tuning.h"
#include "framework.h"
#include "lig.h"
#include "testing/lig_testing.h"

/* The fake environment lig_tuning_parse reads: up to 8 NAME=value pairs. */
static struct {
    const char *name, *value;
} fake[8];
static int n_fake;

static const char *fake_lookup(const char *name) {
    for (int i = 0; i < n_fake; i++)
        if (strcmp(fake[i].name, name) == 0) return fake[i].value;
    return NULL;
}

static void fake_set(const char *name, const char *value) {
    fake[n_fake].name = name;
    fake[n_fake].value = value;
    n_fake++;
}

static int online(void) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > LIG_MAX_THREADS ? LIG_MAX_THREADS : (int)n;
}

static const char *real_lookup(const char *name) { return getenv(name); }

static bool same_isa(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

LIG_TEST(tuning_defaults_and_values) {
    char warnings[1024];
    lig_tuning t;

    /* nothing set, or every variable empty: the documented defaults */
    for (int empty = 0; empty < 2; empty++) {
        n_fake = 0;
        if (empty) {
            static const char *const names[] = {"LIG_NUM_THREADS", "LIG_MIN_FLOPS_PER_THREAD", "LIG_FWD_SPLIT_KEYS",
                                                "LIG_CUDA_CHUNK_BYTES", "LIG_ISA", "LIG_DISABLE_SIMD"};
            for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) fake_set(names[i], "");
        }
        const int ignored = lig_tuning_parse(&t, fake_lookup, warnings, sizeof warnings);
        CHECK(ignored == 0 && warnings[0] == '\0', "defaults (%s): %d ignored, warnings \"%s\"", empty ? "empty" : "unset",
              ignored, warnings);
        CHECK(t.default_threads == online(), "default threads %d, expected the %d online CPUs", t.default_threads, online());
        CHECK(t.min_flops_per_thread == 4e6, "default min flops per thread %g, expected 4e6", t.min_flops_per_thread);
        CHECK(t.fwd_split_keys == -1, "default split keys %lld, expected -1", (long long)t.fwd_split_keys);
        CHECK(t.grad_ring_chunks == 0, "default ring chunks %lld, expected 0", (long long)t.grad_ring_chunks);
        CHECK(t.cuda_chunk_bytes == (uint64_t)1 << 30, "default CUDA chunk bytes %llu, expected 1 GiB",
              (unsigned long long)t.cuda_chunk_bytes);
        CHECK(t.isa == NULL, "default isa \"%s\", expected none", t.isa ? t.isa : "");
    }

    /* good values, and the documented ranges: threads capped, CUDA chunks raised to 64 KiB */
    static const struct {
        const char *threads, *flops, *split, *chunk;
        int want_threads;
        double want_flops;
        int64_t want_split;
        uint64_t want_chunk;
    } good[] = {
        {"7", "0", "0", "2000000", 7, 0.0, 0, 2000000},
        {"+3", "2.5e5", "4096", "65536", 3, 2.5e5, 4096, 65536},
        {"1", "17", "1", "1", 1, 17.0, 1, (uint64_t)64 << 10},
        {"5000", "1e12", "9000000000", "0", LIG_MAX_THREADS, 1e12, 9000000000LL, (uint64_t)64 << 10},
        /* beyond 64 bits: saturated, then capped */
        {" 99999999999999999999", "1e300", "99999999999999999999", "99999999999999999999", LIG_MAX_THREADS, 1e300, INT64_MAX,
         (uint64_t)INT64_MAX},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        n_fake = 0;
        fake_set("LIG_NUM_THREADS", good[i].threads);
        fake_set("LIG_MIN_FLOPS_PER_THREAD", good[i].flops);
        fake_set("LIG_FWD_SPLIT_KEYS", good[i].split);
        fake_set("LIG_CUDA_CHUNK_BYTES", good[i].chunk);
        const int ignored = lig_tuning_parse(&t, fake_lookup, warnings, sizeof warnings);
        CHECK(ignored == 0 && warnings[0] == '\0', "good values %zu: %d ignored, warnings \"%s\"", i, ignored, warnings);
        CHECK(t.default_threads == good[i].want_threads, "LIG_NUM_THREADS=%s: %d threads, expected %d", good[i].threads,
              t.default_threads, good[i].want_threads);
        CHECK(t.min_flops_per_thread == good[i].want_flops, "LIG_MIN_FLOPS_PER_THREAD=%s: %g, expected %g", good[i].flops,
              t.min_flops_per_thread, good[i].want_flops);
        CHECK(t.fwd_split_keys == good[i].want_split, "LIG_FWD_SPLIT_KEYS=%s: %lld, expected %lld", good[i].split,
              (long long)t.fwd_split_keys, (long long)good[i].want_split);
        CHECK(t.cuda_chunk_bytes == good[i].want_chunk, "LIG_CUDA_CHUNK_BYTES=%s: %llu, expected %llu", good[i].chunk,
              (unsigned long long)t.cuda_chunk_bytes, (unsigned long long)good[i].want_chunk);
    }

    /* the kernel set: LIG_ISA as given (checked later, by the kernel-set choice), else "scalar" for
     * LIG_DISABLE_SIMD unless it is "0" */
    static const struct {
        const char *isa, *disable, *want;
    } isa[] = {
        {"avx2", NULL, "avx2"},          {"no-such-set", NULL, "no-such-set"}, {NULL, "1", "scalar"},
        {NULL, "yes", "scalar"},         {NULL, "0", NULL},                    {"avx512", "1", "avx512"},
        {"", "1", "scalar"},
    };
    for (size_t i = 0; i < sizeof isa / sizeof isa[0]; i++) {
        n_fake = 0;
        if (isa[i].isa) fake_set("LIG_ISA", isa[i].isa);
        if (isa[i].disable) fake_set("LIG_DISABLE_SIMD", isa[i].disable);
        const int ignored = lig_tuning_parse(&t, fake_lookup, warnings, sizeof warnings);
        CHECK(ignored == 0 && same_isa(t.isa, isa[i].want), "LIG_ISA=%s LIG_DISABLE_SIMD=%s: isa \"%s\", expected \"%s\"",
              isa[i].isa ? isa[i].isa : "(unset)", isa[i].disable ? isa[i].disable : "(unset)", t.isa ? t.isa : "(none)",
              isa[i].want ? isa[i].want : "(none)");
    }

    /* the process's snapshot is the environment's (read once; nothing here has changed it since) */
    const lig_tuning *env = lig_tuning_environment();
    lig_tuning again;
    lig_tuning_parse(&again, real_lookup, NULL, 0);
    CHECK(env->default_threads == again.default_threads && env->min_flops_per_thread == again.min_flops_per_thread &&
              env->fwd_split_keys == again.fwd_split_keys && env->grad_ring_chunks == again.grad_ring_chunks &&
              env->cuda_chunk_bytes == again.cuda_chunk_bytes && same_isa(env->isa, again.isa),
          "the process's knobs (threads %d, min flops %g, split %lld, CUDA chunk %llu, isa %s) are not the environment's",
          env->default_threads, env->min_flops_per_thread, (long long)env->fwd_split_keys,
          (unsigned long long)env->cuda_chunk_bytes, env->isa ? env->isa : "(none)");
}

LIG_TEST(tuning_bad_values_ignored) {
    /* each bad value alone: the default stays, one warning names the variable, says what was
     * expected and quotes what was received */
    static const struct {
        const char *name, *value, *expected;
    } bad[] = {
        {"LIG_NUM_THREADS", "zero", "whole number of threads >= 1"},
        {"LIG_NUM_THREADS", "0", "whole number of threads >= 1"},
        {"LIG_NUM_THREADS", "-2", "whole number of threads >= 1"},
        {"LIG_NUM_THREADS", "4 threads", "whole number of threads >= 1"},
        {"LIG_MIN_FLOPS_PER_THREAD", "fast", "finite number >= 0"},
        {"LIG_MIN_FLOPS_PER_THREAD", "-1", "finite number >= 0"},
        {"LIG_MIN_FLOPS_PER_THREAD", "nan", "finite number >= 0"},
        {"LIG_MIN_FLOPS_PER_THREAD", "inf", "finite number >= 0"},
        {"LIG_MIN_FLOPS_PER_THREAD", "1e999", "finite number >= 0"},
        {"LIG_FWD_SPLIT_KEYS", "-1", "whole number of keys >= 0"},
        {"LIG_FWD_SPLIT_KEYS", "4k", "whole number of keys >= 0"},
        {"LIG_FWD_SPLIT_KEYS", "1.5", "whole number of keys >= 0"},
        {"LIG_CUDA_CHUNK_BYTES", "1GiB", "whole number of bytes >= 0"},
        {"LIG_CUDA_CHUNK_BYTES", "-65536", "whole number of bytes >= 0"},
    };
    lig_tuning defaults;
    n_fake = 0;
    lig_tuning_parse(&defaults, fake_lookup, NULL, 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char warnings[1024], quoted[64];
        lig_tuning t;
        n_fake = 0;
        fake_set(bad[i].name, bad[i].value);
        const int ignored = lig_tuning_parse(&t, fake_lookup, warnings, sizeof warnings);
        snprintf(quoted, sizeof quoted, "got \"%s\"", bad[i].value);
        CHECK(ignored == 1, "%s=%s: %d values ignored, expected 1", bad[i].name, bad[i].value, ignored);
        CHECK(strncmp(warnings, bad[i].name, strlen(bad[i].name)) == 0 && strstr(warnings, bad[i].expected) &&
                  strstr(warnings, quoted) && strstr(warnings, "ignored") && strchr(warnings, '\n') == warnings + strlen(warnings) - 1,
              "%s=%s: the warning \"%s\" does not name the variable, \"expected a %s\" and %s on one line", bad[i].name,
              bad[i].value, warnings, bad[i].expected, quoted);
        CHECK(t.default_threads == defaults.default_threads && t.min_flops_per_thread == defaults.min_flops_per_thread &&
                  t.fwd_split_keys == defaults.fwd_split_keys && t.cuda_chunk_bytes == defaults.cuda_chunk_bytes,
              "%s=%s: a knob is not its default after the value was ignored", bad[i].name, bad[i].value);
    }

    /* several bad values: one line each; a good one beside them still applies */
    char warnings[1024];
    lig_tuning t;
    n_fake = 0;
    fake_set("LIG_NUM_THREADS", "many");
    fake_set("LIG_FWD_SPLIT_KEYS", "-5");
    fake_set("LIG_MIN_FLOPS_PER_THREAD", "0");
    const int ignored = lig_tuning_parse(&t, fake_lookup, warnings, sizeof warnings);
    int lines = 0;
    for (const char *c = warnings; *c; c++) lines += *c == '\n';
    CHECK(ignored == 2 && lines == 2 && strstr(warnings, "LIG_NUM_THREADS") && strstr(warnings, "LIG_FWD_SPLIT_KEYS"),
          "two bad values: %d ignored, warnings \"%s\"", ignored, warnings);
    CHECK(t.min_flops_per_thread == 0, "the good LIG_MIN_FLOPS_PER_THREAD=0 beside bad ones gave %g", t.min_flops_per_thread);

    /* a small buffer truncates the warnings but stays terminated */
    char small[16];
    memset(small, 'x', sizeof small);
    lig_tuning_parse(&t, fake_lookup, small, sizeof small);
    CHECK(memchr(small, '\0', sizeof small) != NULL, "the warnings overran a %zu-byte buffer", sizeof small);
}

LIG_TEST(tuning_override) {
    const lig_tuning *env = lig_tuning_environment();
    lig_set_num_threads(0);

    lig_tuning t = *env;
    t.default_threads = 3;
    t.min_flops_per_thread = 123.0;
    t.fwd_split_keys = 640;
    t.grad_ring_chunks = 5;
    t.cuda_chunk_bytes = 1 << 20;
    lig_testing_set_tuning(&t);
    lig_tuning now = lig_tuning_current();
    CHECK(now.default_threads == 3 && now.min_flops_per_thread == 123.0 && now.fwd_split_keys == 640 &&
              now.grad_ring_chunks == 5 && now.cuda_chunk_bytes == 1 << 20,
          "the override did not take: threads %d, min flops %g, split %lld, ring %lld, CUDA chunk %llu", now.default_threads,
          now.min_flops_per_thread, (long long)now.fwd_split_keys, (long long)now.grad_ring_chunks,
          (unsigned long long)now.cuda_chunk_bytes);
    /* the default thread count is the tuning's; lig_set_num_threads still wins over it */
    CHECK(lig_get_num_threads() == 3, "with the default threads overridden to 3, lig_get_num_threads() = %d",
          lig_get_num_threads());
    lig_set_num_threads(2);
    CHECK(lig_get_num_threads() == 2, "after set(2) over an override of 3, get() = %d", lig_get_num_threads());
    lig_set_num_threads(0);

    /* one knob at a time keeps the others */
    lig_testing_set_fwd_split_keys(0);
    lig_testing_set_grad_ring_chunks(2);
    now = lig_tuning_current();
    CHECK(now.fwd_split_keys == 0 && now.grad_ring_chunks == 2 && now.default_threads == 3 && now.min_flops_per_thread == 123.0,
          "one knob at a time: split %lld, ring %lld, threads %d, min flops %g", (long long)now.fwd_split_keys,
          (long long)now.grad_ring_chunks, now.default_threads, now.min_flops_per_thread);

    /* out-of-range overrides are brought into range */
    t.default_threads = 0;
    t.fwd_split_keys = -7;
    t.grad_ring_chunks = -1;
    t.cuda_chunk_bytes = 1;
    lig_testing_set_tuning(&t);
    now = lig_tuning_current();
    CHECK(now.default_threads == 1 && now.fwd_split_keys == -1 && now.grad_ring_chunks == 0 &&
              now.cuda_chunk_bytes == (uint64_t)64 << 10,
          "out-of-range override: threads %d, split %lld, ring %lld, CUDA chunk %llu", now.default_threads,
          (long long)now.fwd_split_keys, (long long)now.grad_ring_chunks, (unsigned long long)now.cuda_chunk_bytes);

    /* NULL: the environment's values again */
    lig_testing_set_tuning(NULL);
    now = lig_tuning_current();
    CHECK(now.default_threads == env->default_threads && now.min_flops_per_thread == env->min_flops_per_thread &&
              now.fwd_split_keys == env->fwd_split_keys && now.grad_ring_chunks == env->grad_ring_chunks &&
              now.cuda_chunk_bytes == env->cuda_chunk_bytes && now.isa == env->isa,
          "after the override was lifted the knobs are not the environment's");
    CHECK(lig_get_num_threads() == env->default_threads, "after the override was lifted, %d threads, expected %d",
          lig_get_num_threads(), env->default_threads);
}
