/*
 * err.h - the project's error contract.
 *
 * Functions return 0 on success or a negative errno on failure. Where a human
 * message helps the caller (config parsing, sandbox start-up), they also fill a
 * caller-provided struct mcpx_err; it never allocates, so it is safe to use on
 * any path, including the ones that run out of memory.
 */
#ifndef MCPX_ERR_H
#define MCPX_ERR_H

#include <stdarg.h>

struct mcpx_err {
	char msg[256];
};

/* Formats a message into err (if non-NULL) and returns -errnum, so callers can
 * write `return mcpx_err_set(err, EINVAL, "bad value %s", v);`. */
int mcpx_err_set(struct mcpx_err *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
