#ifndef LIG_BENCH_OPTIONS_H
#define LIG_BENCH_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

/* One `--name value` option of a benchmark's command line: the value is read into whichever of
 * the three destinations is set (an int64_t, an int, or the text itself). */
typedef struct bench_option {
    const char *name;
    int64_t *i64;
    int *i32;
    const char **text;
} bench_option;

/* Reads argv[1 ..] as `--name value` pairs of opts[0 .. n) (a last name without a value is passed
 * over); returns 0 at the first name that is not in opts, the caller's cue to print its usage. */
int bench_parse_options(int argc, char **argv, const bench_option *opts, size_t n);

#endif
