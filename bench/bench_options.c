/* The benchmarks' command lines: one loop over `--name value` pairs against each program's table. */
#include "bench_options.h"

#include <stdlib.h>
#include <string.h>

int bench_parse_options(int argc, char **argv, const bench_option *opts, size_t n) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const bench_option *o = NULL;
        for (size_t j = 0; j < n && !o; j++)
            if (!strcmp(argv[i], opts[j].name)) o = &opts[j];
        if (!o) return 0;
        const char *value = argv[i + 1];
        if (o->i64) *o->i64 = atoll(value);
        if (o->i32) *o->i32 = atoi(value);
        if (o->text) *o->text = value;
    }
    return 1;
}
