/*
 * sandbox_child.h - what a forked child needs to become a sandboxed process.
 *
 * Private to the sandbox module and the zygote (src/zygote/). The parent
 * fills struct mcpx_child_args completely before fork (the child may not
 * allocate or format anything). A child the server forks then calls
 * mcpx_sandbox_child_exec, which never returns; a child the zygote forks
 * calls mcpx_sandbox_child_setup and continues in the interpreter it already
 * has. Both run the same steps in the same order.
 */
#ifndef MCPX_SANDBOX_CHILD_H
#define MCPX_SANDBOX_CHILD_H

#include <linux/filter.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "err.h"
#include "sandbox.h"

/* The steps, in order. On failure the child writes (step << 16) | errno, as
 * a 32-bit int, to its error pipe and exits with 127. */
enum mcpx_child_step {
	MCPX_STEP_PDEATHSIG = 1,
	MCPX_STEP_SIGNALS,
	MCPX_STEP_SETSID,
	MCPX_STEP_CHDIR,
	MCPX_STEP_FDS,
	MCPX_STEP_CLOSE_FDS,
	MCPX_STEP_OOM_SCORE,
	MCPX_STEP_DROP_UID,
	MCPX_STEP_VERIFY_UID,
	MCPX_STEP_RLIMITS,
	MCPX_STEP_NO_NEW_PRIVS,
	MCPX_STEP_LANDLOCK,
	MCPX_STEP_FS_VIEW, /* where Landlock is absent: a filesystem of its own (fs_view.h) */
	MCPX_STEP_SECCOMP,
	MCPX_STEP_EXECVE,      /* a server's child: exec of the interpreter */
	MCPX_STEP_INTERPRETER, /* a zygote's child: readying the interpreter */
};

/* Where the error pipe is once the fds are installed (close-on-exec). */
#define MCPX_CHILD_ERRPIPE_FD 3
/* Where the binary to execute is, when given as a descriptor (exe_fd):
 * close-on-exec, so the program never holds it. */
#define MCPX_CHILD_EXE_FD 5

struct mcpx_child_args {
	pid_t parent;  /* the server (or the zygote); the child dies with it */
	int stdin_fd;  /* read end of the stdin pipe -> fd 0 */
	int stdout_fd; /* write ends -> fds 1 and 2 */
	int stderr_fd;
	int errpipe_fd; /* -> fd 3, close-on-exec */
	int control_fd; /* -> fd 4: the zygote's control socket or a run's broker channel; or -1 */
	bool keep_handlers; /* a zygote's child: keep the interpreter's signal dispositions */
	bool drop_uid;      /* started as root: become uid/gid with no groups */
	uid_t uid;
	gid_t gid;
	const char *workdir; /* entered by path unless workdir_fd >= 0 */
	int workdir_fd;
	struct mcpx_rlimit rlimits[MCPX_MAX_RLIMITS];
	int n_rlimits;
	int landlock_abi;         /* 0: no Landlock */
	const char *runtime_root; /* extra readable prefix, or NULL */
	/* Without Landlock: enter a private filesystem view (fs_view.h) built
	 * from the same paths; workdir must then be absolute. */
	bool fs_view;
	/* The zygote's binary as an O_PATH fd the server opened before any
	 * uid drop, or -1. When set it is the one extra file Landlock grants
	 * (read and execute) and mcpx_sandbox_child_exec runs it with
	 * execveat, so the run uid never looks up its path: a build tree in
	 * a 0700 home works without opening that home to the run uid. */
	int exe_fd;
	const struct sock_fprog *filter; /* NULL: no seccomp */
	const char *exec_path;           /* what to run: argv[0] and, without exe_fd, the path */
	char *const *argv;
	char *const *envp;
};

/* Runs the setup sequence (async-signal-safe). Returns only when every step
 * held; the error pipe is then fd MCPX_CHILD_ERRPIPE_FD (close-on-exec). */
void mcpx_sandbox_child_setup(const struct mcpx_child_args *a);

/* mcpx_sandbox_child_setup, then execveat of exe_fd or execve of
 * exec_path. Async-signal-safe. */
__attribute__((noreturn)) void mcpx_sandbox_child_exec(const struct mcpx_child_args *a);

/* Writes (step << 16) | err to errfd and exits with 127. */
__attribute__((noreturn)) void mcpx_sandbox_child_fail(int errfd, int step, int err);

/* Name of a step for "sandbox setup failed at step <name>". */
const char *mcpx_sandbox_child_step_name(int step);

/* The parent's side (sandbox.c): turns the value a child wrote to its error
 * pipe into -errno with "sandbox setup failed at step <name>: <error>" in
 * err, the message every caller reports. The zygote forwards the value of
 * its children to the server unchanged, so forked runs read the same. */
int mcpx_sandbox_child_error(int code, struct mcpx_err *err);

#endif
