/*
 * runner.h - the Python program around a run's code.
 *
 * Every run, cold or warm, executes its code through the same runner
 * (python/runner.py, embedded in the binary): the code becomes the real
 * __main__ module and the support modules shipped with the server (the
 * other files of python/, such as `mcpx`) become importable. The sources
 * live only in the binary, so nothing a run can write changes what the next
 * run executes.
 */
#ifndef MCPX_RUNNER_H
#define MCPX_RUNNER_H

#include "buf.h"

/* The program a cold run's interpreter gets with -c: it runs main.py from
 * its working directory. Built on the first call (from a single thread,
 * before any fork) and kept for the process's life; NULL when out of
 * memory. */
const char *mcpx_runner_cold(void);

/* Appends the runner's definitions and the installation of the support
 * modules to b; a warm interpreter (src/zygote/interp.c) then calls
 * _mcpx_run(src, path, ws) itself (ws: a workspace call, .mcpx/vars.in
 * in the workdir).
 * Returns 0 or -ENOMEM / -E2BIG. */
int mcpx_runner_append(struct mcpx_buf *b);

#endif
