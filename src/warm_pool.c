/*
 * warm_pool.c - the warm environment (warm_pool.h): prepares the next run's
 * interpreter off the call's critical path, recycles one that waited too
 * long, replaces a zygote that died, and degrades after repeated failures
 * (fork server to fresh interpreters, those to cold starts).
 *
 * What it does not do: run anything. Processes come from the sandbox
 * (spawn_warm) and the fork server (forkserver.c); the executor feeds them
 * their code and supervises them as runs.
 */
#include "warm_pool.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "forkserver.h"
#include "log.h"
#include "procstat.h"
#include "warm.h"

/* A warm interpreter that waited this long is replaced, so a long-idle
 * replica does not keep one process (and its preload) forever. */
#define RECYCLE_US (600u * 1000000u)
/* CPU seconds a warm interpreter may spend preloading before it gets code;
 * at code arrival it re-bases the limit on what it used (warm.h). */
#define PRELOAD_CPU_S 120u
#define MAX_FAILURES 3
/* How often a zygote that is still preloading is asked again, and how long
 * start-up waits for the first one. */
#define ZYGOTE_POLL_US 10000u
#define ZYGOTE_START_US (30u * 1000000u)
/* After-reap mode: how long after a run the next interpreter is started. */
#define AFTER_REAP_DELAY_US 50000u

struct mcpx_warm_pool {
	struct mcpx_loop *loop;
	const struct mcpx_config *cfg;
	const struct mcpx_sandbox *sb;
	enum mcpx_warm_mode mode;
	bool stopped;
	pid_t running; /* the running run's process group, or 0 */

	bool ready;   /* proc (or, while pending, the zygote's next child) is prepared */
	bool pending; /* fork mode: asked for, not yet taken from the zygote */
	struct mcpx_sandbox_proc proc;
	struct mcpx_timer recycle;
	struct mcpx_timer kick;
	unsigned failures;

	struct mcpx_forkserver *fs; /* fork mode: the zygote, once started */
	bool zygote_proven;         /* its first child passed the self-test probe */
};

static void prepare(struct mcpx_warm_pool *wp);

const char *mcpx_warm_mode_name(enum mcpx_warm_mode m)
{
	return m == MCPX_WARM_MODE_FORK ? "fork-server"
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
	 * scoping (ABI 6), and seccomp for the filter each child stacks.
	 * Anywhere else a fresh interpreter is prepared per run, only after
	 * the previous run was reaped. */
	if (cfg->warm == MCPX_WARM_AUTO && sb->layers.landlock && sb->layers.landlock_scope &&
	    sb->layers.seccomp)
		return MCPX_WARM_MODE_FORK;
	return MCPX_WARM_MODE_AFTER_REAP;
}

/* ---- failures ------------------------------------------------------------ */

/* Fork mode gives up for the rest of the process's life: the zygote goes,
 * and each run gets a fresh interpreter (after-reap). */
static void leave_fork_mode(struct mcpx_warm_pool *wp, const char *why)
{
	mcpx_forkserver_stop(wp->fs);
	wp->fs = NULL;
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
	prepare(t->arg);
}

/* Prepares the next interpreter on a fresh loop iteration, after the
 * current run's handover or response is on its way. */
static void schedule_in(struct mcpx_warm_pool *wp, uint64_t usec)
{
	if (wp->mode == MCPX_WARM_MODE_OFF || wp->ready || wp->stopped)
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

/* Fork mode: takes the child asked for in prepare from the zygote. A child
 * whose sandbox setup failed is the run's failure (into *setup_err, when
 * given); any other failure only costs the warm start. */
static bool take_pending(struct mcpx_warm_pool *wp, struct mcpx_err *setup_err)
{
	struct mcpx_err err = {{0}};
	bool setup_failed = false;

	wp->pending = false;
	if (mcpx_forkserver_take(wp->fs, &wp->proc, &setup_failed, &err) == 0)
		return true;
	wp->ready = false;
	mcpx_timer_cancel(&wp->recycle);
	if (setup_failed && setup_err)
		*setup_err = err;
	failed(wp, err.msg);
	return false;
}

static void discard(struct mcpx_warm_pool *wp)
{
	if (!wp->ready)
		return;
	wp->ready = false;
	mcpx_timer_cancel(&wp->recycle);
	if (wp->pending && !take_pending(wp, NULL))
		return;
	mcpx_sandbox_kill(&wp->proc);
	(void)mcpx_sandbox_reap(&wp->proc, NULL, NULL);
	mcpx_sandbox_cleanup(&wp->proc);
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
	lim->file_mb = cfg->max_file_mb;
	lim->open_files = 256;
	/* The running run's tasks are gone by the time this one starts. */
	lim->uncounted_pgrp = wp->running;
}

/* ---- the zygote ---------------------------------------------------------- */

/* Fork mode: the zygote is started on first use and replaced when it dies.
 * Returns 1 when it can fork now, 0 when it is still preloading (asked
 * again shortly), -1 on failure. */
static int zygote_ready(struct mcpx_warm_pool *wp, const struct mcpx_limits *lim)
{
	struct mcpx_err err = {{0}};
	int r;

	if (!wp->fs)
		wp->zygote_proven = false;
	if (!wp->fs && mcpx_forkserver_start(wp->sb, mcpx_warm_preload_list(wp->cfg->preload, true),
					     lim, &wp->fs, &err) < 0) {
		failed(wp, err.msg);
		return -1;
	}
	r = mcpx_forkserver_poll(wp->fs);
	if (r == 1 && !wp->zygote_proven) {
		/* Each new zygote's first child must pass the start-up probe;
		 * if it does not, no run is ever forked. */
		if (mcpx_forkserver_selftest(wp->fs, &err) < 0) {
			leave_fork_mode(wp, err.msg);
			schedule(wp);
			return -1;
		}
		wp->zygote_proven = true;
		mcpx_info("fork server ready: the zygote has preloaded and its first child "
			  "passed the self-test");
	}
	if (r < 0) {
		mcpx_forkserver_stop(wp->fs);
		wp->fs = NULL;
		failed(wp, "the fork server's zygote exited");
		schedule(wp);
		return -1;
	}
	if (r == 0)
		schedule_in(wp, ZYGOTE_POLL_US);
	return r;
}

/* At start-up, before anything is served: waits for the first zygote's
 * preload and its self-test, as the cold path's self-test is run before
 * serving. Done later, the probe would hold up the loop while clients
 * wait. A zygote still preloading after the deadline is proven whenever it
 * is ready. */
static void wait_first_zygote(struct mcpx_warm_pool *wp)
{
	struct timespec ts = {0, 5000000};
	uint64_t deadline = mcpx_now_us() + ZYGOTE_START_US;
	struct mcpx_limits lim;

	warm_limits(wp, &lim);
	while (wp->mode == MCPX_WARM_MODE_FORK && zygote_ready(wp, &lim) == 0 &&
	       mcpx_now_us() < deadline)
		nanosleep(&ts, NULL);
	/* The polls above were by hand: none is due on the loop any more
	 * (one is scheduled again if the zygote is still preloading). */
	mcpx_timer_cancel(&wp->kick);
}

static void prepare(struct mcpx_warm_pool *wp)
{
	struct mcpx_limits lim;
	struct mcpx_err err = {{0}};
	int rc;

	if (wp->mode == MCPX_WARM_MODE_OFF || wp->ready || wp->stopped)
		return;
	/* A forked child is prepared while a run executes (its fork and
	 * sandbox setup then overlap the run instead of delaying the next
	 * call): Landlock keeps the two apart, each in its own domain with
	 * signals, abstract sockets and ptrace scoped, neither able to touch
	 * the other's workdir; fork mode requires that (mcpx_warm_mode_for).
	 * A fresh interpreter is prepared only once the previous run is gone. */
	if (wp->running && wp->mode != MCPX_WARM_MODE_FORK)
		return;
	warm_limits(wp, &lim);
	if (wp->mode == MCPX_WARM_MODE_FORK) {
		if (zygote_ready(wp, &lim) <= 0)
			return;
		/* Asked for now, taken (and waited for, if need be) when the
		 * next run starts. */
		rc = mcpx_forkserver_fork(wp->fs, &lim, &err);
		wp->pending = rc == 0;
	} else {
		rc = mcpx_sandbox_spawn_warm(wp->sb, &lim,
					     mcpx_warm_preload_list(wp->cfg->preload, false),
					     &wp->proc, &err);
	}
	if (rc < 0) {
		failed(wp, err.msg);
		return;
	}
	wp->failures = 0;
	wp->ready = true;
	wp->recycle.fn = recycle_cb;
	wp->recycle.arg = wp;
	mcpx_timer_start(wp->loop, &wp->recycle, RECYCLE_US);
}

/* ---- the interface ------------------------------------------------------- */

struct mcpx_warm_pool *mcpx_warm_pool_new(struct mcpx_loop *loop, const struct mcpx_config *cfg,
					  const struct mcpx_sandbox *sb)
{
	struct mcpx_warm_pool *wp = calloc(1, sizeof(*wp));

	if (!wp)
		return NULL;
	wp->loop = loop;
	wp->cfg = cfg;
	wp->sb = sb;
	wp->mode = mcpx_warm_mode_for(cfg, sb);
	mcpx_sandbox_proc_reset(&wp->proc);
	if (wp->mode == MCPX_WARM_MODE_FORK)
		wait_first_zygote(wp);
	prepare(wp);
	return wp;
}

/* Whether the prepared process said ready. A forked child still entering
 * its sandbox (a millisecond) is waited for: its ready byte will precede
 * its output. A fresh interpreter still preloading can take longer than a
 * cold start: it is discarded and the run starts cold (no second
 * interpreter may exist beside a run in after-reap mode). */
static bool said_ready(struct mcpx_warm_pool *wp, bool *marker_pending)
{
	struct pollfd pfd = {.fd = wp->proc.pidfd, .events = POLLIN};
	char marker;
	ssize_t n;

	if (poll(&pfd, 1, 0) != 0) {
		mcpx_warn("the warm interpreter exited while waiting; starting cold");
		return false;
	}
	n = read(wp->proc.stdout_fd, &marker, 1);
	if (n < 0 && errno == EAGAIN && wp->mode == MCPX_WARM_MODE_FORK) {
		*marker_pending = true;
		return true;
	}
	if (n == 1 && marker == '\0')
		return true;
	if (!(n < 0 && errno == EAGAIN))
		mcpx_warn("the warm interpreter is not in a usable state; starting cold");
	return false;
}

int mcpx_warm_pool_take(struct mcpx_warm_pool *wp, struct mcpx_sandbox_proc *proc,
			bool *marker_pending, uint64_t *cpu_base_ms, struct mcpx_err *err)
{
	struct mcpx_err setup_err = {{0}};
	struct mcpx_procstat ps;

	*marker_pending = false;
	*cpu_base_ms = 0;
	/* No child waiting yet (the first run once the zygote is ready, or
	 * after a failed fork): forking on demand still beats a cold start. */
	if (wp->mode == MCPX_WARM_MODE_FORK && !wp->ready)
		prepare(wp);
	if (!wp->ready)
		return 0;
	if (wp->pending && !take_pending(wp, &setup_err)) {
		if (!setup_err.msg[0])
			return 0;
		*err = setup_err;
		return -EPERM;
	}
	if (!said_ready(wp, marker_pending)) {
		discard(wp);
		return 0;
	}
	mcpx_timer_cancel(&wp->recycle);
	*proc = wp->proc;
	mcpx_sandbox_proc_reset(&wp->proc);
	wp->ready = false;
	/* A warm run reports only the CPU its code used. */
	if (mcpx_procstat_read(proc->pid, &ps) == 0)
		*cpu_base_ms = ps.cpu_ms;
	return 1;
}

void mcpx_warm_pool_run_started(struct mcpx_warm_pool *wp, pid_t pgrp)
{
	wp->running = pgrp;
	if (wp->mode == MCPX_WARM_MODE_FORK)
		schedule(wp);
}

void mcpx_warm_pool_run_ended(struct mcpx_warm_pool *wp)
{
	wp->running = 0;
	schedule(wp);
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
	return wp->ready;
}

void mcpx_warm_pool_free(struct mcpx_warm_pool *wp)
{
	if (!wp)
		return;
	mcpx_warm_pool_stop(wp);
	mcpx_forkserver_stop(wp->fs);
	free(wp);
}
