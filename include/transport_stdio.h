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

#include <stddef.h>

#include "loop.h"
#include "mcp.h"

struct mcpx_stdio;

/* Starts reading stdin on the loop. max_line bounds one message. */
struct mcpx_stdio *mcpx_stdio_start(struct mcpx_loop *loop, struct mcpx_core *core, size_t max_line);
/* Stop reading (shutdown); the loop stops once the calls in flight are answered. */
void mcpx_stdio_shutdown(struct mcpx_stdio *t);
void mcpx_stdio_free(struct mcpx_stdio *t);

#endif
