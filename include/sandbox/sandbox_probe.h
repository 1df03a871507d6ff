/*
 * sandbox_probe.h - the sandbox's self-test: a probe run through the real
 * layers that checks each one marked active really holds, whole
 * (mcpx_sandbox_selftest, mcpx_sandbox_selftest_in) or in pieces for a
 * caller that must not block (struct mcpx_probe_plan).
 *
 * Implemented by sandbox_selftest.c; included by sandbox.h. It starts
 * nothing itself beyond the probe's own process.
 */
#ifndef MCPX_SANDBOX_PROBE_H
#define MCPX_SANDBOX_PROBE_H

#include <stddef.h>

struct mcpx_err;
struct mcpx_sandbox;
struct mcpx_sandbox_proc;

/* Runs a probe through the real sandbox and checks every layer marked active
 * in sb->layers really holds (network denied, writes outside the workdir
 * denied, ...). Returns 0, or -EPERM with the failing layer in err. */
int mcpx_sandbox_selftest(const struct mcpx_sandbox *sb, struct mcpx_err *err);

/* Hands a warm process the probe: its code and its stdin (the process reads
 * the code the way it reads a run's). Returns 0 or -errno with err set. */
typedef int (*mcpx_probe_feed_fn)(void *ctx, struct mcpx_sandbox_proc *proc, const char *code,
				  size_t code_len, const char *input, size_t input_len,
				  struct mcpx_err *err);

/* The same probe and checks as mcpx_sandbox_selftest (the full layer set)
 * in proc, a process started another way (a child forked from the zygote),
 * fed through feed. Kills, reaps and cleans up proc. Returns 0, or -EPERM
 * with the failing layer in err. */
int mcpx_sandbox_selftest_in(const struct mcpx_sandbox *sb, struct mcpx_sandbox_proc *proc,
			     mcpx_probe_feed_fn feed, void *ctx, struct mcpx_err *err);

/* The same probe in pieces, for a caller that runs it without blocking (a
 * new zygote proven in the background, zygote_cycle.c): the code and the
 * stdin to hand the probe, and an abstract socket it must not reach. */
struct mcpx_probe_plan {
	const char *code;
	size_t code_len;
	char input[4400];
	size_t input_len;
	int listen_fd; /* -1 when no abstract socket could be made */
};

/* Fills plan (and opens its listener). Returns 0 or -errno. */
int mcpx_sandbox_probe_plan(const struct mcpx_sandbox *sb, struct mcpx_probe_plan *plan,
			    struct mcpx_err *err);
/* Closes the plan's listener. */
void mcpx_sandbox_probe_plan_free(struct mcpx_probe_plan *plan);
/* The verdict on a probe run of plan: what it printed on stdout (the
 * program's own output, without a warm interpreter's protocol bytes) and
 * its wait status. 0, or -EPERM with the failing layer in err. */
int mcpx_sandbox_probe_verdict(const struct mcpx_sandbox *sb, const struct mcpx_probe_plan *plan,
			       const char *out, size_t len, int status, struct mcpx_err *err);

#endif
