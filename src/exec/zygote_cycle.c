/*
 * zygote_cycle.c - the fork server's zygotes over time (zygote_cycle.h).
 *
 * What it does: keeps one current zygote (forks for runs come from it), at
 * most one successor being prepared, and the retired ones that still have
 * unreaped runs. A successor is proven with the start-up self-test probe,
 * run as a state machine advanced by each mcpx_zygotes_poll: fork a child,
 * wait for its ready byte, hand it the probe, collect what it prints, reap
 * it, judge it (mcpx_sandbox_probe_verdict). The steps are non-blocking
 * checks, so the loop keeps serving calls from the current zygote
 * meanwhile; with a loop (mcpx_zygotes_use_loop) the zygotes' answers are
 * read by their fork servers' watches, and the probe's reap is asked and
 * its answer awaited over the next steps. Every child handed out is
 * adopted with a counting reaper, so a retired zygote is stopped exactly
 * when its last child has been reaped.
 *
 * What it does not do: decide whether fork mode is allowed or what happens
 * after it fails (executor.c), or speak the zygote's protocol
 * (forkserver.c).
 */
#include "zygote_cycle.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "forkserver.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "reap_later.h"
#include "warm.h"
#include "warm_child.h"

/* How often a successor in progress is looked at. */
#define BUSY_POLL_US 10000u
/* The probe's whole run, from its fork to its verdict. */
#define PROBE_TIMEOUT_US (20u * 1000000u)
#define PROBE_OUT_MAX 8192
/* A successor starts once no run has executed for this long (its preload
 * would compete with the runs for the CPUs: measured, docs/benchmarks.md),
 * or anyway at twice the policy's bound. */
#define RENEW_IDLE_US 100000u
/* Successors that failed to start in a row before the caller is told. */
#define MAX_START_FAILURES 3

struct zygote {
	struct mcpx_forkserver *fs;
	unsigned children; /* handed out and not yet reaped */
	unsigned runs;     /* of those, runs (the probe is not one) */
	uint64_t proven_us;
	struct zygote *next_retired;
};

/* The probe's child goes through the same states as a run's
 * (warm_child.h): NONE, ASKED (forked from the successor, not taken),
 * FORKED (taken, its READY byte awaited), READY, TAKEN (fed the probe and
 * running it, until its verdict). */
struct probe {
	struct mcpx_warm_child child;
	struct mcpx_probe_plan plan;
	struct mcpx_buf out;
	bool out_open, err_open;
	unsigned markers; /* the protocol's bytes still due on stdout (warm_child.h) */
	bool broken;      /* another byte came where one was due */
	bool reaping;     /* its reap is asked: reaped says when it is done */
	bool reaped;
	int status; /* once reaped */
	uint64_t deadline_us;
};

struct mcpx_zygotes {
	const struct mcpx_sandbox *sb;
	char *preload; /* the modules each zygote preloads (a resolved list) */
	struct mcpx_limits lim;
	struct mcpx_zygote_policy pol;
	struct zygote *cur;     /* proven; forks come from it */
	struct zygote *next;    /* starting, preloading or being proven */
	struct zygote *retired; /* replaced, with runs not yet reaped */
	/* No record of the run's asked-for child here: it is always cur's
	 * (asked_from), and cur's fork server knows whether one is asked for
	 * and under which limits; the warm pool keeps the child's state
	 * (warm_child.h). */
	struct probe probe;
	const char *reason; /* why next is being prepared */
	/* What the log calls this set of zygotes ("plain", a preload list),
	 * or NULL for the one set of a server that has one; primary: its
	 * zygote is the one /metrics names. */
	char *name;
	bool primary;
	unsigned failures; /* successors that failed in a row */
	pid_t prev_pid;    /* the zygote next replaces (0: the first) */
	unsigned prev_runs;
	bool busy;        /* a run executes (mcpx_zygotes_busy) */
	uint64_t idle_us; /* when the last run ended */
	/* With a loop: every fork server reads its answers there, and the
	 * current one's answer to the run's fork is told to on_answer. */
	struct mcpx_loop *loop;
	void (*on_answer)(void *arg);
	void *on_answer_arg;
};

static const struct mcpx_limits probe_lim = {
    .cpu_s = 10, .memory_mb = 512, .max_procs = 16, .file_mb = 1, .open_files = 64};

/* ---- one zygote ---------------------------------------------------------- */

static int reap_counted(void *ctx, pid_t pid, int *status, struct rusage *ru)
{
	struct zygote *zy = ctx;

	/* Whatever the zygote answers, the child is gone afterwards: a dead
	 * zygote's children are reaped by the server (reaper.c). */
	if (zy->children)
		zy->children--;
	return mcpx_forkserver_reap(zy->fs, pid, status, ru);
}

/* A reap asked of zy without waiting: counted once its answer is in. */
struct counted_reap {
	struct zygote *zy;
	mcpx_reaped_fn done;
	void *arg;
};

static void counted_reaped(void *arg, int rc, int status, const struct rusage *ru)
{
	struct counted_reap *c = arg;

	if (c->zy->children)
		c->zy->children--;
	c->done(c->arg, rc, status, ru);
	free(c);
}

static int reap_counted_async(void *ctx, pid_t pid, mcpx_reaped_fn done, void *arg)
{
	struct counted_reap *c = malloc(sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	c->zy = ctx;
	c->done = done;
	c->arg = arg;
	rc = mcpx_forkserver_reap_async(c->zy->fs, pid, counted_reaped, c);
	if (rc < 0) {
		/* Not asked: the caller reaps the zombie that came back. */
		if (c->zy->children)
			c->zy->children--;
		free(c);
	}
	return rc;
}

/* Takes zy's asked-for child into proc, reaped through reap_counted,
 * without waiting for its setup verdict (mcpx_forkserver_take_now). */
static int take_counted(struct zygote *zy, struct mcpx_sandbox_proc *proc, bool *setup_failed,
                        struct mcpx_err *err)
{
	int rc = mcpx_forkserver_take_now(zy->fs, proc, setup_failed, err);

	if (rc < 0)
		return rc;
	proc->reaper = reap_counted;
	proc->reaper_async = reap_counted_async;
	proc->reaper_ctx = zy;
	zy->children++;
	return 0;
}

/* A fork server's answer to the run's fork came: told on only for the
 * current zygote's (the successor's probe is advanced by the poll). */
static void fork_answered(void *arg)
{
	struct mcpx_zygotes *z = arg;

	if (z->on_answer)
		z->on_answer(z->on_answer_arg);
}

static struct zygote *zygote_start(struct mcpx_zygotes *z, struct mcpx_err *err)
{
	struct zygote *zy = calloc(1, sizeof(*zy));

	if (!zy) {
		mcpx_err_set(err, ENOMEM, "fork server: out of memory");
		return NULL;
	}
	if (mcpx_forkserver_start(z->sb, z->preload, &z->lim, &zy->fs, err) < 0) {
		free(zy);
		return NULL;
	}
	if (z->loop)
		mcpx_forkserver_use_loop(zy->fs, z->loop, fork_answered, z);
	return zy;
}

static void zygote_stop(struct zygote *zy)
{
	if (!zy)
		return;
	mcpx_reap_later_orphan(zy);
	mcpx_forkserver_stop(zy->fs);
	free(zy);
}

/* Stops zy now if none of its runs is left, else once the last is reaped. */
static void retire(struct mcpx_zygotes *z, struct zygote *zy)
{
	if (!zy->children) {
		zygote_stop(zy);
		return;
	}
	zy->next_retired = z->retired;
	z->retired = zy;
}

static void stop_finished_retired(struct mcpx_zygotes *z)
{
	struct zygote **pp = &z->retired;

	while (*pp) {
		struct zygote *zy = *pp;

		if (zy->children) {
			pp = &zy->next_retired;
			continue;
		}
		*pp = zy->next_retired;
		zygote_stop(zy);
	}
}

/* The zygote the run's asked-for child comes from, or NULL when none is
 * asked for: always the current one (a successor that takes over drops the
 * old one's and asks its own, a dead one's is dropped), and only its fork
 * server knows whether one is asked for. The probe's child is next's. */
static struct zygote *asked_from(const struct mcpx_zygotes *z)
{
	return z->cur && mcpx_forkserver_pending(z->cur->fs) ? z->cur : NULL;
}

/* Ends the asked-for child (if any) without running it: now, or once its
 * answer has come (mcpx_forkserver_drop). */
static void drop_pending(struct mcpx_zygotes *z)
{
	struct zygote *zy = asked_from(z);

	if (zy)
		mcpx_forkserver_drop(zy->fs);
}

/* ---- the probe of a successor -------------------------------------------- */

static void probe_reset(struct probe *p, struct mcpx_loop *loop)
{
	enum mcpx_warm_child_state s = p->child.state;

	mcpx_sandbox_probe_plan_free(&p->plan);
	/* Asked for and not taken: its fork server drops it (stop, or the
	 * next fork of that zygote's). A process is ended without waiting on
	 * the loop. */
	if (s == MCPX_WARM_CHILD_FORKED || s == MCPX_WARM_CHILD_READY || s == MCPX_WARM_CHILD_TAKEN)
		mcpx_reap_later(loop, &p->child.proc);
	(void)mcpx_warm_child_end(&p->child, s == MCPX_WARM_CHILD_TAKEN
	                                         ? MCPX_WARM_CHILD_TAKEN
	                                         : MCPX_WARM_CHILD_DISCARDED);
	mcpx_buf_free(&p->out);
	memset(p, 0, sizeof(*p));
	p->plan.listen_fd = -1;
	mcpx_warm_child_init(&p->child);
}

/* Moves the probe's child on; a refused transition (a bug, logged) fails
 * the probe. */
static int probe_to(struct probe *p, enum mcpx_warm_child_state next, struct mcpx_err *err)
{
	if (mcpx_warm_child_to(&p->child, next, "probe") < 0)
		return mcpx_err_set(err, EPROTO, "fork server self-test: the probe's child is %s",
		                    mcpx_warm_child_state_name(p->child.state));
	return 0;
}

static int probe_begin(struct mcpx_zygotes *z, struct mcpx_err *err)
{
	struct probe *p = &z->probe;
	int rc = mcpx_sandbox_probe_plan(z->sb, &p->plan, err);

	if (!rc)
		rc = mcpx_forkserver_fork(z->next->fs, &probe_lim, err);
	if (rc)
		return rc;
	mcpx_buf_init(&p->out, PROBE_OUT_MAX);
	p->markers = MCPX_WARM_MARKERS_ALL;
	p->deadline_us = mcpx_now_us() + PROBE_TIMEOUT_US;
	return probe_to(p, MCPX_WARM_CHILD_ASKED, err);
}

/* The child said ready: its code, header and stdin, all at once (they fit
 * the pipe). */
static int probe_feed(struct mcpx_zygotes *z, struct mcpx_err *err)
{
	struct probe *p = &z->probe;
	char hdr[64];
	size_t hlen = mcpx_warm_header(hdr, sizeof(hdr), p->plan.code_len, probe_lim.cpu_s);
	struct mcpx_sandbox_proc *proc = &p->child.proc;
	int rc = mcpx_sandbox_write_main(z->sb, proc, p->plan.code, p->plan.code_len, err);

	if (rc)
		return rc;
	if (!hlen || write(proc->stdin_fd, hdr, hlen) != (ssize_t)hlen ||
	    write(proc->stdin_fd, p->plan.code, p->plan.code_len) != (ssize_t)p->plan.code_len ||
	    write(proc->stdin_fd, p->plan.input, p->plan.input_len) != (ssize_t)p->plan.input_len)
		return mcpx_err_set(err, EIO, "fork server self-test: cannot feed the probe");
	close(proc->stdin_fd);
	proc->stdin_fd = -1;
	p->out_open = p->err_open = true;
	return probe_to(p, MCPX_WARM_CHILD_TAKEN, err);
}

/* Reads what is there of one output; false at end of file. On stdout
 * (keep) the warm interpreter's byte that says the whole code arrived
 * comes first, as for a run (executor.c): another byte there breaks the
 * protocol and fails the probe. */
static bool probe_read(struct probe *p, int fd, bool keep)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		size_t used = 0;

		if (!keep)
			continue;
		if (mcpx_warm_markers_take(&p->markers, buf, (size_t)n, &used, NULL) < 0)
			p->broken = true;
		(void)mcpx_buf_add_some(&p->out, buf + used, (size_t)n - used);
	}
	return !(n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR));
}

static void probe_reaped(void *arg, int rc, int status, const struct rusage *ru)
{
	struct probe *p = arg;

	(void)rc;
	(void)ru;
	p->reaping = false;
	p->reaped = true;
	p->status = status;
}

/* The probe's child has exited: reaped (its answer comes on a later step
 * with a loop), then judged. 1 proven, 0 in progress, <0 failed. */
static int probe_finish(struct mcpx_zygotes *z, struct mcpx_err *err)
{
	struct probe *p = &z->probe;
	int rc;

	if (!p->reaping && !p->reaped) {
		mcpx_sandbox_kill(&p->child.proc);
		p->reaping = true;
		rc = mcpx_sandbox_reap_async(&p->child.proc, probe_reaped, p);
		if (rc < 0) {
			p->reaping = false;
			return mcpx_err_set(err, -rc, "fork server self-test: reap failed");
		}
	}
	if (!p->reaped)
		return 0;
	rc = mcpx_sandbox_probe_verdict(z->sb, &p->plan, p->out.data ? p->out.data : "", p->out.len,
	                                p->status, err);
	return rc < 0 ? -EPERM : 1;
}

/* One step; 1 when the successor is proven, 0 in progress, <0 failed. */
static int probe_step(struct mcpx_zygotes *z, struct mcpx_err *err)
{
	struct probe *p = &z->probe;
	struct pollfd pfd;
	int rc;

	if (p->child.state != MCPX_WARM_CHILD_NONE && mcpx_now_us() > p->deadline_us)
		return mcpx_err_set(err, EPERM, "fork server self-test: the probe did not finish");
	switch (p->child.state) {
	case MCPX_WARM_CHILD_NONE:
		return probe_begin(z, err);
	case MCPX_WARM_CHILD_ASKED: {
		bool setup_failed = false;

		if (!mcpx_forkserver_answered(z->next->fs))
			return 0;
		/* A child that fails its sandbox setup fails the probe. */
		if (take_counted(z->next, &p->child.proc, &setup_failed, err) < 0) {
			(void)mcpx_warm_child_to(&p->child, MCPX_WARM_CHILD_DISCARDED, "probe");
			return setup_failed ? -EPERM : -EIO;
		}
		return probe_to(p, MCPX_WARM_CHILD_FORKED, err);
	}
	case MCPX_WARM_CHILD_FORKED:
		rc = mcpx_warm_marker_read(p->child.proc.stdout_fd, &p->markers, 0);
		if (rc == -EAGAIN)
			return 0;
		/* Ended without a word: its setup verdict says why, if it
		 * failed there (a failed setup fails the probe). */
		if (rc == -EPIPE && mcpx_sandbox_setup_verdict(&p->child.proc, err) < 0)
			return -EPERM;
		if (rc < 0)
			return mcpx_err_set(err, EPERM,
			                    "fork server self-test: the child never became ready");
		rc = probe_to(p, MCPX_WARM_CHILD_READY, err);
		return rc < 0 ? rc : probe_feed(z, err);
	case MCPX_WARM_CHILD_TAKEN:
		if (p->out_open)
			p->out_open = probe_read(p, p->child.proc.stdout_fd, true);
		if (p->err_open)
			p->err_open = probe_read(p, p->child.proc.stderr_fd, false);
		if (p->broken)
			return mcpx_err_set(
			    err, EPERM, "fork server self-test: the child broke the warm protocol");
		pfd.fd = p->child.proc.pidfd;
		pfd.events = POLLIN;
		if (p->out_open || p->err_open || poll(&pfd, 1, 0) == 0)
			return 0;
		return probe_finish(z, err);
	case MCPX_WARM_CHILD_READY: /* fed in the same step as it said ready */
	case MCPX_WARM_CHILD_DISCARDED:
		break;
	}
	return mcpx_err_set(err, EPROTO, "fork server self-test: the probe's child is %s",
	                    mcpx_warm_child_state_name(p->child.state));
}

/* ---- the cycle ----------------------------------------------------------- */

/* Whether the current zygote is to be replaced now: it served its runs or
 * time, and either the server is idle or it served twice that. When it is
 * due but waits for idle, *wait_us says how long at most. */
static bool due(const struct mcpx_zygotes *z, const char **why, uint64_t *wait_us)
{
	const struct zygote *c = z->cur;
	uint64_t now = mcpx_now_us(), idle_for = z->busy ? 0 : now - z->idle_us;
	bool over = false;

	*wait_us = 0;
	if (z->pol.max_runs && c->runs >= z->pol.max_runs) {
		*why = "runs";
		over = c->runs >= 2 * z->pol.max_runs;
	} else if (z->pol.max_age_us && now - c->proven_us >= z->pol.max_age_us) {
		*why = "age";
		over = now - c->proven_us >= 2 * z->pol.max_age_us;
	} else {
		return false;
	}
	if (over || idle_for >= RENEW_IDLE_US)
		return true;
	*wait_us = RENEW_IDLE_US - idle_for;
	*why = NULL;
	return false;
}

static void take_over(struct mcpx_zygotes *z)
{
	struct zygote *old = z->cur;
	bool refork = asked_from(z) != NULL;
	struct mcpx_limits lim = {0};
	struct mcpx_err err = {{0}};

	if (refork)
		lim = *mcpx_forkserver_pending_limits(old->fs);
	/* A child asked for from the old zygote would carry its layout into
	 * one more run: it is replaced by one of the new zygote's. */
	drop_pending(z);
	z->cur = z->next;
	z->next = NULL;
	z->cur->proven_us = mcpx_now_us();
	z->failures = 0;
	if (z->primary)
		mcpx_metrics_set_zygote(mcpx_forkserver_pid(z->cur->fs));
	if (old) {
		z->prev_pid = mcpx_forkserver_pid(old->fs);
		z->prev_runs = old->runs;
		retire(z, old);
	}
	if (z->prev_pid) {
		mcpx_info("fork server renewed: zygote pid %d replaced pid %d (%s; it served %u "
		          "runs)%s%s%s",
		          (int)mcpx_forkserver_pid(z->cur->fs), (int)z->prev_pid, z->reason,
		          z->prev_runs, z->name ? " [" : "", z->name ? z->name : "",
		          z->name ? "]" : "");
		mcpx_metrics_zygote_replaced(z->reason);
	} else if (z->name) {
		/* The pool says "fork server ready" once every set is. */
		mcpx_info("fork server: zygote pid %d [%s] has preloaded and its first child "
		          "passed the self-test",
		          (int)mcpx_forkserver_pid(z->cur->fs), z->name);
	} else {
		mcpx_info("fork server ready: zygote pid %d has preloaded and its first child "
		          "passed the self-test",
		          (int)mcpx_forkserver_pid(z->cur->fs));
	}
	if (refork && mcpx_zygotes_fork(z, &lim, &err) < 0)
		mcpx_warn("%s", err.msg);
}

/* Advances the successor; <0 when it failed (and is gone). */
static int advance_next(struct mcpx_zygotes *z, struct mcpx_err *err)
{
	int r = mcpx_forkserver_poll(z->next->fs);

	if (r == 0)
		return 0;
	if (r > 0)
		r = probe_step(z, err);
	else
		mcpx_err_set(err, EPIPE, "fork server: the new zygote exited while preloading");
	if (r == 0)
		return 0;
	if (r > 0) {
		probe_reset(&z->probe, z->loop);
		take_over(z);
		return 0;
	}
	probe_reset(&z->probe, z->loop);
	zygote_stop(z->next);
	z->next = NULL;
	return r;
}

int mcpx_zygotes_poll(struct mcpx_zygotes *z, uint64_t *next_us, struct mcpx_err *err)
{
	const char *why = NULL;
	uint64_t wait_us = 0;
	int rc = 0;

	*next_us = 0;
	stop_finished_retired(z);
	/* Gone, or not answering (its fork server gave up on it). */
	if (z->cur && mcpx_forkserver_poll(z->cur->fs) < 0) {
		mcpx_warn("fork server: zygote pid %d died; runs start cold until its successor "
		          "is ready",
		          (int)mcpx_forkserver_pid(z->cur->fs));
		drop_pending(z);
		z->prev_pid = mcpx_forkserver_pid(z->cur->fs);
		z->prev_runs = z->cur->runs;
		retire(z, z->cur);
		z->cur = NULL;
		z->reason = "died";
		mcpx_metrics_set_zygote(0);
	}
	if (!z->next && (!z->cur || due(z, &why, &wait_us))) {
		if (why) {
			z->reason = why;
			mcpx_info("fork server: preparing a new zygote to replace pid %d (%s; it "
			          "served %u runs)",
			          (int)mcpx_forkserver_pid(z->cur->fs), why, z->cur->runs);
		}
		z->next = zygote_start(z, err);
		if (!z->next)
			rc = ++z->failures >= MAX_START_FAILURES ? -EAGAIN : 0;
	}
	if (z->next) {
		rc = advance_next(z, err);
		if (rc == -EPERM)
			return rc;
		if (rc < 0) {
			mcpx_warn("%s", err->msg);
			rc = ++z->failures >= MAX_START_FAILURES ? -EAGAIN : 0;
		}
	}
	if (rc < 0)
		return rc;
	if (z->next || !z->cur)
		*next_us = BUSY_POLL_US;
	else if (wait_us)
		*next_us = wait_us;
	else if (z->pol.max_age_us)
		*next_us = z->cur->proven_us + z->pol.max_age_us - mcpx_now_us() + 1;
	return z->cur ? 1 : 0;
}

/* ---- the interface -------------------------------------------------------- */

int mcpx_zygotes_new(const struct mcpx_sandbox *sb, const char *preload,
                     const struct mcpx_limits *lim, const struct mcpx_zygote_policy *pol,
                     struct mcpx_zygotes **out, struct mcpx_err *err)
{
	return mcpx_zygotes_new_named(sb, preload, lim, pol, NULL, true, out, err);
}

int mcpx_zygotes_new_named(const struct mcpx_sandbox *sb, const char *preload,
                           const struct mcpx_limits *lim, const struct mcpx_zygote_policy *pol,
                           const char *name, bool primary, struct mcpx_zygotes **out,
                           struct mcpx_err *err)
{
	struct mcpx_zygotes *z = calloc(1, sizeof(*z));

	*out = NULL;
	if (!z || !(z->preload = strdup(preload)) || (name && !(z->name = strdup(name)))) {
		if (z)
			free(z->preload);
		free(z);
		return mcpx_err_set(err, ENOMEM, "fork server: out of memory");
	}
	z->primary = primary;
	z->sb = sb;
	z->lim = *lim;
	z->pol = *pol;
	z->probe.plan.listen_fd = -1;
	mcpx_warm_child_init(&z->probe.child);
	z->reason = "start";
	z->next = zygote_start(z, err);
	if (!z->next) {
		mcpx_zygotes_free(z);
		return -EIO;
	}
	*out = z;
	return 0;
}

void mcpx_zygotes_free(struct mcpx_zygotes *z)
{
	if (!z)
		return;
	drop_pending(z);
	probe_reset(&z->probe, z->loop);
	zygote_stop(z->next);
	zygote_stop(z->cur);
	while (z->retired) {
		struct zygote *zy = z->retired;

		z->retired = zy->next_retired;
		zygote_stop(zy);
	}
	free(z->preload);
	free(z->name);
	free(z);
}

int mcpx_zygotes_fork(struct mcpx_zygotes *z, const struct mcpx_limits *lim, struct mcpx_err *err)
{
	if (!z->cur)
		return mcpx_err_set(err, EAGAIN, "fork server: no zygote is ready");
	if (asked_from(z))
		return mcpx_err_set(err, EBUSY, "fork server: a fork is already pending");
	return mcpx_forkserver_fork(z->cur->fs, lim, err);
}

int mcpx_zygotes_take(struct mcpx_zygotes *z, struct mcpx_sandbox_proc *proc, bool *setup_failed,
                      struct mcpx_err *err)
{
	struct zygote *zy = asked_from(z);
	int rc;

	mcpx_sandbox_proc_reset(proc);
	if (!zy)
		return mcpx_err_set(err, ENOENT, "fork server: no fork was asked for");
	rc = take_counted(zy, proc, setup_failed, err);
	if (rc == 0)
		zy->runs++;
	return rc;
}

void mcpx_zygotes_drop(struct mcpx_zygotes *z)
{
	if (z)
		drop_pending(z);
}

void mcpx_zygotes_busy(struct mcpx_zygotes *z, bool busy)
{
	if (z->busy && !busy)
		z->idle_us = mcpx_now_us();
	z->busy = busy;
}

bool mcpx_zygotes_answered(struct mcpx_zygotes *z)
{
	struct zygote *zy = z ? asked_from(z) : NULL;

	return !zy || mcpx_forkserver_answered(zy->fs);
}

void mcpx_zygotes_use_loop(struct mcpx_zygotes *z, struct mcpx_loop *loop,
                           void (*on_answer)(void *arg), void *arg)
{
	struct zygote *all[] = {z->cur, z->next};

	z->loop = loop;
	z->on_answer = on_answer;
	z->on_answer_arg = arg;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i])
			mcpx_forkserver_use_loop(all[i]->fs, loop, fork_answered, z);
	for (struct zygote *zy = z->retired; zy; zy = zy->next_retired)
		mcpx_forkserver_use_loop(zy->fs, loop, fork_answered, z);
}

bool mcpx_zygotes_pending(const struct mcpx_zygotes *z)
{
	return z && asked_from(z);
}

bool mcpx_zygotes_parent_gone(const struct mcpx_sandbox_proc *proc)
{
	const struct zygote *zy = proc->reaper_ctx;

	return proc->reaper == reap_counted && zy && !mcpx_forkserver_alive(zy->fs);
}

pid_t mcpx_zygotes_pid(const struct mcpx_zygotes *z)
{
	return z && z->cur ? mcpx_forkserver_pid(z->cur->fs) : 0;
}
