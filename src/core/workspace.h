/* Carving a caller's workspace into regions: every region 64-byte aligned, and 64 spare
 * bytes in every workspace size so that any base pointer can be aligned. */
#ifndef LIG_CORE_WORKSPACE_H
#define LIG_CORE_WORKSPACE_H

#include <stdint.h>

#define LIG_WS_ALIGN 64u

/* Reserves `bytes` at *cursor (returned) and advances the cursor to the next aligned offset. */
static inline uint64_t lig_ws_take(uint64_t *cursor, uint64_t bytes) {
    const uint64_t at = *cursor;
    *cursor = (at + bytes + LIG_WS_ALIGN - 1) & ~(uint64_t)(LIG_WS_ALIGN - 1);
    return at;
}

static inline char *lig_ws_base(void *workspace) {
    return (char *)(((uintptr_t)workspace + LIG_WS_ALIGN - 1) & ~(uintptr_t)(LIG_WS_ALIGN - 1));
}

#endif
