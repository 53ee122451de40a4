#include "core/tuning.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/settings.h"
#include "testing/lig_testing.h"

/* Appends one formatted line to the warnings (truncated when they are full). */
static void warn(char *warnings, size_t cap, const char *fmt, ...) {
    if (cap == 0) return;
    const size_t used = strlen(warnings);
    if (used + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(warnings + used, cap - used, fmt, ap);
    va_end(ap);
    const size_t now = strlen(warnings);
    if (now + 1 < cap) {
        warnings[now] = '\n';
        warnings[now + 1] = '\0';
    }
}

/* A whole decimal number (leading blanks and a sign allowed, nothing after it); false when `s` is
 * not one. One beyond the range of long long saturates: every knob has a cap or no use for more. */
static bool whole_number(const char *s, long long *out) {
    char *end;
    const long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0') return false;
    *out = v; /* LLONG_MAX or LLONG_MIN when out of range */
    return true;
}

static int online_cpus(void) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > LIG_MAX_THREADS ? LIG_MAX_THREADS : (int)n;
}

int lig_tuning_parse(lig_tuning *t, lig_tuning_lookup lookup, char *warnings, size_t cap) {
    if (cap) warnings[0] = '\0';
    *t = (lig_tuning){
        .default_threads = online_cpus(),
        .min_flops_per_thread = LIG_TUNING_DEFAULT_MIN_FLOPS_PER_THREAD,
        .fwd_split_keys = -1,
        .grad_ring_chunks = 0,
        .cuda_chunk_bytes = LIG_TUNING_DEFAULT_CUDA_CHUNK_BYTES,
        .isa = NULL,
    };
    int ignored = 0;
    long long n;
    const char *v;

    /* An empty value counts as unset everywhere, as `VAR= program` is a common way to clear one. */
    if ((v = lookup("LIG_NUM_THREADS")) && *v) {
        if (whole_number(v, &n) && n >= 1)
            t->default_threads = n > LIG_MAX_THREADS ? LIG_MAX_THREADS : (int)n;
        else {
            warn(warnings, cap, "LIG_NUM_THREADS: expected a whole number of threads >= 1, got \"%.40s\"; ignored (%d, the online CPUs)",
                 v, t->default_threads);
            ignored++;
        }
    }
    if ((v = lookup("LIG_MIN_FLOPS_PER_THREAD")) && *v) {
        char *end;
        const double x = strtod(v, &end); /* overflow gives HUGE_VAL, refused as not finite */
        if (end != v && *end == '\0' && isfinite(x) && x >= 0)
            t->min_flops_per_thread = x;
        else {
            warn(warnings, cap, "LIG_MIN_FLOPS_PER_THREAD: expected a finite number >= 0, got \"%.40s\"; ignored (%g)", v,
                 t->min_flops_per_thread);
            ignored++;
        }
    }
    if ((v = lookup("LIG_FWD_SPLIT_KEYS")) && *v) {
        if (whole_number(v, &n) && n >= 0)
            t->fwd_split_keys = n;
        else {
            warn(warnings, cap,
                 "LIG_FWD_SPLIT_KEYS: expected a whole number of keys >= 0 (0: never split), got \"%.40s\"; ignored (the "
                 "default slice length)",
                 v);
            ignored++;
        }
    }
    if ((v = lookup("LIG_CUDA_CHUNK_BYTES")) && *v) {
        if (whole_number(v, &n) && n >= 0)
            t->cuda_chunk_bytes = (uint64_t)n < LIG_TUNING_MIN_CUDA_CHUNK_BYTES ? LIG_TUNING_MIN_CUDA_CHUNK_BYTES : (uint64_t)n;
        else {
            warn(warnings, cap, "LIG_CUDA_CHUNK_BYTES: expected a whole number of bytes >= 0, got \"%.40s\"; ignored (%llu)", v,
                 (unsigned long long)t->cuda_chunk_bytes);
            ignored++;
        }
    }
    if ((v = lookup("LIG_ISA")) && *v)
        t->isa = v;
    else if ((v = lookup("LIG_DISABLE_SIMD")) && *v && strcmp(v, "0") != 0)
        t->isa = "scalar"; /* the older spelling of LIG_ISA=scalar */
    return ignored;
}

static lig_tuning from_environment;
/* A copy of LIG_ISA: the environment's own string may go when a program calls setenv. */
static char isa_copy[64];
static pthread_once_t environment_once = PTHREAD_ONCE_INIT;

static const char *environment_lookup(const char *name) { return getenv(name); }

static void read_environment(void) {
    char warnings[1024];
    lig_tuning t;
    lig_tuning_parse(&t, environment_lookup, warnings, sizeof warnings);
    /* once per process, one line per value ignored (each ends in '\n') */
    for (const char *line = warnings, *end; *line; line = end + 1) {
        end = strchr(line, '\n');
        if (!end) break;
        fprintf(stderr, "lig: warning: %.*s\n", (int)(end - line), line);
    }
    if (t.isa) {
        snprintf(isa_copy, sizeof isa_copy, "%s", t.isa);
        t.isa = isa_copy;
    }
    from_environment = t;
}

const lig_tuning *lig_tuning_environment(void) {
    pthread_once(&environment_once, read_environment);
    return &from_environment;
}

/* A test's override, knob by knob: each field is atomic so that plans made on other threads read
 * whole values while a test changes them (a thread may see some knobs before the change and some
 * after, which the tests never rely on). */
static atomic_bool overridden;
static atomic_int override_threads;
static _Atomic double override_min_flops;
static atomic_llong override_split_keys;
static atomic_llong override_ring_chunks;
static atomic_ullong override_chunk_bytes;
static _Atomic(const char *) override_isa;

lig_tuning lig_tuning_current(void) {
    const lig_tuning *env = lig_tuning_environment();
    if (!atomic_load(&overridden)) return *env;
    return (lig_tuning){
        .default_threads = atomic_load(&override_threads),
        .min_flops_per_thread = atomic_load(&override_min_flops),
        .fwd_split_keys = atomic_load(&override_split_keys),
        .grad_ring_chunks = atomic_load(&override_ring_chunks),
        .cuda_chunk_bytes = atomic_load(&override_chunk_bytes),
        .isa = atomic_load(&override_isa),
    };
}

void lig_testing_set_tuning(const lig_tuning *t) {
    if (!t) {
        atomic_store(&overridden, false);
        return;
    }
    atomic_store(&override_threads, t->default_threads < 1 ? 1 : t->default_threads > LIG_MAX_THREADS ? LIG_MAX_THREADS : t->default_threads);
    atomic_store(&override_min_flops, t->min_flops_per_thread);
    atomic_store(&override_split_keys, t->fwd_split_keys < 0 ? -1 : t->fwd_split_keys);
    atomic_store(&override_ring_chunks, t->grad_ring_chunks < 0 ? 0 : t->grad_ring_chunks);
    atomic_store(&override_chunk_bytes, t->cuda_chunk_bytes < LIG_TUNING_MIN_CUDA_CHUNK_BYTES ? LIG_TUNING_MIN_CUDA_CHUNK_BYTES : t->cuda_chunk_bytes);
    atomic_store(&override_isa, t->isa);
    atomic_store(&overridden, true);
}
