/*
 * sandbox_layers.h - which isolation layers hold on this machine (struct
 * mcpx_sandbox_layers): decided once at start-up by sandbox.c and its
 * probes, then read by every spawn, the self-test, --check-config and
 * /metrics.
 *
 * Plain data, included by sandbox.h; it declares no function and depends on
 * nothing of the project's.
 */
#ifndef MCPX_SANDBOX_LAYERS_H
#define MCPX_SANDBOX_LAYERS_H

#include <stdbool.h>

/* What the kernel gave us, decided once at start-up. */
struct mcpx_sandbox_layers {
	bool seccomp;           /* a filter was seen to act in a throwaway child */
	/* How a foreign ABI's syscall ends, the strongest action seen to act
	 * (seccomp_probe.h): 1 process kill, 2 thread kill, 3 trap; 0 without
	 * seccomp. */
	int seccomp_kill;
	bool seccomp_stacks;    /* a second filter stacks on a first (fork server) */
	bool pidfd;             /* pidfd_open works; else exit watcher threads */
	bool landlock;
	int landlock_abi;       /* 0 when unavailable */
	bool landlock_net;      /* ABI >= 4: TCP bind/connect denied */
	bool landlock_scope;    /* ABI >= 6: signals and abstract sockets scoped */
	/* Without Landlock: each run enters a private filesystem view built
	 * from Landlock's paths (fs_view.h), seen to act at start-up. */
	bool fs_view;
	bool uid_drop;          /* started as root: runs drop to 65532 */
	bool no_new_privs;
	bool rlimits;
	/* RLIMIT_MSGQUEUE can be set: gVisor refuses any change of it (EPERM),
	 * and there seccomp's mq_* denials stand alone. */
	bool msgqueue_limit;
	bool subreaper;
	bool dumpable_off;
	/* The server's environment block, which /proc/<pid>/environ shows,
	 * is zeroed (its variables live on in a heap copy): gVisor serves
	 * that file to every process. */
	bool environ_hidden;
};

#endif
