/*
 * seccomp_probe.h - what seccomp really does here, seen in a throwaway child.
 *
 * Private to the sandbox module. The probe installs small filters in forked
 * children and watches them act, instead of asking the kernel
 * (SECCOMP_GET_ACTION_AVAIL), which a valid implementation may lack: gVisor
 * filters syscalls but has no such query.
 */
#ifndef MCPX_SECCOMP_PROBE_H
#define MCPX_SECCOMP_PROBE_H

#include <stdbool.h>

/* How a syscall the filter forbids outright (one of a foreign ABI) ends. */
enum mcpx_seccomp_kill {
	MCPX_SECCOMP_KILL_NONE = 0, /* no action stops it: seccomp cannot be used */
	MCPX_SECCOMP_KILL_PROCESS,  /* every thread of the process ends (Linux >= 4.14) */
	MCPX_SECCOMP_KILL_THREAD,   /* the calling thread ends (gVisor, Linux < 4.14) */
	MCPX_SECCOMP_KILL_TRAP,     /* SIGSYS, which the program may catch; the call never runs */
};

struct mcpx_seccomp_support {
	/* A filter installs with no_new_privs and its SECCOMP_RET_ERRNO
	 * answer reaches the caller: the deny-list works. */
	bool filter;
	/* A second filter stacks on the first and both act (a fork-server
	 * child stacks the run's filter on the zygote's). */
	bool stacks;
	/* The strongest kill action seen to act, for foreign ABIs. */
	enum mcpx_seccomp_kill kill;
	/* The kernel answers SECCOMP_GET_ACTION_AVAIL (reported only). */
	bool action_query;
};

/* Probes in forked children (each reaped here, by pid, before the next) and
 * fills out. Blocks for a few milliseconds; call at start-up only. Never
 * fails: what could not be seen to act is reported absent. */
void mcpx_seccomp_probe(struct mcpx_seccomp_support *out);

/* "kill-process", "kill-thread", "trap" or "none". */
const char *mcpx_seccomp_kill_name(enum mcpx_seccomp_kill k);

#endif
