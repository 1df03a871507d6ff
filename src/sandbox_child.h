/*
 * sandbox_child.h - what the forked child needs to become a sandboxed run.
 *
 * Private to the sandbox module. The parent fills struct mcpx_child_args
 * completely before fork (the child may not allocate or format anything),
 * then the child calls mcpx_sandbox_child_exec, which never returns.
 */
#ifndef MCPX_SANDBOX_CHILD_H
#define MCPX_SANDBOX_CHILD_H

#include <linux/filter.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "sandbox.h"

/* The steps, in order. On failure the child writes (step << 16) | errno, as
 * a 32-bit int, to its error pipe and exits with 127. */
enum mcpx_child_step {
	MCPX_STEP_PDEATHSIG = 1,
	MCPX_STEP_SIGNALS,
	MCPX_STEP_SETSID,
	MCPX_STEP_FDS,
	MCPX_STEP_CLOSE_FDS,
	MCPX_STEP_OOM_SCORE,
	MCPX_STEP_DROP_UID,
	MCPX_STEP_VERIFY_UID,
	MCPX_STEP_CHDIR,
	MCPX_STEP_RLIMITS,
	MCPX_STEP_NO_NEW_PRIVS,
	MCPX_STEP_LANDLOCK,
	MCPX_STEP_SECCOMP,
	MCPX_STEP_EXECVE,
};

struct mcpx_child_args {
	pid_t parent;  /* the server; the child dies with it */
	int stdin_fd;  /* read end of the stdin pipe -> fd 0 */
	int stdout_fd; /* write ends -> fds 1 and 2 */
	int stderr_fd;
	int errpipe_fd; /* -> fd 3, close-on-exec */
	int control_fd; /* -> fd 4: the zygote's control socket or a run's broker channel; or -1 */
	bool drop_uid;  /* started as root: become uid/gid with no groups */
	uid_t uid;
	gid_t gid;
	const char *workdir;
	struct mcpx_rlimit rlimits[MCPX_MAX_RLIMITS];
	int n_rlimits;
	int landlock_abi;                /* 0: no Landlock */
	const char *runtime_root;        /* extra readable prefix, or NULL */
	const struct sock_fprog *filter; /* NULL: no seccomp */
	const char *python;
	char *const *argv;
	char *const *envp;
};

/* Runs the setup sequence and execs the interpreter. Async-signal-safe. */
__attribute__((noreturn)) void mcpx_sandbox_child_exec(const struct mcpx_child_args *a);

/* Name of a step for "sandbox setup failed at step <name>". */
const char *mcpx_sandbox_child_step_name(int step);

#endif
