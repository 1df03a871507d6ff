/*
 * warm.h - the warm interpreter protocol.
 *
 * A warm interpreter is a sandboxed, preloaded Python waiting for its code:
 * a child forked by the fork server's zygote, or (after-reap mode) the
 * mcp-exec-zygote binary started on its own (src/zygote/). It writes one NUL
 * byte to stdout to say it is ready, then reads a fixed-size header and the
 * code from stdin; whatever follows on stdin is the program's own stdin.
 * Holding the whole code, it writes one more byte (MCPX_WARM_TAKEN), then
 * re-bases RLIMIT_CPU on the CPU it has used so far (the limit counts
 * from the code's arrival) and runs the code through the runner (runner.h)
 * as the real __main__ (from main.py, which the server wrote into the
 * workdir), exactly once. The process is discarded afterwards.
 */
#ifndef MCPX_WARM_H
#define MCPX_WARM_H

#include <stdbool.h>
#include <stddef.h>

/* The bytes a warm interpreter writes to stdout before the program's own
 * output: READY once it waits for its code, TAKEN once it has all of it
 * (the server's evidence that the code was handed over: an interpreter
 * that ends before TAKEN never ran it). */
#define MCPX_WARM_READY '\0'
#define MCPX_WARM_TAKEN '\1'

/* The header is "<code bytes, 20 digits> <cpu seconds, 10 digits>\n". */
#define MCPX_WARM_HEADER_LEN 32

/* Formats the header line for a run; returns its length (0 if it does not
 * fit). */
size_t mcpx_warm_header(char *buf, size_t len, size_t code_len, unsigned cpu_s);

/* Parses MCPX_WARM_HEADER_LEN bytes of header. Returns 0, or -1 when they
 * are not a header. */
int mcpx_warm_header_parse(const char *hdr, size_t *code_len, unsigned *cpu_s);

#endif
