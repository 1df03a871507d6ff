/*
 * err.c - fills the caller's fixed-size error message; never allocates.
 */
#include "err.h"

#include <stdio.h>

int mcpx_err_set(struct mcpx_err *err, int errnum, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return errnum > 0 ? -errnum : errnum;
}
