/*
 * zygote.h - the fork server's zygote: a preloaded interpreter that never
 * runs user code and forks one child per run (zygote.c).
 *
 * Private to the zygote binary (cmd/mcp-exec-zygote). The server's side and
 * the messages are in forkserver.c and zygote_proto.h.
 */
#ifndef MCPX_ZYGOTE_H
#define MCPX_ZYGOTE_H

/* Serves the server on the control socket (fd MCPX_ZYGOTE_CTL_FD) until it
 * closes: reads what every child enforces, preloads (interp.h), says ready,
 * then forks and reaps on request. Returns the process's exit status; a
 * forked child never returns from here (it runs its code and exits). */
int mcpx_zygote_serve(const char *python, const char *preload_csv);

#endif
