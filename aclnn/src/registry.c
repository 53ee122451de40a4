/* A sorted array under one lock: lookups by containment (memory) and by exact address
 * (handles) are binary searches; the number of live objects in operator code is small. */
#include "registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fe_entry *entries;
static size_t count, capacity;

/* Index of the first entry with addr > a. */
static size_t upper_bound(uintptr_t a) {
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (entries[mid].addr <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Index of the entry starting exactly at a, or count. */
static size_t find_exact(uintptr_t a) {
    size_t i = upper_bound(a);
    return (i > 0 && entries[i - 1].addr == a) ? i - 1 : count;
}

bool fe_reg_add(void *p, size_t size, fe_kind kind) {
    uintptr_t a = (uintptr_t)p;
    bool ok = true;
    pthread_mutex_lock(&lock);
    if (count == capacity) {
        size_t cap = capacity ? capacity * 2 : 64;
        fe_entry *grown = realloc(entries, cap * sizeof *grown);
        if (grown) {
            entries = grown;
            capacity = cap;
        } else {
            ok = false;
        }
    }
    if (ok) {
        size_t i = upper_bound(a);
        memmove(entries + i + 1, entries + i, (count - i) * sizeof *entries);
        entries[i] = (fe_entry){.addr = a, .size = size, .kind = kind};
        count++;
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

bool fe_reg_remove(const void *p, fe_kind kind) {
    bool found = false;
    pthread_mutex_lock(&lock);
    size_t i = find_exact((uintptr_t)p);
    if (i < count && entries[i].kind == kind) {
        memmove(entries + i, entries + i + 1, (count - i - 1) * sizeof *entries);
        count--;
        found = true;
    }
    pthread_mutex_unlock(&lock);
    return found;
}

bool fe_reg_has(const void *p, fe_kind kind) {
    fe_kind k;
    return fe_reg_kind_of(p, &k) && k == kind;
}

bool fe_reg_kind_of(const void *p, fe_kind *kind) {
    bool found = false;
    pthread_mutex_lock(&lock);
    size_t i = find_exact((uintptr_t)p);
    if (i < count) {
        *kind = entries[i].kind;
        found = true;
    }
    pthread_mutex_unlock(&lock);
    return found;
}

bool fe_reg_find_mem(const void *p, fe_entry *out) {
    uintptr_t a = (uintptr_t)p;
    bool found = false;
    pthread_mutex_lock(&lock);
    size_t i = upper_bound(a);
    if (i > 0) {
        const fe_entry *e = &entries[i - 1];
        if ((e->kind == FE_KIND_DEVICE_MEM || e->kind == FE_KIND_HOST_MEM) && a - e->addr < e->size) {
            *out = *e;
            found = true;
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

fe_entry *fe_reg_take_all(size_t *n) {
    pthread_mutex_lock(&lock);
    fe_entry *all = entries;
    *n = count;
    entries = NULL;
    count = capacity = 0;
    pthread_mutex_unlock(&lock);
    return all;
}
