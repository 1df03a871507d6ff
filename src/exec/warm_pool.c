/*
 * warm_pool.c - the warm environment (warm_pool.h): prepares the next run's
 * interpreter off the call's critical path, of the kind the run will need
 * (a plain one for code that imports only the standard library, a
 * scientific one for the rest: code_scan.h), recycles one that waited too
 * long, replaces a zygote that died, and degrades after repeated failures
 * (fork server to fresh interpreters, those to cold starts).
 *
 * What it does not do: run anything, or keep the zygotes over time. Each
 * kind's zygotes and prepared child are a slot's (warm_slot.c); processes
 * come from the sandbox (spawn_warm) and the zygotes (zygote_cycle.c); the
 * executor feeds them their code and supervises them as runs.
 */
#include "warm_pool.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "code_scan.h"
#include "config.h"
#include "log.h"
#include "preload.h"
#include "procstat.h"
#include "reap_later.h"
#include "run_hooks.h"
#include "run_limits.h"
#include "warm.h"
#include "warm_child.h"
#include "warm_slot.h"
#include "zygote_cycle.h"

#define MAX_FAILURES 3
/* Fork mode: how long after a run the zygotes are looked at (renewal due,
 * a successor's proof): after the reply and the next child. */
#define ZYGOTE_AFTER_RUN_US 2000u
/* Fork mode: a call that arrives within this long of the previous run's
 * end comes back to back, and the next child is asked for
 * beside it (mcpx_warm_pool_run_started). */
#define BACK_TO_BACK_US 10000u

#define CHILD_ASKED MCPX_WARM_CHILD_ASKED
#define CHILD_READY MCPX_WARM_CHILD_READY
#define CHILD_TAKEN MCPX_WARM_CHILD_TAKEN
#define CHILD_DISCARDED MCPX_WARM_CHILD_DISCARDED

/* The slot of kind k when it is in use, else NULL. */
static struct warm_slot *slot_at(struct mcpx_warm_pool *wp, int k)
{
	return wp->slot[k].used ? &wp->slot[k] : NULL;
}

const char *mcpx_warm_mode_name(enum mcpx_warm_mode m)
{
	return m == MCPX_WARM_MODE_FORK         ? "fork-server"
	       : m == MCPX_WARM_MODE_AFTER_REAP ? "after-reap"
	                                        : "off";
}

enum mcpx_warm_mode mcpx_warm_mode_for(const struct mcpx_config *cfg, const struct mcpx_sandbox *sb)
{
	/* Both warm modes run the zygote binary (src/zygote/). */
	if (cfg->warm == MCPX_WARM_OFF || !sb->zygote[0])
		return MCPX_WARM_MODE_OFF;
	/* A zygote that outlives runs is only safe when run code can neither
	 * write its workdir nor signal or ptrace it: Landlock with signal
	 * scoping (ABI 6), and seccomp for the filter each child stacks. The
	 * server waits for the zygote's children through pidfds (it cannot
	 * waitid a grandchild).
	 * Anywhere else a fresh interpreter is prepared per run, only after
	 * the previous run was reaped. */
	if (cfg->warm == MCPX_WARM_AUTO && sb->layers.landlock && sb->layers.landlock_scope &&
	    sb->layers.seccomp && sb->layers.seccomp_stacks && sb->layers.pidfd)
		return MCPX_WARM_MODE_FORK;
	return MCPX_WARM_MODE_AFTER_REAP;
}

/* The kind a run gets when nothing says otherwise: the plain one where
 * there is one (a run with no imports), else the only one. */
static enum mcpx_warm_kind default_kind(const struct mcpx_warm_pool *wp)
{
	return wp->slot[MCPX_WARM_PLAIN].used ? MCPX_WARM_PLAIN : MCPX_WARM_SCIENTIFIC;
}

/* ---- failures ------------------------------------------------------------ */

/* Fork mode gives up for the rest of the process's life: the zygotes go,
 * and each run gets a fresh interpreter (after-reap, of the scientific
 * kind). A running run may be a zygote's child, which dies with it: the
 * zygotes then go once it has been reaped (run_ended). A child asked for
 * the next run goes with them. */
static void leave_fork_mode(struct mcpx_warm_pool *wp, const char *why)
{
	for (int k = 0; k < MCPX_WARM_KINDS; k++) {
		struct warm_slot *s = slot_at(wp, k);

		if (!s)
			continue;
		mcpx_timer_cancel(&s->zygote_timer);
		/* Still the zygote's: it goes with them (mcpx_zygotes_free). */
		if (s->child.state == CHILD_ASKED)
			mcpx_slot_child_end(s, CHILD_DISCARDED);
		mcpx_zygotes_free(s->leaving);
		s->leaving = s->zyg;
		s->zyg = NULL;
		s->first_deadline_us = 0;
		if (!wp->running) {
			mcpx_zygotes_free(s->leaving);
			s->leaving = NULL;
		}
	}
	/* The plain kind's prepared child (if any) ends with it. */
	mcpx_slot_discard(&wp->slot[MCPX_WARM_PLAIN]);
	wp->slot[MCPX_WARM_PLAIN].used = false;
	wp->failures = 0;
	wp->mode = MCPX_WARM_MODE_AFTER_REAP;
	mcpx_error("fork server given up (%s); a fresh interpreter per run from now on", why);
	mcpx_slot_schedule(&wp->slot[MCPX_WARM_SCIENTIFIC]);
}

static void failed(struct mcpx_warm_pool *wp, const char *why)
{
	mcpx_warn("could not prepare a warm interpreter: %s", why);
	if (++wp->failures < MAX_FAILURES)
		return;
	if (wp->mode == MCPX_WARM_MODE_FORK) {
		leave_fork_mode(wp, "it failed three times in a row");
		return;
	}
	mcpx_error("warm interpreters failed %u times; running cold from now on", wp->failures);
	wp->mode = MCPX_WARM_MODE_OFF;
}

static void zygote_proven(struct mcpx_warm_pool *wp)
{
	char pids[128] = "";
	size_t n = 0;

	for (int k = 0; k < MCPX_WARM_KINDS; k++) {
		const struct warm_slot *s = slot_at(wp, k);

		if (!s)
			continue;
		if (s->first_deadline_us)
			return;
		n += (size_t)snprintf(pids + n, sizeof(pids) - n, "%spid %d (%s)", n ? " and " : "",
		                      (int)mcpx_zygotes_pid(s->zyg),
		                      s->kind == MCPX_WARM_PLAIN ? "plain" : "scientific");
		if (n >= sizeof(pids))
			n = sizeof(pids) - 1;
	}
	if (wp->announced)
		return;
	wp->announced = true;
	mcpx_info("fork server ready: zygotes %s have preloaded and their first children "
	          "passed the self-test",
	          pids);
}

static const struct warm_pool_hooks slot_hooks = {
    .failed = failed, .leave_fork_mode = leave_fork_mode, .zygote_proven = zygote_proven};

/* ---- waiting for the zygote's answer ------------------------------------- */

bool mcpx_warm_pool_wait_kind(struct mcpx_warm_pool *wp, enum mcpx_warm_kind kind,
                              void (*wake)(void *arg), void *arg)
{
	struct warm_slot *s = &wp->slot[kind];

	wp->waiting = false;
	if (wp->mode != MCPX_WARM_MODE_FORK || wp->stopped || !s->used)
		return false;
	/* No child asked for yet (the first run once its zygote is ready, or
	 * after a failed fork): forking on demand still beats a cold start,
	 * and is asked for here so that the run waits for its answer on the
	 * loop rather than in the take. With no zygote of its kind ready
	 * (still preloading, or being replaced) nothing comes sooner than a
	 * cold start: the run starts cold. */
	if (!mcpx_slot_prepared(s))
		mcpx_slot_prepare(s);
	if (s->child.state != CHILD_ASKED || mcpx_zygotes_answered(s->zyg))
		return false;
	wp->waiting = true;
	wp->waiting_kind = kind;
	wp->wake = wake;
	wp->wake_arg = arg;
	return true;
}

bool mcpx_warm_pool_wait(struct mcpx_warm_pool *wp, void (*wake)(void *arg), void *arg)
{
	return mcpx_warm_pool_wait_kind(wp, default_kind(wp), wake, arg);
}

/* ---- the interface ------------------------------------------------------- */

struct mcpx_warm_pool *mcpx_warm_pool_new(struct mcpx_loop *loop, const struct mcpx_config *cfg,
                                          const struct mcpx_sandbox *sb,
                                          const struct mcpx_executor_hooks *hooks)
{
	struct mcpx_warm_pool *wp = calloc(1, sizeof(*wp));
	const char *preload;

	if (!wp)
		return NULL;
	wp->loop = loop;
	wp->cfg = cfg;
	wp->sb = sb;
	wp->hooks = hooks;
	wp->hooks_up = &slot_hooks;
	wp->mode = mcpx_warm_mode_for(cfg, sb);
	preload = mcpx_preload_list(cfg->preload, wp->mode == MCPX_WARM_MODE_FORK);
	for (int k = 0; k < MCPX_WARM_KINDS; k++) {
		wp->slot[k].wp = wp;
		wp->slot[k].kind = (enum mcpx_warm_kind)k;
		mcpx_warm_child_init(&wp->slot[k].child);
	}
	/* The scientific kind preloads MCP_EXEC_PRELOAD; in fork-server mode a
	 * plain zygote beside it (nothing preloaded) takes the runs that
	 * import nothing of that, when there is anything to preload. */
	wp->slot[MCPX_WARM_SCIENTIFIC].used = true;
	wp->slot[MCPX_WARM_SCIENTIFIC].preload = preload;
	wp->slot[MCPX_WARM_PLAIN].used = wp->mode == MCPX_WARM_MODE_FORK && preload[0];
	wp->slot[MCPX_WARM_PLAIN].preload = "";
	wp->last_kind = default_kind(wp);
	return wp;
}

void mcpx_warm_pool_start(struct mcpx_warm_pool *wp)
{
	/* The plain zygote first: it is the one /metrics names (and the one
	 * ready first, its preload being the interpreter alone). */
	for (int k = 0; k < MCPX_WARM_KINDS && wp->mode == MCPX_WARM_MODE_FORK; k++)
		if (slot_at(wp, k))
			mcpx_slot_start_zygotes(&wp->slot[k], k == (int)default_kind(wp));
	for (int k = 0; k < MCPX_WARM_KINDS; k++)
		if (slot_at(wp, k))
			mcpx_slot_prepare(&wp->slot[k]);
}

bool mcpx_warm_pool_starting(const struct mcpx_warm_pool *wp)
{
	const struct warm_slot *s = &wp->slot[default_kind(wp)];

	return wp->mode == MCPX_WARM_MODE_FORK && !wp->stopped && s->first_deadline_us &&
	       mcpx_now_us() < s->first_deadline_us;
}

enum mcpx_warm_kind mcpx_warm_pool_kind(const struct mcpx_warm_pool *wp, const char *code,
                                        size_t code_len, bool scan)
{
	if (!wp->slot[MCPX_WARM_PLAIN].used || !scan)
		return MCPX_WARM_SCIENTIFIC;
	return mcpx_code_plain(code, code_len) ? MCPX_WARM_PLAIN : MCPX_WARM_SCIENTIFIC;
}

/* Whether the prepared process (FORKED) said ready: then it is READY. A
 * forked child still entering its sandbox (a millisecond) is waited for:
 * it is handed over FORKED, and its ready byte will precede its output. A
 * fresh interpreter still preloading can take longer than a cold start: it
 * is discarded and the run starts cold (no second interpreter may exist
 * beside a run in after-reap mode). */
static bool said_ready(struct warm_slot *s, bool *marker_pending)
{
	struct pollfd pfd = {.fd = s->child.proc.pidfd, .events = POLLIN};
	unsigned left = MCPX_WARM_MARKERS_ALL;
	int rc;

	if (poll(&pfd, 1, 0) != 0) {
		mcpx_warn("the warm interpreter exited while waiting; starting cold");
		return false;
	}
	rc = mcpx_warm_marker_read(s->child.proc.stdout_fd, &left, 0);
	if (rc == -EAGAIN && s->wp->mode == MCPX_WARM_MODE_FORK) {
		*marker_pending = true;
		return true;
	}
	if (rc == 0)
		return mcpx_warm_child_to(&s->child, CHILD_READY, "said ready") == 0;
	if (rc != -EAGAIN)
		mcpx_warn("the warm interpreter is not in a usable state; starting cold");
	return false;
}

int mcpx_warm_pool_take_kind(struct mcpx_warm_pool *wp, enum mcpx_warm_kind kind,
                             struct mcpx_sandbox_proc *proc, bool channel, bool *marker_pending,
                             uint64_t *cpu_base_ms, struct mcpx_err *err)
{
	struct warm_slot *s = &wp->slot[kind];
	struct mcpx_err setup_err = {{0}};
	struct mcpx_procstat ps;

	*marker_pending = false;
	*cpu_base_ms = 0;
	if (!s->used)
		return 0;
	/* No child waiting yet (the first run once the zygote is ready, or
	 * after a failed fork): forking on demand still beats a cold start. */
	if (wp->mode == MCPX_WARM_MODE_FORK && !mcpx_slot_prepared(s))
		mcpx_slot_prepare(s);
	if (!mcpx_slot_prepared(s))
		return 0;
	if (s->child.state == CHILD_ASKED && !mcpx_slot_take_pending(s, &setup_err)) {
		if (!setup_err.msg[0])
			return 0;
		*err = setup_err;
		return -EPERM;
	}
	/* Not ready, or prepared without the channel this run needs (or with
	 * one it must not have): the run starts cold. Never kept beside the
	 * run: in after-reap mode nothing may be prepared while a run lives. */
	if ((s->child.state != CHILD_READY && !said_ready(s, marker_pending)) ||
	    (s->child.proc.channel_fd >= 0) != channel) {
		mcpx_slot_discard(s);
		return 0;
	}
	*proc = s->child.proc;
	mcpx_slot_child_end(s, CHILD_TAKEN);
	wp->last_kind = kind;
	/* A warm run reports only the CPU its code used. */
	if (mcpx_procstat_read(proc->pid, &ps) == 0)
		*cpu_base_ms = ps.cpu_ms;
	return 1;
}

int mcpx_warm_pool_take(struct mcpx_warm_pool *wp, struct mcpx_sandbox_proc *proc, bool channel,
                        bool *marker_pending, uint64_t *cpu_base_ms, struct mcpx_err *err)
{
	return mcpx_warm_pool_take_kind(wp, default_kind(wp), proc, channel, marker_pending,
	                                cpu_base_ms, err);
}

void mcpx_warm_pool_discard(struct mcpx_warm_pool *wp)
{
	for (int k = 0; k < MCPX_WARM_KINDS; k++)
		mcpx_slot_discard(&wp->slot[k]);
}

const struct mcpx_sandbox *mcpx_warm_pool_sandbox(const struct mcpx_warm_pool *wp)
{
	return wp->sb;
}

void mcpx_warm_pool_run_started(struct mcpx_warm_pool *wp, pid_t pgrp, uint64_t arrived_us)
{
	/* Measured to the call's arrival: its run starts only once the child
	 * asked for after the previous run is ready. */
	bool back_to_back = wp->last_end_us && arrived_us >= wp->last_end_us &&
	                    arrived_us - wp->last_end_us <= BACK_TO_BACK_US;

	/* A child forked beside a short run competes with it for the CPUs
	 * and the zygote and delays its result (measured: print(1) spaced
	 * 12.2 -> 6.5 ms p50 once the child is asked for after the run
	 * instead, docs/benchmarks.md), so a call that comes alone gets its
	 * successor after it. Calls that arrive back to back would each wait
	 * for that whole preparation (about 18 ms of a 24 ms call here):
	 * there the next child of the kind just taken is asked for now, and
	 * prepared on the other CPU while this run executes. A call already
	 * waiting asks for it too (mcpx_warm_pool_call_waiting). */
	wp->running = pgrp;
	for (int k = 0; k < MCPX_WARM_KINDS; k++)
		if (wp->slot[k].zyg)
			mcpx_zygotes_busy(wp->slot[k].zyg, true);
	if (back_to_back && wp->mode == MCPX_WARM_MODE_FORK) {
		struct warm_slot *s = &wp->slot[wp->last_kind];

		/* The previous reply went out long ago: no turn to yield. */
		s->kick_yield = false;
		mcpx_slot_schedule_in(s, 0);
	}
}

void mcpx_warm_pool_call_waiting(struct mcpx_warm_pool *wp)
{
	/* Its child is forked beside the running run, so that it does not
	 * wait for the fork and setup once that run ends (prepare: fork mode
	 * alone may prepare beside a run). Whichever kind it needs, the only
	 * one missing is the one the running run took. */
	if (wp->mode != MCPX_WARM_MODE_FORK)
		return;
	for (int k = 0; k < MCPX_WARM_KINDS; k++)
		mcpx_slot_schedule_in(&wp->slot[k], 0);
}

void mcpx_warm_pool_run_ended(struct mcpx_warm_pool *wp)
{
	wp->running = 0;
	wp->last_end_us = mcpx_now_us();
	for (int k = 0; k < MCPX_WARM_KINDS; k++) {
		struct warm_slot *s = &wp->slot[k];

		/* Fork mode given up: its zygotes left with the run just reaped. */
		mcpx_zygotes_free(s->leaving);
		s->leaving = NULL;
		if (!s->used)
			continue;
		/* The reply first: the next child (and, fork mode, whatever the
		 * zygotes have due) after the loop's next poll has written it. */
		s->kick_yield = true;
		if (s->zyg)
			mcpx_zygotes_busy(s->zyg, false);
		/* Preparing the next child looks at the zygotes too; when one is
		 * ready already, they get a turn of their own. Each turn of the
		 * loop polls every descriptor: one per run is enough. */
		if (!mcpx_slot_prepared(s) && wp->mode != MCPX_WARM_MODE_OFF && !wp->stopped)
			mcpx_slot_schedule(s);
		else
			mcpx_slot_zygotes_later(s, ZYGOTE_AFTER_RUN_US);
	}
}

void mcpx_warm_pool_stop(struct mcpx_warm_pool *wp)
{
	wp->stopped = true;
	for (int k = 0; k < MCPX_WARM_KINDS; k++) {
		mcpx_timer_cancel(&wp->slot[k].kick);
		mcpx_slot_discard(&wp->slot[k]);
	}
}

enum mcpx_warm_mode mcpx_warm_pool_mode(const struct mcpx_warm_pool *wp)
{
	return wp->mode;
}

bool mcpx_warm_pool_ready(const struct mcpx_warm_pool *wp)
{
	return mcpx_slot_prepared(&wp->slot[default_kind(wp)]);
}

void mcpx_warm_pool_free(struct mcpx_warm_pool *wp)
{
	if (!wp)
		return;
	/* Nobody to wake any more. */
	wp->wake = NULL;
	wp->waiting = false;
	mcpx_warm_pool_stop(wp);
	for (int k = 0; k < MCPX_WARM_KINDS; k++) {
		mcpx_timer_cancel(&wp->slot[k].zygote_timer);
		mcpx_timer_cancel(&wp->slot[k].recycle);
	}
	/* What is still being ended goes first, while its zygotes can still
	 * reap it. */
	mcpx_reap_later_flush();
	for (int k = 0; k < MCPX_WARM_KINDS; k++) {
		mcpx_zygotes_free(wp->slot[k].zyg);
		mcpx_zygotes_free(wp->slot[k].leaving);
	}
	free(wp);
}
