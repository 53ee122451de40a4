#include "errtest.h"

#include <ctype.h>
#include <string.h>

#include "gen.h"
#include "harness.h"

int contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)needle[i])) {
            i++;
        }
        if (i == n) {
            return 1;
        }
    }
    return 0;
}

static int is_ident(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

/* `word` as a whole identifier. */
static int contains_word(const char *msg, const char *word, size_t len)
{
    for (const char *p = msg; *p; p++) {
        if (strncmp(p, word, len) == 0 && (p == msg || !is_ident(p[-1])) && !is_ident(p[len])) {
            return 1;
        }
    }
    return 0;
}

int names_any(const char *msg, const char *names)
{
    const char *p = names;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (contains_word(msg, p, len)) {
            return 1;
        }
        if (!bar) {
            break;
        }
        p = bar + 1;
    }
    return 0;
}

void check_error_message(const char *label, const char *msg, const char *names)
{
    CHECK(msg[0] != '\0', "%s: empty error message", label);
    CHECK(names_any(msg, names), "%s: message does not name %s: \"%s\"", label, names, msg);
    CHECK(contains_ci(msg, "expected"), "%s: message lacks \"expected\": \"%s\"", label, msg);
    CHECK(contains_ci(msg, "got"), "%s: message lacks \"got\": \"%s\"", label, msg);
}

void errtest_base_dims(tcase *tc, void (*edit)(tcase *tc))
{
    tc_init(tc);
    tc->p.N1 = 4;
    tc->p.N2 = 2;
    tc->p.D = 8;
    tc->p.K = 3;
    tc->p.B = 2;
    if (edit != NULL) {
        edit(tc);
    }
}

void errtest_base_bsnd(th_rng *r, tcase *tc)
{
    tc->p.S1 = 3;
    tc->p.S2 = 5;
    tc->has_seq_q = tc->has_seq_k = 1;
    gen_bsnd(r, tc);
    tc->seq_q[0] = 3;
    tc->seq_q[1] = 2;
    tc->seq_k[0] = 5;
    tc->seq_k[1] = 3;
}

void errtest_base_tnd_lengths(tcase *tc)
{
    tc->seq_q[0] = 2;
    tc->seq_q[1] = 3;
    tc->seq_k[0] = 4;
    tc->seq_k[1] = 5;
}
