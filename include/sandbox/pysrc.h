/*
 * pysrc.h - the Python sources embedded in the binary: the .py files of
 * python/, turned into C arrays at build time by cmake/embed_python.cmake.
 *
 * runner.c is their only user: it hands them to every run's interpreter.
 */
#ifndef MCPX_PYSRC_H
#define MCPX_PYSRC_H

#include <stddef.h>

struct mcpx_pysrc {
	const char *name; /* the file name without .py */
	const char *text; /* NUL-terminated */
	size_t len;
};

/* Ends with an entry whose name is NULL. */
extern const struct mcpx_pysrc mcpx_pysrc_table[];

#endif
