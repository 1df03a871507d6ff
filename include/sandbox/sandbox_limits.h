/*
 * sandbox_limits.h - what one run may use: the per-run limits the executor
 * asks for (struct mcpx_limits) and the resource limits the child applies
 * (struct mcpx_rlimit, computed by mcpx_sandbox_rlimits in sandbox.c).
 *
 * Plain data, included by sandbox.h; it declares no function and depends on
 * nothing of the project's.
 */
#ifndef MCPX_SANDBOX_LIMITS_H
#define MCPX_SANDBOX_LIMITS_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

/* Per-run limits. */
struct mcpx_limits {
	unsigned cpu_s;         /* RLIMIT_CPU soft; hard = soft + 1 */
	unsigned long memory_mb; /* RLIMIT_AS */
	unsigned max_procs;     /* budget added to the uid's current task count */
	unsigned long file_mb;  /* RLIMIT_FSIZE */
	unsigned open_files;    /* RLIMIT_NOFILE */
	pid_t uncounted_pgrp;   /* 0, or the group of a run about to end: not counted for NPROC */
	/* A forked run: bytes of address space its zygote had mapped before
	 * the fork, added to RLIMIT_AS, so that the run can allocate as much
	 * as a cold one (its whole-run budget stays the real limit). */
	unsigned long long as_inherited;
	bool as_hard_open;      /* the zygote: RLIMIT_AS's hard limit open for its children */
	bool channel;           /* the run gets a broker channel (MCPX_SANDBOX_CHANNEL_FD) */
};

/* One resource limit as the child applies it (setrlimit). */
#define MCPX_MAX_RLIMITS 8

struct mcpx_rlimit {
	int resource;
	struct rlimit lim;
};

#endif
