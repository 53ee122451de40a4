/* Carving a caller's workspace into regions: every region 64-byte aligned, and 64 spare
 * bytes in every workspace size so that any base pointer can be aligned. Sizes saturate
 * (core/size.h): a region that passes 2^64 leaves the cursor at LIG_SIZE_HUGE, which the
 * planner's final lig_size_check refuses. */
#ifndef LIG_CORE_WORKSPACE_H
#define LIG_CORE_WORKSPACE_H

#include <stdint.h>

#include "core/size.h"

#define LIG_WS_ALIGN 64u

/* Reserves `bytes` at *cursor (returned) and advances the cursor to the next aligned offset. */
static inline uint64_t lig_ws_take(uint64_t *cursor, uint64_t bytes) {
    const uint64_t at = *cursor;
    *cursor = lig_size_align(lig_size_add(at, bytes), LIG_WS_ALIGN);
    return at;
}

/* The workspace size of `copies` regions of `bytes` (per-thread scratch after the shared
 * regions, say) ending at cursor, with the room to align the caller's base pointer. */
static inline uint64_t lig_ws_total(uint64_t cursor, uint64_t copies, uint64_t bytes) {
    return lig_size_add(lig_size_add(cursor, lig_size_mul(copies, bytes)), LIG_WS_ALIGN);
}

static inline char *lig_ws_base(void *workspace) {
    return (char *)(((uintptr_t)workspace + LIG_WS_ALIGN - 1) & ~(uintptr_t)(LIG_WS_ALIGN - 1));
}

#endif
