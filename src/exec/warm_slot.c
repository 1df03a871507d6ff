/*
 * warm_slot.c - one kind of warm child (warm_slot.h): its zygotes
 * and the child prepared for the next run of that kind.
 *
 * What it does: in fork-server mode starts the kind's zygotes
 * (zygote_cycle.h: proven, renewed, retired), asks them for a child once
 * a run has ended (or beside it when calls come back to back or queue),
 * takes the asked-for child when a run needs it, and ends a child that
 * waited RECYCLE_US or that nobody may take now; in after-reap mode it
 * starts one fresh interpreter after a run. Every end is without waiting
 * on the loop (reap_later.h, the zygote's answers on its watch).
 *
 * What it does not do: choose the kind of a run, count failures or change
 * the mode (warm_pool.c).
 */
#include "warm_slot.h"

#include <errno.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "preload.h"
#include "reap_later.h"
#include "run_hooks.h"
#include "run_limits.h"
#include "zygote_cycle.h"

/* A warm interpreter that waited this long is replaced, so a long-idle
 * replica does not keep one process (and its preload) forever. */
#define RECYCLE_US (600u * 1000000u)
/* How long runs may wait for the first zygote after start-up. */
#define ZYGOTE_START_US (30u * 1000000u)
/* After-reap mode: how long after a run the next interpreter is started. */
#define AFTER_REAP_DELAY_US 50000u

#define CHILD_NONE MCPX_WARM_CHILD_NONE
#define CHILD_ASKED MCPX_WARM_CHILD_ASKED
#define CHILD_FORKED MCPX_WARM_CHILD_FORKED
#define CHILD_DISCARDED MCPX_WARM_CHILD_DISCARDED

bool mcpx_slot_prepared(const struct warm_slot *s)
{
	return mcpx_warm_child_prepared(&s->child);
}

void mcpx_slot_child_end(struct warm_slot *s, enum mcpx_warm_child_state how)
{
	mcpx_timer_cancel(&s->recycle);
	(void)mcpx_warm_child_end(&s->child, how);
}

/* ---- scheduling ---------------------------------------------------------- */

static void kick_cb(struct mcpx_timer *t)
{
	struct warm_slot *s = t->arg;

	/* A timer due now runs before the loop polls its sockets, so the
	 * reply the ended run's caller waits for would be written only after
	 * the preparation. Armed again from here it is due only after that
	 * poll (the loop takes the time once per pass of its timers). */
	if (s->kick_yield) {
		s->kick_yield = false;
		mcpx_timer_start(s->wp->loop, &s->kick, 1);
		return;
	}
	mcpx_slot_prepare(s);
}

void mcpx_slot_schedule_in(struct warm_slot *s, uint64_t usec)
{
	const struct mcpx_warm_pool *wp = s->wp;

	if (!s->used || wp->mode == MCPX_WARM_MODE_OFF || mcpx_slot_prepared(s) || wp->stopped)
		return;
	s->kick.fn = kick_cb;
	s->kick.arg = s;
	mcpx_timer_start(wp->loop, &s->kick, usec);
}

/* A fresh interpreter is started a little after a run, so that back-to-back
 * calls (which would find it still preloading, discard it and start cold)
 * do not pay for starting and killing one each time. */
void mcpx_slot_schedule(struct warm_slot *s)
{
	mcpx_slot_schedule_in(s,
	                      s->wp->mode == MCPX_WARM_MODE_AFTER_REAP ? AFTER_REAP_DELAY_US : 0);
}

/* ---- the prepared process ------------------------------------------------ */

bool mcpx_slot_take_pending(struct warm_slot *s, struct mcpx_err *setup_err)
{
	struct mcpx_err err = {{0}};
	bool setup_failed = false;

	if (s->zyg && mcpx_zygotes_take(s->zyg, &s->child.proc, &setup_failed, &err) == 0) {
		if (mcpx_warm_child_to(&s->child, CHILD_FORKED, "taken from the zygote") == 0)
			return true;
		mcpx_reap_later(s->wp->loop, &s->child.proc);
		mcpx_err_set(&err, EPROTO, "the warm child's state was inconsistent");
		setup_failed = false;
	}
	mcpx_slot_child_end(s, CHILD_DISCARDED);
	if (setup_failed && setup_err)
		*setup_err = err;
	s->wp->hooks_up->failed(s->wp, err.msg);
	return false;
}

void mcpx_slot_discard(struct warm_slot *s)
{
	if (!mcpx_slot_prepared(s))
		return;
	/* Asked for: its fork server ends it, now or once its answer has
	 * come (nothing waits for the zygote here). */
	if (s->child.state == CHILD_ASKED)
		mcpx_zygotes_drop(s->zyg);
	else
		mcpx_reap_later(s->wp->loop, &s->child.proc);
	mcpx_slot_child_end(s, CHILD_DISCARDED);
}

static void recycle_cb(struct mcpx_timer *t)
{
	struct warm_slot *s = t->arg;

	mcpx_slot_discard(s);
	mcpx_slot_prepare(s);
}

/* CPU seconds a warm interpreter may spend preloading before it gets code;
 * at code arrival it re-bases the limit on what it used (warm.h). */
#define PRELOAD_CPU_S 120u

void mcpx_slot_limits(const struct mcpx_warm_pool *wp, struct mcpx_limits *lim)
{
	mcpx_run_limits_waiting(wp->cfg, PRELOAD_CPU_S,
	                        wp->hooks && wp->hooks->exec_wants_channel &&
	                            wp->hooks->exec_wants_channel(wp->hooks->arg),
	                        lim);
	/* The running run's tasks are gone by the time this one starts. */
	lim->uncounted_pgrp = wp->running;
}

void mcpx_slot_answered(void *arg)
{
	struct mcpx_warm_pool *wp = arg;
	const struct warm_slot *s = &wp->slot[wp->waiting_kind];

	if (!wp->waiting ||
	    (s->child.state == MCPX_WARM_CHILD_ASKED && !mcpx_zygotes_answered(s->zyg)))
		return;
	wp->waiting = false;
	if (wp->wake)
		wp->wake(wp->wake_arg);
}

/* ---- the zygotes --------------------------------------------------------- */

static void zygote_timer_cb(struct mcpx_timer *t)
{
	struct warm_slot *s = t->arg;
	const struct mcpx_warm_pool *wp = s->wp;

	/* While a run executes, its successor waits for its end (run_ended)
	 * or for a call queued behind it (call_waiting). */
	if (mcpx_slot_prepared(s) || wp->stopped || wp->running)
		(void)mcpx_slot_zygote_ready(s);
	else
		mcpx_slot_prepare(s);
}

void mcpx_slot_zygotes_later(struct warm_slot *s, uint64_t usec)
{
	if (!s->zyg)
		return;
	s->zygote_timer.fn = zygote_timer_cb;
	s->zygote_timer.arg = s;
	mcpx_timer_start(s->wp->loop, &s->zygote_timer, usec);
}

int mcpx_slot_zygote_ready(struct warm_slot *s)
{
	struct mcpx_err err = {{0}};
	uint64_t next_us = 0;
	int r;

	if (!s->zyg)
		return -1;
	r = mcpx_zygotes_poll(s->zyg, &next_us, &err);
	if (r != 0 && s->first_deadline_us) {
		s->first_deadline_us = 0;
		if (r > 0)
			s->wp->hooks_up->zygote_proven(s->wp);
	}
	if (r < 0) {
		s->wp->hooks_up->leave_fork_mode(s->wp, err.msg);
		return -1;
	}
	if (next_us)
		mcpx_slot_zygotes_later(s, next_us);
	return r;
}

void mcpx_slot_start_zygotes(struct warm_slot *s, bool primary)
{
	const struct mcpx_warm_pool *wp = s->wp;
	struct mcpx_zygote_policy pol = {
	    .max_runs = wp->cfg->warm_max_runs,
	    .max_age_us = (uint64_t)wp->cfg->warm_max_age_s * 1000000u,
	};
	struct mcpx_err err = {{0}};
	struct mcpx_limits lim;

	mcpx_slot_limits(wp, &lim);
	if (mcpx_zygotes_new_named(wp->sb, s->preload, &lim, &pol,
	                           s->kind == MCPX_WARM_PLAIN ? "plain" : s->preload, primary,
	                           &s->zyg, &err) < 0) {
		s->wp->hooks_up->leave_fork_mode(s->wp, err.msg);
		return;
	}
	mcpx_zygotes_use_loop(s->zyg, wp->loop, mcpx_slot_answered, s->wp);
	s->first_deadline_us = mcpx_now_us() + ZYGOTE_START_US;
}

void mcpx_slot_prepare(struct warm_slot *s)
{
	struct mcpx_warm_pool *wp = s->wp;
	struct mcpx_limits lim;
	struct mcpx_err err = {{0}};
	enum mcpx_warm_child_state next;
	int rc;

	if (!s->used || wp->mode == MCPX_WARM_MODE_OFF || mcpx_slot_prepared(s) || wp->stopped)
		return;
	/* A forked child may be prepared while a run executes (for a call
	 * queued behind it): Landlock keeps the two apart, each in its own
	 * domain with signals, abstract sockets and ptrace scoped, neither
	 * able to touch the other's workdir; fork mode requires that
	 * (mcpx_warm_mode_for). A fresh interpreter is prepared only once the
	 * previous run is gone. */
	if (wp->running && wp->mode != MCPX_WARM_MODE_FORK)
		return;
	mcpx_slot_limits(wp, &lim);
	if (wp->mode == MCPX_WARM_MODE_FORK) {
		if (mcpx_slot_zygote_ready(s) <= 0)
			return;
		/* Asked for now, taken (and waited for, if need be) when the
		 * next run of its kind starts. */
		rc = mcpx_zygotes_fork(s->zyg, &lim, &err);
		next = CHILD_ASKED;
	} else {
		/* Its preload under the run's memory limit, which it raises by
		 * what it maps once its code arrives (src/zygote/interp.c). */
		lim.as_hard_open = true;
		rc = mcpx_sandbox_spawn_warm(
		    wp->sb, &lim, mcpx_preload_list(wp->cfg->preload, false), &s->child.proc, &err);
		next = CHILD_FORKED;
	}
	if (rc < 0) {
		wp->hooks_up->failed(wp, err.msg);
		return;
	}
	if (mcpx_warm_child_to(&s->child, next, "prepared") < 0) {
		wp->hooks_up->failed(wp, "the warm child's state was inconsistent");
		return;
	}
	wp->failures = 0;
	s->recycle.fn = recycle_cb;
	s->recycle.arg = s;
	mcpx_timer_start(wp->loop, &s->recycle, RECYCLE_US);
}
