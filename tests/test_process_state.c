/*
 * What a program does to the process and the threads lig runs in (real programs fork, install signal handlers and run their own threads):
 * - fork() after threaded calls: the child's own threaded calls must finish and give the
 *   parent's bytes (the child has none of the parent's pool threads);
 * - the caller's floating-point mode (flush-to-zero, denormals-are-zero, another rounding
 *   direction): lig computes the contract's results regardless and leaves the mode as it was;
 * - work that must stay off the caller's thread (tile state) runs on lig's own threads only.
 */
#include <errno.h>
#include <fenv.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "backends/cpu/runtime/threadpool.h"
#include "framework.h"
#include "lig.h"
#include "operator_calls.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

#define N_CALLS 9 /* three of each operator */

static void make_calls(op_call *calls) {
    for (int i = 0; i < N_CALLS; i++) op_call_mixed(&calls[i], 5, i);
}

/* A backward on fp32 data whose q is subnormal (multiples of 2^-140 below 2^-126, exact in
 * fp32): flushing q (DAZ) or the products (FTZ) changes the scores and the gradients. */
static void make_subnormal_call(op_call *c) {
    memset(c, 0, sizeof *c);
    op_call_backward(c, 6, 0); /* deterministic, continuous data, fp32 (series 6, call 0) */
    for (int64_t i = 0; i < tc_numel_q(&c->tc); i++) c->tc.q[i] = ldexp(nearbyint(c->tc.q[i] * 256.0), -140);
}

static int run_all(op_call *calls, int n, const char *what) {
    int ok = 1;
    for (int i = 0; i < n; i++) {
        calls[i].op->run(&calls[i].sc, &calls[i].res);
        ok &= CHECK(calls[i].res.st1 == LIG_SUCCESS && calls[i].res.st2 == LIG_SUCCESS, "%s call %d (%s): %s", what, i,
                    calls[i].op->name, calls[i].res.message);
    }
    return ok;
}

/* Reruns every call and compares the bytes with the first run's; returns the number that differ. */
static int rerun_differs(op_call *calls, int n, const char *what) {
    int differ = 0;
    for (int i = 0; i < n; i++) {
        inst_result again;
        calls[i].op->run(&calls[i].sc, &again);
        char label[96];
        snprintf(label, sizeof label, "%s call %d (%s)", what, i, calls[i].op->name);
        differ += !op_call_same_bytes(&calls[i], &again, label);
        inst_result_free(&again);
    }
    return differ;
}

/* ---- the caller's floating-point mode ---- */

/* The control part of the calling thread's mode (not the sticky status flags, which the test's
 * own conversions raise), and a way to set flush-to-zero where the CPU has it. */
typedef struct fp_state {
    int rounding;
    unsigned long long control;
} fp_state;

static fp_state fp_read(void) {
    fp_state s = {.rounding = fegetround(), .control = 0};
#if defined(__x86_64__) || defined(__i386__)
    s.control = _mm_getcsr() & ~0x3fu;
#elif defined(__aarch64__)
    unsigned long long v;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
    s.control = v;
#endif
    return s;
}

/* Returns 0 where the test cannot flush subnormals (then only rounding directions are tried). */
static int fp_set_flush(int on) {
#if defined(__x86_64__) || defined(__i386__)
    const unsigned int ftz_daz = 0x8040u;
    _mm_setcsr(on ? _mm_getcsr() | ftz_daz : _mm_getcsr() & ~ftz_daz);
    return 1;
#elif defined(__aarch64__)
    unsigned long long v;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
    v = on ? v | (1ull << 24) : v & ~(1ull << 24);
    __asm__ __volatile__("msr fpcr, %0" : : "r"(v));
    return 1;
#else
    (void)on;
    return 0;
#endif
}

typedef struct fp_setting {
    const char *name;
    int flush;
    int rounding;
} fp_setting;

/* The caller's odd mode, set by the test harness around each library call only (two_phase_call.h), so
 * that the harness's own conversions run in the default mode. */
static const fp_setting *odd;
static fp_state odd_before;
static int odd_calls, odd_changed;

static void odd_mode_around(bool entering) {
    if (entering) {
        if (odd->flush) fp_set_flush(1);
        fesetround(odd->rounding);
        odd_before = fp_read();
        return;
    }
    const fp_state after = fp_read();
    odd_calls++;
    if (after.rounding != odd_before.rounding || after.control != odd_before.control) {
        if (odd_changed++ == 0)
            fprintf(stderr, "%s: the caller's mode changed (rounding %d -> %d, control %#llx -> %#llx)\n", odd->name,
                    odd_before.rounding, after.rounding, odd_before.control, after.control);
    }
    fesetround(FE_TONEAREST);
    fp_set_flush(0);
}

/* Reruns the calls with the caller's mode `s`; returns the number whose bytes or mode differ. */
static int rerun_in_mode(op_call *calls, int n, const fp_setting *s) {
    odd = s;
    odd_calls = odd_changed = 0;
    inst_around_library = odd_mode_around;
    const int differ = rerun_differs(calls, n, s->name);
    inst_around_library = NULL;
    CHECK(odd_calls >= 2 * n, "%s: %d library calls seen, expected at least %d", s->name, odd_calls, 2 * n);
    CHECK(odd_changed == 0, "%s: %d library calls changed the caller's mode", s->name, odd_changed);
    return differ + odd_changed;
}

static const fp_setting odd_settings[] = {
    {"flush-to-zero + denormals-are-zero", 1, FE_TONEAREST},
    {"rounding upward", 0, FE_UPWARD},
    {"rounding downward", 0, FE_DOWNWARD},
    {"rounding toward zero + flush-to-zero", 1, FE_TOWARDZERO},
};

/* One thread puts all the work on the caller's thread, two put part of it on the pool's. */
LIG_TEST(fp_mode_of_caller) {
    static op_call calls[N_CALLS + 1];
    make_calls(calls);
    make_subnormal_call(&calls[N_CALLS]);
    const int n = N_CALLS + 1;
    REQUIRE(fegetround() == FE_TONEAREST, "the test starts in round-to-nearest, got %d", fegetround());
    for (int threads = 1; threads <= 2; threads++) {
        lig_set_num_threads(threads);
        if (!run_all(calls, n, "default mode")) break;
        int tried = 0;
        for (size_t s = 0; s < sizeof odd_settings / sizeof odd_settings[0]; s++) {
            if (odd_settings[s].flush && !fp_set_flush(0)) continue;
            const int differ = rerun_in_mode(calls, n, &odd_settings[s]);
            CHECK(differ == 0, "%s, %d threads: %d of %d calls gave other bytes than in the default mode",
                  odd_settings[s].name, threads, differ, n);
            tried++;
        }
        th_note("%d thread(s): %d floating-point settings of the caller, %d calls each: same bytes, mode kept", threads,
                tried, n);
        for (int i = 0; i < n; i++) inst_result_free(&calls[i].res);
    }
    for (int i = 0; i < n; i++) op_call_free(&calls[i]);
    lig_set_num_threads(0);
}

/* ---- fork ---- */

#ifndef UNDER_TSAN
/* The children: the parent's calls again (with threads); in the second, with flush-to-zero and
 * rounding upward set when its pool's threads are made, so that they start from that mode.
 * Exit status 0 when everything matched. */
static int child_reruns(op_call *calls, int n) {
    int differ = rerun_differs(calls, n, "forked child");
    const int workers = lig_pool_workers();
    if (workers < 1) {
        fprintf(stderr, "forked child: its calls ran on no worker thread (%d)\n", workers);
        differ++;
    }
    return differ == 0 && th_current_failures() == 0 ? 0 : 1;
}

static int child_in_odd_mode(op_call *calls, int n) {
    const fp_setting s = {"forked child, flush-to-zero and rounding upward", 1, FE_UPWARD};
    const int differ = rerun_in_mode(calls, n, &s);
    return differ == 0 && th_current_failures() == 0 ? 0 : 1;
}

/* Waits up to `seconds` for pid; kills it after. Returns its exit status, or -1 when it hung. */
static int wait_for(pid_t pid, double seconds) {
    const double end = th_now() + seconds;
    for (;;) {
        int status;
        const pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        if (got < 0 && errno != EINTR) return -2;
        if (th_now() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        const struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

static void fork_and_check(op_call *calls, int n, int (*child)(op_call *, int), const char *what) {
    fflush(NULL);
    const pid_t pid = fork();
    REQUIRE(pid >= 0, "%s: fork failed: %s", what, strerror(errno));
    if (pid == 0) {
        alarm(300); /* a hung child never outlives the test run, even if the parent is gone */
        _exit(child(calls, n));
    }
    const int status = wait_for(pid, 240.0);
    CHECK(status != -1, "%s: the child did not finish within 240 s (a hang)", what);
    CHECK(status == 0 || status == -1, "%s: the child failed (exit status %d; its messages are above)", what, status);
}

static void run_fork_after_threaded_calls(void) {
    static op_call calls[N_CALLS];
    lig_set_num_threads(2);
    make_calls(calls);
    if (run_all(calls, N_CALLS, "parent")) {
        REQUIRE(lig_pool_workers() >= 1, "the parent's calls ran on no worker thread");
        fork_and_check(calls, N_CALLS, child_reruns, "forked child");
        fork_and_check(calls, N_CALLS, child_in_odd_mode, "forked child, odd mode");
        /* and the parent's pool still works after the forks */
        CHECK(rerun_differs(calls, N_CALLS, "parent after fork") == 0, "the parent's results changed after fork");
        th_note("%d calls (forward, KL, backward) with 2 threads in 2 forked children, same bytes", N_CALLS);
    }
    for (int i = 0; i < N_CALLS; i++) op_call_free(&calls[i]);
    lig_set_num_threads(0);
}
#endif

LIG_TEST(fork_after_threaded_calls) {
#ifndef UNDER_TSAN
    run_fork_after_threaded_calls();
#else
    th_skip("ThreadSanitizer does not support threads made after a fork of a threaded process");
#endif
}

/* ---- tasks off the caller's thread ---- */

#define OWN_MAX 8

typedef struct own_run {
    pthread_t caller;
    atomic_int ran, on_caller, bad_tid;
    atomic_int seen[OWN_MAX];
    int n_seen;
} own_run;

static void own_task(void *ctx, int tid, int n) {
    own_run *r = ctx;
    atomic_fetch_add(&r->ran, 1);
    if (pthread_equal(pthread_self(), r->caller)) atomic_fetch_add(&r->on_caller, 1);
    if (tid < 0 || tid >= n || tid >= OWN_MAX) {
        atomic_fetch_add(&r->bad_tid, 1);
        return;
    }
    atomic_fetch_add(&r->seen[tid], 1);
}

/* Holds the pool with a plain parallel region for 50 ms, so that the test's own-thread region
 * finds it busy. */
typedef struct holder {
    atomic_int inside;
} holder;

static void hold_task(void *ctx, int tid, int n) {
    holder *h = ctx;
    (void)n;
    if (tid != 0) return;
    atomic_store(&h->inside, 1);
    const struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
}

static void *hold_main(void *arg) {
    lig_parallel(2, hold_task, arg);
    return NULL;
}

static void check_own_run(int want, const char *what) {
    own_run r = {.caller = pthread_self()};
    lig_parallel_own_threads(want, own_task, &r);
    int once = 1;
    const int ran = atomic_load(&r.ran);
    for (int t = 0; t < ran && t < OWN_MAX; t++) once &= atomic_load(&r.seen[t]) == 1;
    CHECK(ran >= 1 && ran <= want, "%s: %d tasks ran, expected 1..%d", what, ran, want);
    CHECK(once && atomic_load(&r.bad_tid) == 0, "%s: task ids are not 0..%d once each", what, ran - 1);
    CHECK(atomic_load(&r.on_caller) == 0, "%s: %d tasks ran on the caller's thread", what, atomic_load(&r.on_caller));
}

LIG_TEST(own_thread_tasks) {
    check_own_run(1, "one task");
    check_own_run(2, "two tasks");
    check_own_run(OWN_MAX, "eight tasks");
    /* a busy pool is waited for, not replaced by the caller's thread */
    holder h;
    atomic_init(&h.inside, 0);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, hold_main, &h) == 0, "pthread_create failed");
    while (!atomic_load(&h.inside)) {
        const struct timespec pause = {0, 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    own_run r = {.caller = pthread_self()};
    lig_parallel_own_threads(2, own_task, &r);
    pthread_join(th, NULL);
    CHECK(atomic_load(&r.on_caller) == 0 && atomic_load(&r.ran) >= 1,
          "with the pool busy: %d tasks ran, %d on the caller's thread", atomic_load(&r.ran), atomic_load(&r.on_caller));
}
