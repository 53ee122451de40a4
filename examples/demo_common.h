/* What the example programs (train_indexer.c, decode_indexer.c) share: a seeded generator, a
 * clock, allocation and lig-status checks that exit on failure, a workspace that grows to the
 * largest plan, and the command line read through a table of options. Single-threaded, like the
 * examples' own code around lig's calls. */
#ifndef LIG_EXAMPLES_DEMO_COMMON_H
#define LIG_EXAMPLES_DEMO_COMMON_H

#include <lig.h>
#include <stddef.h>
#include <stdint.h>

/* splitmix64; demo_seed sets its state (the same seed gives the same numbers) */
void demo_seed(uint64_t state);
uint64_t next_u64(void);
double uniform01(void); /* in (0, 1) */
float gaussian(void);   /* N(0, 1), Box-Muller */

double now(void); /* seconds, CLOCK_MONOTONIC */

/* calloc that exits with a message when memory runs out (n = 0 gives a valid pointer) */
void *xcalloc(size_t n, size_t size);
/* exits with lig's message when st is not LIG_SUCCESS */
void check(lig_status st, const char *what);

/* a workspace of at least `need` bytes, reused across calls and grown when a plan needs more */
void *demo_workspace(uint64_t need);
void demo_workspace_free(void);

/* One command-line option: `name x` stores x in the field at `offset` of the program's config. */
typedef struct demo_option {
    const char *name;
    size_t offset;
    char kind; /* 'i' an int64_t >= 1 ('s' >= 0), 'd' a double, '1' / '0' a flag that sets an int to 1 / 0 */
} demo_option;

/* Reads argv[1 ..] into *config through options[0 .. n); an unknown name, a missing value or an
 * integer below its kind's minimum prints the usage (every option of the table) and exits with 2. */
void demo_parse_options(int argc, char **argv, const demo_option *options, size_t n, void *config);

#endif
