/*
 * signals.h - SIGTERM/SIGINT as loop events (a signalfd), so shutdown runs in
 * the loop like everything else instead of in a signal handler.
 */
#ifndef MCPX_SIGNALS_H
#define MCPX_SIGNALS_H

#include "loop.h"

struct mcpx_signals;

/* Blocks SIGTERM and SIGINT and calls fn(arg, signo) from the loop when one
 * arrives. The mask is restored in sandboxed children by the sandbox. */
struct mcpx_signals *mcpx_signals_watch(struct mcpx_loop *loop, void (*fn)(void *arg, int signo),
					void *arg);
void mcpx_signals_free(struct mcpx_signals *s);

#endif
