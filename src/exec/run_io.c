/*
 * run_io.c - a running job on the loop: its stdout and stderr read (the
 * warm interpreter's protocol bytes taken off the front, the combined cap
 * applied while the program runs on), its stdin fed without blocking, its
 * leader's exit (pidfd), its wall clock, and the start of all of these.
 *
 * It does not decide what a run's end means (run_result.c) nor complete
 * the job (executor.c).
 */
#include "run_job.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "run_budget.h"
#include "warm_child.h"

#define STDIN_RETRY_US 2000u

static void pid_cb(struct mcpx_watch *w, int events)
{
	struct mcpx_job *job = w->arg;

	if (events & MCPX_EV_READ) {
		mcpx_ex_leader_exited(job);
		mcpx_loop_unwatch(w);
		return;
	}
	if (events & MCPX_EV_CLOSED) {
		job->pid_open = false;
		mcpx_ex_leader_exited(job);
		mcpx_ex_maybe_complete(job);
	}
}

/* The environment failed under a run (not the program): the run is ended
 * and the caller gets a tool error with msg instead of a result. */
static void fail_run(struct mcpx_job *job, const char *msg)
{
	if (!job->env_failure)
		job->env_failure = msg;
	mcpx_ex_kill_tree(job);
}

/* Keeps what fits under the combined stdout+stderr cap and drops the rest.
 * The program runs on, as with the Go mcp-exec: its pipes are still drained,
 * so it never blocks on a full pipe, and only its own limits or the timeout
 * end it; the result says truncated. */
static void keep_output(struct mcpx_job *job, struct job_stream *s, const char *p, size_t n)
{
	size_t cap = job->ex->cfg->max_output_bytes;
	size_t used = job->out.buf.len + job->err.buf.len;
	size_t room = used < cap ? cap - used : 0;
	long got = mcpx_buf_add_some(&s->buf, p, n < room ? n : room);

	if (got < 0) {
		fail_run(job, "the server ran out of memory while collecting the output");
		return;
	}
	if ((size_t)got < n)
		job->truncated = true;
}

/* Takes the warm interpreter's protocol bytes off the front of a warm run's
 * stdout (warm_child.h); returns how many of buf's bytes they were. */
static size_t take_markers(struct mcpx_job *job, struct job_stream *s, const char *buf, size_t n)
{
	bool ready = false;
	size_t used = 0;
	int rc = mcpx_warm_markers_take(&s->markers, buf, n, &used, &ready);

	if (ready)
		mcpx_run_budget_code_started(job->link.budget);
	if (rc < 0)
		fail_run(job, "the warm interpreter broke its protocol");
	return used;
}

static void stream_cb(struct mcpx_watch *w, int events)
{
	struct job_stream *s = w->arg;
	struct mcpx_job *job = s->job;
	char buf[65536];
	size_t skip;

	if (events & MCPX_EV_READ) {
		for (;;) {
			ssize_t n = read(w->fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				break;
			if (n <= 0) {
				mcpx_loop_unwatch(w);
				break;
			}
			skip = s->markers ? take_markers(job, s, buf, (size_t)n) : 0;
			keep_output(job, s, buf + skip, (size_t)n - skip);
		}
		if (s == &job->out && job->cb.event && job->state == MCPX_RUN_RUNNING &&
		    !job->cancelled)
			job->cb.event(job->cb.arg, MCPX_JOB_OUTPUT,
			              job->out.buf.len + job->err.buf.len);
		return;
	}
	if (events & MCPX_EV_CLOSED) {
		s->open = false;
		mcpx_ex_maybe_complete(job);
	}
}

static void wall_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_job *job = t->arg;
	job->timed_out = true;
	mcpx_ex_kill_tree(job);
}

/* Feeds stdin without blocking: what fits in the pipe now, the rest on retry
 * timers until the child reads it, exits, or closes its end. */
static void feed_stdin(struct mcpx_job *job)
{
	const char *data = job->feed ? job->feed : job->stdin_data;
	size_t len = job->feed ? job->feed_len : job->stdin_len;

	while (job->stdin_off < len) {
		ssize_t n = write(job->proc.stdin_fd, data + job->stdin_off, len - job->stdin_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			mcpx_timer_start(job->ex->loop, &job->stdin_timer, STDIN_RETRY_US);
			return;
		}
		if (n <= 0)
			break; /* EPIPE: the program closed stdin; that is its choice. */
		job->stdin_off += (size_t)n;
	}
	close(job->proc.stdin_fd);
	job->proc.stdin_fd = -1;
}

static void stdin_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_job *job = t->arg;
	if (job->proc.stdin_fd >= 0 && job->state == MCPX_RUN_RUNNING)
		feed_stdin(job);
}

static int watch_fd(struct mcpx_job *job, struct mcpx_watch *w, int *fdp, mcpx_watch_fn fn,
                    void *arg)
{
	int rc;
	w->fd = *fdp;
	w->fn = fn;
	w->arg = arg;
	rc = mcpx_loop_watch(job->ex->loop, w);
	if (rc == 0)
		*fdp = -1; /* the loop owns it now */
	return rc;
}

/* The run's output, exit and stdin on the loop, its budget and its wall
 * clock. False when it cannot be supervised (then it is being ended). */
bool mcpx_ex_supervise(struct mcpx_executor *ex, struct mcpx_job *job, unsigned cpu_s)
{
	uint64_t now;
	int rc;

	if (watch_fd(job, &job->out.watch, &job->proc.stdout_fd, stream_cb, &job->out) == 0)
		job->out.open = true;
	if (watch_fd(job, &job->err.watch, &job->proc.stderr_fd, stream_cb, &job->err) == 0)
		job->err.open = true;
	if (watch_fd(job, &job->pid_watch, &job->proc.pidfd, pid_cb, job) == 0)
		job->pid_open = true;
	if (!job->out.open || !job->err.open || !job->pid_open) {
		/* Without its watches the run cannot be supervised: end it now. */
		mcpx_error("could not watch the run's descriptors");
		mcpx_ex_kill_tree(job);
		mcpx_ex_leader_exited(job);
		mcpx_ex_maybe_complete(job);
		return false;
	}
	rc = mcpx_ex_start_budget(job, cpu_s);
	if (rc < 0) {
		fail_run(job, rc == -ENOMEM ? "out of memory while starting the run's budget"
		                            : "the nested call could not be held to its caller's "
		                              "budget");
		return false;
	}
	mcpx_run_budget_held(job->link.budget, job->egress_held + job->ws_held);
	now = mcpx_now_us();
	job->deadline_us = mcpx_ex_run_deadline_us(job, now);
	job->wall_timer.fn = wall_timer_cb;
	job->wall_timer.arg = job;
	mcpx_timer_start(ex->loop, &job->wall_timer,
	                 job->deadline_us > now ? job->deadline_us - now : 0);
	job->stdin_timer.fn = stdin_timer_cb;
	job->stdin_timer.arg = job;
	if (job->proc.stdin_fd >= 0) {
		size_t need = job->feed ? job->feed_len : job->stdin_len;
		if (need > 65536)
			(void)fcntl(job->proc.stdin_fd, F_SETPIPE_SZ, (int)need);
		feed_stdin(job);
	}
	return true;
}
