#include "fuzz_input.h"

void fz_init(fz_in *in, const uint8_t *data, size_t size)
{
    in->data = data;
    in->size = size;
    in->pos = 0;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < size; i++) {
        h = (h ^ data[i]) * 1099511628211ull;
    }
    in->tail = h | 1; /* xorshift needs a non-zero state */
}

uint8_t fz_u8(fz_in *in)
{
    if (in->pos < in->size) {
        return in->data[in->pos++];
    }
    in->tail ^= in->tail << 13;
    in->tail ^= in->tail >> 7;
    in->tail ^= in->tail << 17;
    return (uint8_t)(in->tail >> 32);
}

uint32_t fz_u32(fz_in *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        v = v << 8 | fz_u8(in);
    }
    return v;
}

int64_t fz_range(fz_in *in, int64_t lo, int64_t hi)
{
    const uint64_t span = (uint64_t)hi - (uint64_t)lo + 1; /* 0: the whole int64 range */
    const uint64_t v = span - 1 <= 255 ? fz_u8(in) : fz_u32(in);
    return span == 0 ? (int64_t)v : (int64_t)((uint64_t)lo + v % span);
}

int fz_chance(fz_in *in, int in256)
{
    return fz_u8(in) < in256;
}
