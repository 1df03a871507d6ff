/*
 * zygote_proto.h - the messages between the server (forkserver.c) and the
 * fork server's zygote (src/zygote/zygote.c, the mcp-exec-zygote binary).
 *
 * Private to those two files. Both are built from this tree by the same
 * compiler, so the structures cross the socket as they are: no encoding, no
 * layout written anywhere else. The channel is a SOCK_SEQPACKET socketpair
 * (the zygote's fd MCPX_ZYGOTE_CTL_FD): one message per request or answer,
 * strictly alternating after the first two:
 *
 *   server -> zygote   struct mcpx_zygote_init + filter instructions (once)
 *   zygote -> server   struct mcpx_zygote_reply, ready (once, after preload)
 *   server -> zygote   struct mcpx_zygote_req (fork or reap) [+ fds]
 *   zygote -> server   struct mcpx_zygote_reply
 *
 * A fork request carries the child's fds with SCM_RIGHTS, in this order:
 * stdin (read end), stdout, stderr, the error pipe (write ends), its workdir
 * (O_DIRECTORY), and, for a run with egress, its end of the broker channel.
 * The zygote answers as soon as it has forked; the child reports its setup
 * on the error pipe straight to the server, as a cold run's child does
 * (sandbox_child.h), and closes it once it is ready for its code.
 */
#ifndef MCPX_ZYGOTE_PROTO_H
#define MCPX_ZYGOTE_PROTO_H

#include <linux/filter.h>
#include <stdint.h>
#include <sys/resource.h>

#include "sandbox.h"

/* The control socket's fd in the zygote (sandbox_child.c puts it there). */
#define MCPX_ZYGOTE_CTL_FD 4

/* The kernel's own cap on a classic BPF program (BPF_MAXINSNS). */
#define MCPX_ZYGOTE_MAX_FILTER 4096

enum mcpx_zygote_fd {
	MCPX_ZFD_STDIN,
	MCPX_ZFD_STDOUT,
	MCPX_ZFD_STDERR,
	MCPX_ZFD_ERRPIPE,
	MCPX_ZFD_WORKDIR,
	MCPX_ZFD_CHANNEL, /* only with MCPX_ZREQ_CHANNEL */
	MCPX_ZFD_MAX,
};

/* What every child enforces, computed by the server as for a cold run: the
 * Landlock ABI and paths its ruleset is planned from (landlock.c), and the
 * run's compiled seccomp program (seccomp_policy.c), whose n_filter
 * instructions follow the structure in the same message. */
struct mcpx_zygote_init {
	int32_t landlock_abi; /* 0: no Landlock */
	uint32_t n_filter;    /* 0: no seccomp */
	char runtime_root[4096];
	/* No rule for the zygote's own binary: a run never executes or reads
	 * it (the zygote is already running), so its children's rulesets
	 * leave it out and stay stricter than the zygote's own. */
};

enum mcpx_zygote_op {
	MCPX_ZOP_FORK = 1, /* fork a child for the next run */
	MCPX_ZOP_REAP,     /* reap a run leader the server has finished with */
};

#define MCPX_ZREQ_CHANNEL 1u /* fork: a broker channel is the last fd */

struct mcpx_zygote_req {
	uint32_t op;
	uint32_t flags;
	int32_t pid; /* reap */
	int32_t n_rlimits;
	struct mcpx_rlimit rlimits[MCPX_MAX_RLIMITS]; /* fork: mcpx_sandbox_rlimits */
	char workdir[4096];                           /* fork: its path (HOME, TMPDIR, __file__) */
};

struct mcpx_zygote_reply {
	int32_t pid;      /* fork: the child (still entering its sandbox) */
	int32_t err;      /* 0, or the errno of a failed fork or reap */
	int32_t status;   /* reap: wait status */
	struct rusage ru; /* reap */
};

#endif
