/*
 * transport_stdio.h - MCP over stdin/stdout, newline-delimited JSON-RPC.
 *
 * Nothing but MCP messages is written to stdout; logs go to stderr. Each
 * stdin line is one message for the protocol core. On stdin EOF the transport
 * stops reading, lets the calls in flight finish and answers them, then stops
 * the loop so the process exits 0.
 */
#ifndef MCPX_TRANSPORT_STDIO_H
#define MCPX_TRANSPORT_STDIO_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "loop.h"
#include "mcp.h"

/*
 * The framing of stdin, free of I/O so it can be tested and fuzzed alone:
 * bytes in (in any chunks), messages out. A message is a line without its
 * "\n" and trailing "\r"s; empty lines are skipped. A line over `max` bytes
 * is dropped up to its newline and reported once through on_drop (-E2BIG,
 * or -ENOMEM when memory ran out). on_line's pointer is valid only during
 * the call, which must not feed the same framer.
 */
struct mcpx_lines {
	struct mcpx_buf line; /* the line so far, capped at max */
	bool discarding;      /* inside a dropped line, until its newline */
	void (*on_line)(void *arg, const char *line, size_t len);
	void (*on_drop)(void *arg, int err);
	void *arg;
};

void mcpx_lines_init(struct mcpx_lines *l, size_t max,
		     void (*on_line)(void *arg, const char *line, size_t len),
		     void (*on_drop)(void *arg, int err), void *arg);
void mcpx_lines_feed(struct mcpx_lines *l, const char *data, size_t n);
/* End of input: a last line without its newline still counts. */
void mcpx_lines_finish(struct mcpx_lines *l);
void mcpx_lines_free(struct mcpx_lines *l);

struct mcpx_stdio;

/* Starts reading stdin on the loop. max_line bounds one message. */
struct mcpx_stdio *mcpx_stdio_start(struct mcpx_loop *loop, struct mcpx_core *core, size_t max_line);
/* Stop reading (shutdown); the loop stops once the calls in flight are answered. */
void mcpx_stdio_shutdown(struct mcpx_stdio *t);
/* Frees the transport; calls still in flight are cancelled in the core, which
 * must still exist. */
void mcpx_stdio_free(struct mcpx_stdio *t);

#endif
