/*
 * Every object the front end hands out (allocations, streams, contexts, tensors, int arrays,
 * executors) is recorded here, so that a handle passed back is checked before it is used or
 * freed, and a byte range is checked against the allocation it lies in.
 */
#ifndef LIG_ACLNN_REGISTRY_H
#define LIG_ACLNN_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum fe_kind {
    FE_KIND_DEVICE_MEM = 1, /* aclrtMalloc */
    FE_KIND_HOST_MEM,       /* aclrtMallocHost */
    FE_KIND_STREAM,
    FE_KIND_CONTEXT,
    FE_KIND_TENSOR,
    FE_KIND_INT_ARRAY,
    FE_KIND_EXECUTOR
} fe_kind;

typedef struct fe_entry {
    uintptr_t addr;
    size_t size; /* bytes, for memory; 0 otherwise */
    fe_kind kind;
} fe_entry;

/* false when out of memory (nothing recorded). p is not const: gcc takes a const pointer to
 * fresh memory for a read of uninitialised bytes. */
bool fe_reg_add(void *p, size_t size, fe_kind kind);
/* Removes the entry starting exactly at p with that kind; false when there is none. */
bool fe_reg_remove(const void *p, fe_kind kind);
bool fe_reg_has(const void *p, fe_kind kind);
/* Whether some entry starts exactly at p; its kind in *kind. */
bool fe_reg_kind_of(const void *p, fe_kind *kind);
/* The allocation (device or host memory) holding byte p: its entry, or false. */
bool fe_reg_find_mem(const void *p, fe_entry *out);
/* Empties the registry; the caller frees the returned array and releases each object. */
fe_entry *fe_reg_take_all(size_t *count);

#endif /* LIG_ACLNN_REGISTRY_H */
