/*
 * seccomp_policy.h - the sandbox's seccomp filter, compiled once at start-up.
 *
 * Private to the sandbox module; the only file that includes libseccomp.
 */
#ifndef MCPX_SECCOMP_POLICY_H
#define MCPX_SECCOMP_POLICY_H

#include <linux/filter.h>
#include <stdbool.h>
#include <sys/types.h>

#include "err.h"
#include "seccomp_probe.h"

/* The run's policy, or the fork server zygote's: the same minus the setsid
 * denial (the zygote puts each child in its own session, and the child
 * stacks the run's filter before any user code). */
enum mcpx_seccomp_variant {
	MCPX_SECCOMP_RUN,
	MCPX_SECCOMP_ZYGOTE,
};

/* Compiles the deny-list policy into classic BPF; a foreign architecture's
 * syscalls end with badarch (the strongest action mcpx_seccomp_probe saw
 * act; not MCPX_SECCOMP_KILL_NONE). Signals aimed at
 * server_pid, at the server's process group and at every thread the server
 * has right now are denied, so call it after the server's long-lived threads
 * exist. On success out->filter is heap memory owned by the caller; release
 * it with mcpx_seccomp_policy_free. Returns 0 or -errno (message in err). */
int mcpx_seccomp_policy_build(pid_t server_pid, enum mcpx_seccomp_variant variant,
			      enum mcpx_seccomp_kill badarch, struct sock_fprog *out,
			      struct mcpx_err *err);
void mcpx_seccomp_policy_free(struct sock_fprog *prog);

#endif
