/*
 * warm_pool.c - the warm environment (warm_pool.h): prepares the next run's
 * interpreter off the call's critical path, recycles one that waited too
 * long, replaces a zygote that died, and degrades after repeated failures
 * (fork server to fresh interpreters, those to cold starts).
 *
 * What it does not do: run anything, or keep the zygotes over time.
 * Processes come from the sandbox (spawn_warm) and the zygotes
 * (zygote_cycle.c: started, proven, renewed after MCP_EXEC_WARM_MAX_RUNS
 * runs or MCP_EXEC_WARM_MAX_AGE_S seconds, retired); the executor feeds them
 * their code and supervises them as runs.
 */
#include "warm_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "preload.h"
#include "procstat.h"
#include "run_hooks.h"
#include "warm.h"
#include "warm_child.h"
#include "zygote_cycle.h"

/* A warm interpreter that waited this long is replaced, so a long-idle
 * replica does not keep one process (and its preload) forever. */
#define RECYCLE_US (600u * 1000000u)
/* CPU seconds a warm interpreter may spend preloading before it gets code;
 * at code arrival it re-bases the limit on what it used (warm.h). */
#define PRELOAD_CPU_S 120u
#define MAX_FAILURES 3
/* How long runs wait for the first zygote after start-up. */
#define ZYGOTE_START_US (30u * 1000000u)
/* After-reap mode: how long after a run the next interpreter is started. */
#define AFTER_REAP_DELAY_US 50000u
/* Fork mode: how long after a run the zygotes are looked at (renewal due,
 * a successor's proof): after the reply and the next child. */
#define ZYGOTE_AFTER_RUN_US 2000u
/* Fork mode: a call that arrives within this long of the previous run's
 * end comes back to back, and the next child is asked for
 * beside it (mcpx_warm_pool_run_started). */
#define BACK_TO_BACK_US 10000u

struct mcpx_warm_pool {
	struct mcpx_loop *loop;
	const struct mcpx_config *cfg;
	const struct mcpx_sandbox *sb;
	const struct mcpx_executor_hooks *hooks; /* may be NULL: no run gets a channel */
	enum mcpx_warm_mode mode;
	bool stopped;
	pid_t running; /* the running run's process group, or 0 */

	/* The next run's interpreter: its state and, once it exists, its
	 * process (warm_child.h). The one record of it: the zygotes and the
	 * fork server keep only what they need to answer for it. */
	struct mcpx_warm_child child;
	struct mcpx_timer recycle;
	struct mcpx_timer kick;
	/* The kick waits one more loop iteration first: set when a run has
	 * just ended, so that its reply is written before anything is
	 * prepared (see run_ended). */
	bool kick_yield;
	unsigned failures;
	uint64_t last_end_us; /* when the last run ended (0: none yet) */

	/* Fork mode: a run waits for the zygote's answer to its fork
	 * (mcpx_warm_pool_wait): a watch on a dup of its control socket. */
	struct mcpx_watch answer;
	bool answer_watched;
	bool answer_late; /* the wait timed out: the next start takes at once */
	uint64_t answer_deadline_us;
	struct mcpx_timer answer_timer;
	void (*wake)(void *arg);
	void *wake_arg;

	struct mcpx_zygotes *zyg;         /* fork mode: the zygotes (zygote_cycle.h) */
	uint64_t first_deadline_us;       /* fork mode: runs wait for the first zygote
	                                   * until then; 0 once it is proven or given up */
	struct mcpx_zygotes *zyg_leaving; /* fork mode ended: freed once no run of theirs is left */
	struct mcpx_timer zygote_timer;
};

static void prepare(struct mcpx_warm_pool *wp);

/* ---- the child's state --------------------------------------------------- */

#define CHILD_NONE MCPX_WARM_CHILD_NONE
#define CHILD_ASKED MCPX_WARM_CHILD_ASKED
#define CHILD_FORKED MCPX_WARM_CHILD_FORKED
#define CHILD_READY MCPX_WARM_CHILD_READY
#define CHILD_TAKEN MCPX_WARM_CHILD_TAKEN
#define CHILD_DISCARDED MCPX_WARM_CHILD_DISCARDED

static bool prepared(const struct mcpx_warm_pool *wp)
{
	return mcpx_warm_child_prepared(&wp->child);
}

/* Ends the child's life, handed to a run (its process is the run's now)
 * or discarded (its process, if any, already ended): the next one starts
 * from nothing. */
static void child_end(struct mcpx_warm_pool *wp, enum mcpx_warm_child_state how)
{
	mcpx_timer_cancel(&wp->recycle);
	(void)mcpx_warm_child_end(&wp->child, how);
}

/* Kills, reaps and cleans up the child's process (FORKED or READY). */
static void end_process(struct mcpx_warm_pool *wp)
{
	mcpx_sandbox_kill(&wp->child.proc);
	(void)mcpx_sandbox_reap(&wp->child.proc, NULL, NULL);
	mcpx_sandbox_cleanup(&wp->child.proc);
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

/* ---- failures ------------------------------------------------------------ */

/* Fork mode gives up for the rest of the process's life: the zygotes go,
 * and each run gets a fresh interpreter (after-reap). A running run may be
 * a zygote's child, which dies with it: the zygotes then go once it has
 * been reaped (run_ended). A child asked for the next run goes with them. */
static void leave_fork_mode(struct mcpx_warm_pool *wp, const char *why)
{
	mcpx_timer_cancel(&wp->zygote_timer);
	/* Still the zygote's: it goes with them (mcpx_zygotes_free). */
	if (wp->child.state == CHILD_ASKED)
		child_end(wp, CHILD_DISCARDED);
	mcpx_zygotes_free(wp->zyg_leaving);
	wp->zyg_leaving = wp->zyg;
	wp->zyg = NULL;
	if (!wp->running) {
		mcpx_zygotes_free(wp->zyg_leaving);
		wp->zyg_leaving = NULL;
	}
	wp->failures = 0;
	wp->mode = MCPX_WARM_MODE_AFTER_REAP;
	mcpx_error("fork server given up (%s); a fresh interpreter per run from now on", why);
}

/* Counts a failure to prepare; after a few in a row the mode degrades. */
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

/* ---- scheduling ---------------------------------------------------------- */

static void kick_cb(struct mcpx_timer *t)
{
	struct mcpx_warm_pool *wp = t->arg;

	/* A timer due now runs before the loop polls its sockets, so the
	 * reply the ended run's caller waits for would be written only after
	 * the preparation. Armed again from here it is due only after that
	 * poll (the loop takes the time once per pass of its timers). */
	if (wp->kick_yield) {
		wp->kick_yield = false;
		mcpx_timer_start(wp->loop, &wp->kick, 1);
		return;
	}
	prepare(wp);
}

/* Prepares the next interpreter on a fresh loop iteration, after the
 * current run's handover or response is on its way. */
static void schedule_in(struct mcpx_warm_pool *wp, uint64_t usec)
{
	if (wp->mode == MCPX_WARM_MODE_OFF || prepared(wp) || wp->stopped)
		return;
	wp->kick.fn = kick_cb;
	wp->kick.arg = wp;
	mcpx_timer_start(wp->loop, &wp->kick, usec);
}

/* A fresh interpreter is started a little after a run, so that back-to-back
 * calls (which would find it still preloading, discard it and start cold)
 * do not pay for starting and killing one each time. */
static void schedule(struct mcpx_warm_pool *wp)
{
	schedule_in(wp, wp->mode == MCPX_WARM_MODE_AFTER_REAP ? AFTER_REAP_DELAY_US : 0);
}

/* ---- the prepared process ------------------------------------------------ */

/* Fork mode: takes the child asked for in prepare from the zygote (ASKED
 * to FORKED). A child whose sandbox setup failed is the run's failure
 * (into *setup_err, when given); any other failure only costs the warm
 * start. */
static bool take_pending(struct mcpx_warm_pool *wp, struct mcpx_err *setup_err)
{
	struct mcpx_err err = {{0}};
	bool setup_failed = false;

	if (wp->zyg && mcpx_zygotes_take(wp->zyg, &wp->child.proc, &setup_failed, &err) == 0) {
		if (mcpx_warm_child_to(&wp->child, CHILD_FORKED, "taken from the zygote") == 0)
			return true;
		end_process(wp);
		mcpx_err_set(&err, EPROTO, "the warm child's state was inconsistent");
		setup_failed = false;
	}
	child_end(wp, CHILD_DISCARDED);
	if (setup_failed && setup_err)
		*setup_err = err;
	failed(wp, err.msg);
	return false;
}

static void discard(struct mcpx_warm_pool *wp)
{
	if (!prepared(wp))
		return;
	if (wp->child.state == CHILD_ASKED && !take_pending(wp, NULL))
		return;
	end_process(wp);
	child_end(wp, CHILD_DISCARDED);
}

static void recycle_cb(struct mcpx_timer *t)
{
	struct mcpx_warm_pool *wp = t->arg;

	discard(wp);
	prepare(wp);
}

/* The limits a warm process is prepared with (the CPU limit is re-based
 * when the code arrives). */
static void warm_limits(const struct mcpx_warm_pool *wp, struct mcpx_limits *lim)
{
	const struct mcpx_config *cfg = wp->cfg;
	unsigned cpu = cfg->cpu_s ? cfg->cpu_s : cfg->max_timeout_s;

	memset(lim, 0, sizeof(*lim));
	lim->cpu_s = cpu + PRELOAD_CPU_S;
	lim->memory_mb = cfg->memory_mb;
	lim->max_procs = cfg->max_procs;
	lim->file_mb = mcpx_config_file_mb(cfg);
	lim->open_files = 256;
	lim->channel = wp->hooks && wp->hooks->exec_wants_channel &&
	               wp->hooks->exec_wants_channel(wp->hooks->arg);
	/* The running run's tasks are gone by the time this one starts. */
	lim->uncounted_pgrp = wp->running;
}

/* ---- the zygote ---------------------------------------------------------- */

static void zygote_timer_cb(struct mcpx_timer *t);

/* Fork mode: lets the zygotes do what is due (zygote_cycle.h: preload and
 * proof of a new one, renewal, replacing a dead one) and asks again when
 * they say. Returns 1 when a fork can be asked for now, 0 when not (runs
 * start cold), -1 when fork mode ended. */
static int zygote_ready(struct mcpx_warm_pool *wp)
{
	struct mcpx_err err = {{0}};
	uint64_t next_us = 0;
	int r;

	if (!wp->zyg)
		return -1;
	r = mcpx_zygotes_poll(wp->zyg, &next_us, &err);
	if (r != 0)
		wp->first_deadline_us = 0;
	if (r < 0) {
		leave_fork_mode(wp, err.msg);
		schedule(wp);
		return -1;
	}
	if (next_us) {
		wp->zygote_timer.fn = zygote_timer_cb;
		wp->zygote_timer.arg = wp;
		mcpx_timer_start(wp->loop, &wp->zygote_timer, next_us);
	}
	return r;
}

static void zygote_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_warm_pool *wp = t->arg;

	/* While a run executes, its successor waits for its end (run_ended)
	 * or for a call queued behind it (call_waiting). */
	if (prepared(wp) || wp->stopped || wp->running)
		(void)zygote_ready(wp);
	else
		prepare(wp);
}

/* At start-up: starts the zygotes and returns at once. The first one's
 * preload and self-test probe go on in the background (zygote_ready on the
 * zygote timer), so the server answers protocol requests meanwhile; runs
 * wait for it (mcpx_warm_pool_starting), so the first calls are forked and
 * none starts before the probe has judged the zygote. One still preloading
 * after ZYGOTE_START_US is proven in the background like every later one,
 * and runs start cold until then. */
static void start_first_zygote(struct mcpx_warm_pool *wp)
{
	struct mcpx_zygote_policy pol = {
	    .max_runs = wp->cfg->warm_max_runs,
	    .max_age_us = (uint64_t)wp->cfg->warm_max_age_s * 1000000u,
	};
	struct mcpx_err err = {{0}};
	struct mcpx_limits lim;

	warm_limits(wp, &lim);
	if (mcpx_zygotes_new(wp->sb, mcpx_preload_list(wp->cfg->preload, true), &lim, &pol,
	                     &wp->zyg, &err) < 0) {
		leave_fork_mode(wp, err.msg);
		return;
	}
	wp->first_deadline_us = mcpx_now_us() + ZYGOTE_START_US;
}

static void prepare(struct mcpx_warm_pool *wp)
{
	struct mcpx_limits lim;
	struct mcpx_err err = {{0}};
	enum mcpx_warm_child_state next;
	int rc;

	if (wp->mode == MCPX_WARM_MODE_OFF || prepared(wp) || wp->stopped)
		return;
	/* A forked child may be prepared while a run executes (for a call
	 * queued behind it): Landlock keeps the two apart, each in its own domain
	 * with signals, abstract sockets and ptrace scoped, neither able to
	 * touch the other's workdir; fork mode requires that
	 * (mcpx_warm_mode_for). A fresh interpreter is prepared only once the
	 * previous run is gone. */
	if (wp->running && wp->mode != MCPX_WARM_MODE_FORK)
		return;
	warm_limits(wp, &lim);
	if (wp->mode == MCPX_WARM_MODE_FORK) {
		if (zygote_ready(wp) <= 0)
			return;
		/* Asked for now, taken (and waited for, if need be) when the
		 * next run starts. */
		rc = mcpx_zygotes_fork(wp->zyg, &lim, &err);
		next = CHILD_ASKED;
	} else {
		/* Its preload under the run's memory limit, which it raises by
		 * what it maps once its code arrives (src/zygote/interp.c). */
		lim.as_hard_open = true;
		rc = mcpx_sandbox_spawn_warm(wp->sb, &lim,
		                             mcpx_preload_list(wp->cfg->preload, false),
		                             &wp->child.proc, &err);
		next = CHILD_FORKED;
	}
	if (rc < 0) {
		failed(wp, err.msg);
		return;
	}
	if (mcpx_warm_child_to(&wp->child, next, "prepared") < 0) {
		failed(wp, "the warm child's state was inconsistent");
		return;
	}
	wp->failures = 0;
	wp->recycle.fn = recycle_cb;
	wp->recycle.arg = wp;
	mcpx_timer_start(wp->loop, &wp->recycle, RECYCLE_US);
}

/* ---- waiting for the zygote's answer ------------------------------------- */

/* How long a run waits for the zygote's answer to its fork on the loop,
 * and how often it looks whether the fork is still the one it waits for
 * (a successor zygote that takes over reads the old one's answer itself
 * and asks its own zygote: the watched socket then stays quiet). */
#define ANSWER_WAIT_US (5u * 1000000u)
#define ANSWER_CHECK_US 5000u

static void answer_cb(struct mcpx_watch *w, int events)
{
	struct mcpx_warm_pool *wp = w->arg;

	if (events & MCPX_EV_READ) {
		mcpx_loop_unwatch(w);
		return;
	}
	if (events & MCPX_EV_CLOSED) {
		wp->answer_watched = false;
		mcpx_timer_cancel(&wp->answer_timer);
		if (wp->wake)
			wp->wake(wp->wake_arg);
	}
}

static void answer_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_warm_pool *wp = t->arg;

	if (!wp->answer_watched)
		return;
	if (mcpx_now_us() >= wp->answer_deadline_us) {
		wp->answer_late = true;
	} else if (wp->child.state == CHILD_ASKED && wp->zyg &&
	           mcpx_zygotes_unanswered_fd(wp->zyg) >= 0) {
		mcpx_timer_start(wp->loop, &wp->answer_timer, ANSWER_CHECK_US);
		return;
	}
	mcpx_loop_unwatch(&wp->answer);
}

bool mcpx_warm_pool_wait(struct mcpx_warm_pool *wp, void (*wake)(void *arg), void *arg)
{
	int fd;

	if (wp->answer_late || wp->mode != MCPX_WARM_MODE_FORK || wp->child.state != CHILD_ASKED) {
		wp->answer_late = false;
		return false;
	}
	if (wp->answer_watched)
		return true;
	fd = mcpx_zygotes_unanswered_fd(wp->zyg);
	if (fd < 0)
		return false;
	/* The loop closes what it watches: a duplicate, so the socket stays. */
	fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return false;
	wp->answer.fd = fd;
	wp->answer.fn = answer_cb;
	wp->answer.arg = wp;
	if (mcpx_loop_watch(wp->loop, &wp->answer) < 0) {
		close(fd);
		return false;
	}
	wp->answer_watched = true;
	wp->wake = wake;
	wp->wake_arg = arg;
	wp->answer_deadline_us = mcpx_now_us() + ANSWER_WAIT_US;
	wp->answer_timer.fn = answer_timer_cb;
	wp->answer_timer.arg = wp;
	mcpx_timer_start(wp->loop, &wp->answer_timer, ANSWER_CHECK_US);
	return true;
}

/* ---- the interface ------------------------------------------------------- */

struct mcpx_warm_pool *mcpx_warm_pool_new(struct mcpx_loop *loop, const struct mcpx_config *cfg,
                                          const struct mcpx_sandbox *sb,
                                          const struct mcpx_executor_hooks *hooks)
{
	struct mcpx_warm_pool *wp = calloc(1, sizeof(*wp));

	if (!wp)
		return NULL;
	wp->loop = loop;
	wp->cfg = cfg;
	wp->sb = sb;
	wp->hooks = hooks;
	wp->mode = mcpx_warm_mode_for(cfg, sb);
	mcpx_warm_child_init(&wp->child);
	return wp;
}

void mcpx_warm_pool_start(struct mcpx_warm_pool *wp)
{
	if (wp->mode == MCPX_WARM_MODE_FORK)
		start_first_zygote(wp);
	prepare(wp);
}

bool mcpx_warm_pool_starting(const struct mcpx_warm_pool *wp)
{
	return wp->mode == MCPX_WARM_MODE_FORK && !wp->stopped && wp->first_deadline_us &&
	       mcpx_now_us() < wp->first_deadline_us;
}

/* Whether the prepared process (FORKED) said ready: then it is READY. A
 * forked child still entering its sandbox (a millisecond) is waited for:
 * it is handed over FORKED, and its ready byte will precede its output. A
 * fresh interpreter still preloading can take longer than a cold start: it
 * is discarded and the run starts cold (no second interpreter may exist
 * beside a run in after-reap mode). */
static bool said_ready(struct mcpx_warm_pool *wp, bool *marker_pending)
{
	struct pollfd pfd = {.fd = wp->child.proc.pidfd, .events = POLLIN};
	unsigned left = MCPX_WARM_MARKERS_ALL;
	int rc;

	if (poll(&pfd, 1, 0) != 0) {
		mcpx_warn("the warm interpreter exited while waiting; starting cold");
		return false;
	}
	rc = mcpx_warm_marker_read(wp->child.proc.stdout_fd, &left, 0);
	if (rc == -EAGAIN && wp->mode == MCPX_WARM_MODE_FORK) {
		*marker_pending = true;
		return true;
	}
	if (rc == 0)
		return mcpx_warm_child_to(&wp->child, CHILD_READY, "said ready") == 0;
	if (rc != -EAGAIN)
		mcpx_warn("the warm interpreter is not in a usable state; starting cold");
	return false;
}

int mcpx_warm_pool_take(struct mcpx_warm_pool *wp, struct mcpx_sandbox_proc *proc, bool channel,
                        bool *marker_pending, uint64_t *cpu_base_ms, struct mcpx_err *err)
{
	struct mcpx_err setup_err = {{0}};
	struct mcpx_procstat ps;

	*marker_pending = false;
	*cpu_base_ms = 0;
	/* No child waiting yet (the first run once the zygote is ready, or
	 * after a failed fork): forking on demand still beats a cold start. */
	if (wp->mode == MCPX_WARM_MODE_FORK && !prepared(wp))
		prepare(wp);
	if (!prepared(wp))
		return 0;
	if (wp->child.state == CHILD_ASKED && !take_pending(wp, &setup_err)) {
		if (!setup_err.msg[0])
			return 0;
		*err = setup_err;
		return -EPERM;
	}
	/* Not ready, or prepared without the channel this run needs (or with
	 * one it must not have): the run starts cold. Never kept beside the
	 * run: in after-reap mode nothing may be prepared while a run lives. */
	if ((wp->child.state != CHILD_READY && !said_ready(wp, marker_pending)) ||
	    (wp->child.proc.channel_fd >= 0) != channel) {
		discard(wp);
		return 0;
	}
	*proc = wp->child.proc;
	child_end(wp, CHILD_TAKEN);
	/* A warm run reports only the CPU its code used. */
	if (mcpx_procstat_read(proc->pid, &ps) == 0)
		*cpu_base_ms = ps.cpu_ms;
	return 1;
}

void mcpx_warm_pool_cold_run(struct mcpx_warm_pool *wp)
{
	if (wp->mode == MCPX_WARM_MODE_AFTER_REAP && prepared(wp))
		discard(wp);
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
	 * there the next child is asked for now, and prepared on the other
	 * CPU while this run executes. A call already waiting asks for it
	 * too (mcpx_warm_pool_call_waiting). */
	wp->running = pgrp;
	if (wp->zyg)
		mcpx_zygotes_busy(wp->zyg, true);
	if (back_to_back && wp->mode == MCPX_WARM_MODE_FORK) {
		/* The previous reply went out long ago: no turn to yield. */
		wp->kick_yield = false;
		schedule_in(wp, 0);
	}
}

void mcpx_warm_pool_call_waiting(struct mcpx_warm_pool *wp)
{
	/* Its child is forked beside the running run, so that it does not
	 * wait for the fork and setup once that run ends (prepare: fork mode
	 * alone may prepare beside a run). */
	if (wp->mode == MCPX_WARM_MODE_FORK)
		schedule_in(wp, 0);
}

void mcpx_warm_pool_run_ended(struct mcpx_warm_pool *wp)
{
	wp->running = 0;
	wp->last_end_us = mcpx_now_us();
	if (wp->zyg_leaving) {
		mcpx_zygotes_free(wp->zyg_leaving);
		wp->zyg_leaving = NULL;
	}
	/* The reply first: the next child (and, fork mode, whatever the
	 * zygotes have due) after the loop's next poll has written it. */
	wp->kick_yield = true;
	if (wp->zyg)
		mcpx_zygotes_busy(wp->zyg, false);
	/* Preparing the next child looks at the zygotes too (prepare); when
	 * one is ready already, they get a turn of their own. Each turn of
	 * the loop polls every descriptor: one per run is enough. */
	if (!prepared(wp) && wp->mode != MCPX_WARM_MODE_OFF && !wp->stopped) {
		schedule(wp);
	} else if (wp->zyg) {
		wp->zygote_timer.fn = zygote_timer_cb;
		wp->zygote_timer.arg = wp;
		mcpx_timer_start(wp->loop, &wp->zygote_timer, ZYGOTE_AFTER_RUN_US);
	}
}

void mcpx_warm_pool_stop(struct mcpx_warm_pool *wp)
{
	wp->stopped = true;
	mcpx_timer_cancel(&wp->kick);
	discard(wp);
}

enum mcpx_warm_mode mcpx_warm_pool_mode(const struct mcpx_warm_pool *wp)
{
	return wp->mode;
}

bool mcpx_warm_pool_ready(const struct mcpx_warm_pool *wp)
{
	return prepared(wp);
}

void mcpx_warm_pool_free(struct mcpx_warm_pool *wp)
{
	if (!wp)
		return;
	/* Nobody to wake any more. */
	wp->wake = NULL;
	mcpx_timer_cancel(&wp->answer_timer);
	if (wp->answer_watched)
		mcpx_loop_unwatch(&wp->answer);
	mcpx_warm_pool_stop(wp);
	mcpx_timer_cancel(&wp->zygote_timer);
	mcpx_zygotes_free(wp->zyg);
	mcpx_zygotes_free(wp->zyg_leaving);
	free(wp);
}
