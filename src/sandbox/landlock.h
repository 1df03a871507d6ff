/*
 * landlock.h - the Landlock layer of the sandbox: probe the ABI once in the
 * parent, apply the per-run ruleset in the child.
 *
 * Private to the sandbox module (and the zygote). Debian 12's
 * <linux/landlock.h> stops at ABI 2, so landlock.c supplies the newer
 * constants and the ABI 6 ruleset attribute itself; glibc has no wrappers,
 * so the syscalls go through syscall(2) with the header's numbers.
 */
#ifndef MCPX_LANDLOCK_H
#define MCPX_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MCPX_LANDLOCK_MAX_RULES 16

/* One ruleset as data: what it handles and which paths it grants. Built on
 * the stack (async-signal-safe), so a child can enforce it. */
struct mcpx_landlock_plan {
	uint64_t handled_fs;
	uint64_t handled_net;
	uint64_t scoped;
	struct {
		const char *path; /* rules[0] is always the run's workdir */
		int fd;           /* an O_PATH fd opened for this rule, or -1: open path */
		uint64_t rights;
		bool optional; /* skipped when the path does not exist */
	} rules[MCPX_LANDLOCK_MAX_RULES];
	size_t n_rules;
};

/* Returns the kernel's Landlock ABI version (1, 2, ...), or 0 when Landlock is
 * not built in or disabled at boot. */
int mcpx_landlock_abi(void);

/* The single file a ruleset lets the process read and execute beyond the
 * runtime's directories: the zygote's binary, which may live where the run
 * uid cannot look up its path (a build tree in root's 0700 home). fd is an
 * O_PATH descriptor the server opened before any uid drop; the rule is
 * built from it, so no path lookup happens as the run uid. path is only
 * for reading the plan (mcpx_sandbox_run_may_read). */
struct mcpx_landlock_exe {
	const char *path;
	int fd;
};

/* Restricts the calling process (and everything it later execs or forks):
 * writes only beneath workdir, /dev/null and /dev/shm; reads and execution
 * only beneath the runtime's directories, the workdir and runtime_root (may
 * be NULL), plus reading and executing the single file exe (may be NULL);
 * TCP bind/connect denied (ABI >= 4); signals and abstract unix sockets
 * scoped (ABI >= 6). Requires no_new_privs. Only async-signal-safe
 * syscalls: it runs in the forked child. Returns 0 or -errno. */
int mcpx_landlock_apply(int abi, const char *workdir, const char *runtime_root,
                        const struct mcpx_landlock_exe *exe);

/* The ruleset mcpx_landlock_apply enforces, for abi >= 1. */
void mcpx_landlock_plan(int abi, const char *workdir, const char *runtime_root,
                        const struct mcpx_landlock_exe *exe, struct mcpx_landlock_plan *plan);
/* Enforces a plan on the calling process. Async-signal-safe. */
int mcpx_landlock_enforce(const struct mcpx_landlock_plan *plan);

#endif
