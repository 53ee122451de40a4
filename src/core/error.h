/* Error reporting: every failure sets a thread-local message naming the parameter, what was
 * expected and what was received. Every layer reports through lig_fail; the public
 * lig_get_last_error (api/status.c) reads the message back. */
#ifndef LIG_CORE_ERROR_H
#define LIG_CORE_ERROR_H

#include <stddef.h>
#include <stdint.h>

#include "lig.h"

#if defined(__GNUC__) || defined(__clang__)
#define LIG_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define LIG_PRINTF(fmt_index, first_arg)
#endif

/* Records `status` with a printf-style message for this thread and returns `status`. */
lig_status lig_fail(lig_status status, const char *fmt, ...) LIG_PRINTF(2, 3);

/* This thread's last failure message, "" before the first failure. */
const char *lig_error_message(void);

/* lig_format_shape (lig.h) writes the shapes of the messages. */
#define LIG_SHAPE_BUF 192

#endif
