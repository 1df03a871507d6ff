/*
 * gate.h - the FIFO a prepared bash waits at before its script (gate.c).
 * All paths are a run's workdir; nothing here allocates.
 */
#ifndef MCPX_GATE_H
#define MCPX_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sandbox.h"

/* The gate's name in the workdir, and the variable that names it to bash
 * (relative: bash starts in its workdir). */
#define MCPX_GATE_NAME ".mcpx-gate"
#define MCPX_GATE_ENV "BASH_ENV=" MCPX_GATE_NAME

/* Makes the FIFO in a new workdir, owned by the run's uid when chown_to.
 * Returns 0 or -errno. */
int mcpx_gate_create(const char *workdir, bool chown_to, uid_t uid, gid_t gid);

/* 1 with *gate_fd (the write end, close-on-exec; the caller owns it) once
 * bash waits at the gate, 0 while it has not reached it yet, or -errno.
 * workdir_fd: the workdir, opened once (O_PATH will do), so that each try
 * is one openat(2). */
int mcpx_gate_reached(int workdir_fd, int *gate_fd);

/* Removes the gate's name (bash keeps its open end). 0 or -errno. */
int mcpx_gate_unlink(const char *workdir);

/* The line the gate lets through (gate.c): the CPU and address-space limits
 * of rl (as mcpx_sandbox_rlimits gives them; they must not be above the
 * ones bash waited with, so that lowering them cannot fail), then unset
 * BASH_ENV; bash kills itself if any of that fails. Its length, or
 * -ENAMETOOLONG when len is too small (160 is enough). */
int mcpx_gate_line(char *buf, size_t len, const struct mcpx_rlimit *rl, int n);

/* The gate's second line: SECONDS=0 (it counts from the gate, as a cold
 * bash's counts from its start) and $_ set back to bash_path (what a cold
 * bash has before its first command). Its length, or -ENAMETOOLONG. */
int mcpx_gate_fresh_line(char *buf, size_t len, const char *bash_path);

/* Writes line (shorter than PIPE_BUF) through the gate, which lets bash on
 * to its script, and closes *gate_fd (set to -1). 0, or -errno when bash is
 * gone. */
int mcpx_gate_release(int *gate_fd, const char *line, size_t line_len);

#endif
