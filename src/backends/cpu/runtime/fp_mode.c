#include "backends/cpu/runtime/fp_mode.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* MXCSR: exception masks (bits 7-12) set, FTZ (15), DAZ (6) and rounding control (13-14)
 * cleared. The status flags (0-5) stay as they are while lig runs; leave() restores them. */
enum { MXCSR_MASKS = 0x1f80u, MXCSR_FTZ = 0x8000u, MXCSR_DAZ = 0x0040u, MXCSR_ROUNDING = 0x6000u };

lig_fp_mode lig_fp_mode_enter(void) {
    const unsigned int found = _mm_getcsr();
    const unsigned int ours = (found | MXCSR_MASKS) & ~(MXCSR_FTZ | MXCSR_DAZ | MXCSR_ROUNDING);
    if (ours != found) _mm_setcsr(ours);
    return (lig_fp_mode){.control = found};
}

void lig_fp_mode_leave(lig_fp_mode saved) {
    if (_mm_getcsr() != (unsigned int)saved.control) _mm_setcsr((unsigned int)saved.control);
}

#elif defined(__aarch64__)
#include <stdint.h>

/* FPCR: FZ (24), FZ16 (19), rounding mode (22-23) and the trap enables (8-12, 15) cleared.
 * The cumulative flags live in FPSR, which leave() restores too. */
enum { FPCR_FZ = 1u << 24, FPCR_FZ16 = 1u << 19, FPCR_RMODE = 3u << 22, FPCR_TRAPS = 0x9f00u };

static uint64_t read_fpcr(void) {
    uint64_t v;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
    return v;
}

static uint64_t read_fpsr(void) {
    uint64_t v;
    __asm__ __volatile__("mrs %0, fpsr" : "=r"(v));
    return v;
}

lig_fp_mode lig_fp_mode_enter(void) {
    const uint64_t found = read_fpcr();
    const uint64_t ours = found & ~(uint64_t)(FPCR_FZ | FPCR_FZ16 | FPCR_RMODE | FPCR_TRAPS);
    if (ours != found) __asm__ __volatile__("msr fpcr, %0" : : "r"(ours));
    /* FPCR is 32 bits wide in use; FPSR's flags ride in the upper half of the saved word */
    return (lig_fp_mode){.control = (found & 0xffffffffu) | (read_fpsr() << 32)};
}

void lig_fp_mode_leave(lig_fp_mode saved) {
    const uint64_t fpcr = saved.control & 0xffffffffu, fpsr = saved.control >> 32;
    __asm__ __volatile__("msr fpcr, %0" : : "r"(fpcr));
    __asm__ __volatile__("msr fpsr, %0" : : "r"(fpsr));
}

#else
#include <fenv.h>

/* Elsewhere only the standard's rounding direction can be read and set. */
lig_fp_mode lig_fp_mode_enter(void) {
    const int found = fegetround();
    if (found != FE_TONEAREST) fesetround(FE_TONEAREST);
    return (lig_fp_mode){.control = (unsigned long long)(unsigned int)found};
}

void lig_fp_mode_leave(lig_fp_mode saved) {
    const int found = (int)(unsigned int)saved.control;
    if (fegetround() != found) fesetround(found);
}
#endif

lig_status lig_fp_mode_run(lig_fp_mode_run_fn run, void *plan, void *workspace, void *stream) {
    const lig_fp_mode caller = lig_fp_mode_enter();
    const lig_status status = run(plan, workspace, stream);
    lig_fp_mode_leave(caller);
    return status;
}
