/*
 * reaper.h - private to the sandbox module: which of the server's children
 * are run leaders, and the count of a uid's tasks that RLIMIT_NPROC is
 * based on.
 *
 * reaper.c also implements mcpx_sandbox_kill and mcpx_sandbox_reap
 * (sandbox.h). spawn.c forks and adopts run leaders through the registry
 * below, sandbox.c sizes RLIMIT_NPROC with mcpx_reaper_uid_tasks, and
 * cleanup.c kills and reaps through sandbox.h. This module includes none of
 * theirs.
 */
#ifndef MCPX_SANDBOX_REAPER_H
#define MCPX_SANDBOX_REAPER_H

#include <sys/types.h>

#include "err.h"

/* ---- the server's part: one per struct mcpx_sandbox ---------------------- */

/* What the reaper keeps for one server: the cached task count of its run
 * uid. Created by mcpx_sandbox_init, freed by mcpx_sandbox_free (the
 * sandbox owns it; copies of a struct mcpx_sandbox share it). */
struct mcpx_reaper;

/* NULL when out of memory. The caller frees it with mcpx_reaper_free. */
struct mcpx_reaper *mcpx_reaper_new(void);
/* Frees r (NULL: nothing). */
void mcpx_reaper_free(struct mcpx_reaper *r);

/* The tasks (threads) uid has now, leaving out the process group skip_pgrp
 * (0: none); read from /proc at most once a second. Thread-safe. */
unsigned long mcpx_reaper_uid_tasks(struct mcpx_reaper *r, uid_t uid, pid_t skip_pgrp);

/* ---- the process's part: the registry of live run leaders --------------- */

/* The run leaders are the process's children, not one sandbox's: see
 * reaper.c for why the registry is process-wide. */

/* Forks a run leader with the registry locked, registers it and returns its
 * pid; the child calls child(arg), which must never return (it execs or
 * _exits). The child comes from vfork: it shares the caller's memory until
 * its execve, starts with every signal blocked, and child must write
 * nothing but its own stack (see reaper.c). -EAGAIN when the registry is
 * full, else -errno of vfork, with err set. */
pid_t mcpx_leaders_fork(void (*child)(const void *arg), const void *arg, struct mcpx_err *err);

/* Registers a leader forked by someone else (the zygote). 0, or -EAGAIN
 * when the registry is full. */
int mcpx_leaders_add(pid_t pid);

/* Forgets pid (a leader that was reaped). */
void mcpx_leaders_remove(pid_t pid);

#endif
