/*
 * The byte decoder of the libFuzzer targets: an input is read front to back as small choices
 * (bytes, ranges, chances). The structure of a call (operator, dims, layout, defects) comes
 * first and the tensor data last, so libFuzzer's mutations of the head change the call and those
 * of the tail change the data. Once the bytes run out, the decoder goes on with a xorshift
 * stream seeded from a hash of the whole input: a short input still decodes to a call with
 * varied data, and the same input always to the same call.
 */
#ifndef LIG_FUZZ_INPUT_H
#define LIG_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

typedef struct fz_in {
    const uint8_t *data;
    size_t size, pos;
    uint64_t tail; /* xorshift state used past the end */
} fz_in;

void fz_init(fz_in *in, const uint8_t *data, size_t size);
uint8_t fz_u8(fz_in *in);
uint32_t fz_u32(fz_in *in);
/* A value in [lo, hi] (inclusive; lo <= hi): one byte when the range has at most 256 values,
 * four otherwise. */
int64_t fz_range(fz_in *in, int64_t lo, int64_t hi);
/* 1 with probability in256 / 256. */
int fz_chance(fz_in *in, int in256);

/* libFuzzer's entry point, which each target defines (declared once here for -Wmissing-prototypes). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* LIG_FUZZ_INPUT_H */
