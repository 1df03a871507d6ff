/*
 * bash_pool.c - the next bash run, started before its call (bash_pool.h).
 *
 * Its life: NONE -> STARTING (spawned; the gate's write end is tried, first
 * just before the time the last bash took to get there, then every
 * GATE_POLL_US, until bash waits there) -> READY (the write end held) ->
 * taken by a call (NONE again) or ended. A bash that does not reach its
 * gate within GATE_GIVE_UP_US is ended; after MAX_FAILURES such ends in a
 * row no more are prepared.
 *
 * The limits it waits with are the loosest a call can get (the server's
 * memory and CPU limits, plus a few CPU seconds: run_limits.h), and the
 * gate's line sets the call's own CPU and memory limits before the script
 * (gate.c, from the rlimits a cold spawn sets). Its process budget is
 * counted when it is prepared, as a warm interpreter's is.
 */
#include "bash_pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fdutil.h"
#include "log.h"
#include "procstat.h"
#include "reap_later.h"
#include "run_hooks.h"
#include "run_limits.h"

/* Each try of the gate is a turn of the loop, which polls every descriptor
 * (measured: a bash took 6 to 8 tries, 7.5 ms, to reach its gate on the
 * benchmark machine, and the turns cost the server about 1 ms of CPU per
 * call). So the first try comes just before the last bash got there, and
 * then one a millisecond. */
#define GATE_FIRST_POLL_MIN_US 1000u
#define GATE_FIRST_POLL_MAX_US 50000u
#define GATE_EARLY_US 500u
#define GATE_POLL_US 1000u
#define GATE_GIVE_UP_US (10u * 1000000u)
/* After a run, the next bash waits this long, so the reply goes first. */
#define PREPARE_DELAY_US 1000u
/* RLIMIT_CPU while it waits is the largest a call can get plus this, so
 * that the call's own is never above it. */
#define WAIT_CPU_SLACK_S 5u
#define MAX_FAILURES 3

enum bash_state { BASH_NONE, BASH_STARTING, BASH_READY };

struct mcpx_bash_pool {
	struct mcpx_loop *loop;
	const struct mcpx_config *cfg;
	const struct mcpx_sandbox *sb;
	const struct mcpx_executor_hooks *hooks;
	enum bash_state state;
	struct mcpx_sandbox_proc proc; /* STARTING, READY */
	int workdir_fd;                /* STARTING: its workdir (O_PATH) */
	int gate_fd;                   /* READY: the gate's write end */
	bool channel;                  /* prepared with a broker channel */
	bool wanted;                   /* a bash call has come */
	unsigned failures;
	uint64_t started_us;
	unsigned tries;          /* of the gate, by this one */
	uint64_t reach_us;       /* how long the last one took to reach its gate (0: none yet) */
	struct mcpx_timer timer; /* PREPARE_DELAY_US, then the gate polls */
};

struct mcpx_bash_pool *mcpx_bash_pool_new(struct mcpx_loop *loop, const struct mcpx_config *cfg,
                                          const struct mcpx_sandbox *sb,
                                          const struct mcpx_executor_hooks *hooks)
{
	struct mcpx_bash_pool *bp = calloc(1, sizeof(*bp));

	if (!bp)
		return NULL;
	bp->loop = loop;
	bp->cfg = cfg;
	bp->sb = sb;
	bp->hooks = hooks;
	bp->gate_fd = -1;
	bp->workdir_fd = -1;
	mcpx_sandbox_proc_reset(&bp->proc);
	return bp;
}

/* Ends the waiting bash (STARTING or READY): killed now, reaped and
 * removed once it has exited (reap_later.h). */
static void end_bash(struct mcpx_bash_pool *bp)
{
	mcpx_timer_cancel(&bp->timer);
	if (bp->state == BASH_NONE)
		return;
	mcpx_close_fd(&bp->gate_fd);
	mcpx_close_fd(&bp->workdir_fd);
	/* Reaped once it has exited, without waiting on the loop. */
	mcpx_reap_later(bp->loop, &bp->proc);
	bp->state = BASH_NONE;
}

static bool wants_channel(const struct mcpx_bash_pool *bp)
{
	return bp->hooks && bp->hooks->exec_wants_channel &&
	       bp->hooks->exec_wants_channel(bp->hooks->arg);
}

static void poll_gate_cb(struct mcpx_timer *t)
{
	struct mcpx_bash_pool *bp = t->arg;
	int rc = mcpx_sandbox_gate_reached(bp->workdir_fd, &bp->gate_fd);

	bp->tries++;
	if (rc > 0) {
		mcpx_close_fd(&bp->workdir_fd);
		bp->reach_us = mcpx_now_us() - bp->started_us;
		mcpx_debug("a bash waits at its gate after %u tries, %llu us", bp->tries,
		           (unsigned long long)bp->reach_us);
		bp->state = BASH_READY;
		bp->failures = 0;
		return;
	}
	if (rc == 0 && mcpx_now_us() - bp->started_us < GATE_GIVE_UP_US) {
		mcpx_timer_start(bp->loop, &bp->timer, GATE_POLL_US);
		return;
	}
	mcpx_warn("the prepared bash did not reach its gate (%s); ending it",
	          rc ? strerror(-rc) : "timed out");
	end_bash(bp);
	bp->failures++;
}

static uint64_t first_try_us(const struct mcpx_bash_pool *bp)
{
	uint64_t us = bp->reach_us > GATE_EARLY_US ? bp->reach_us - GATE_EARLY_US : 0;

	return us < GATE_FIRST_POLL_MIN_US   ? GATE_FIRST_POLL_MIN_US
	       : us > GATE_FIRST_POLL_MAX_US ? GATE_FIRST_POLL_MAX_US
	                                     : us;
}

static void prepare_cb(struct mcpx_timer *t)
{
	struct mcpx_bash_pool *bp = t->arg;
	struct mcpx_limits lim;
	struct mcpx_err err = {{0}};

	if (bp->state != BASH_NONE)
		return;
	mcpx_run_limits_waiting(bp->cfg, WAIT_CPU_SLACK_S, wants_channel(bp), &lim);
	if (mcpx_sandbox_spawn_gated(bp->sb, &lim, &bp->proc, &err) < 0) {
		mcpx_warn("could not prepare a bash: %s", err.msg);
		mcpx_sandbox_proc_reset(&bp->proc);
		bp->failures++;
		return;
	}
	bp->state = BASH_STARTING;
	bp->channel = lim.channel;
	bp->started_us = mcpx_now_us();
	bp->tries = 0;
	bp->workdir_fd = mcpx_sandbox_workdir_open(&bp->proc);
	if (bp->workdir_fd < 0) {
		mcpx_warn("could not open the prepared bash's workdir: %s",
		          strerror(-bp->workdir_fd));
		end_bash(bp);
		bp->failures++;
		return;
	}
	bp->timer.fn = poll_gate_cb;
	mcpx_timer_start(bp->loop, &bp->timer, first_try_us(bp));
}

int mcpx_bash_pool_take(struct mcpx_bash_pool *bp, bool allowed, const struct mcpx_limits *lim,
                        const char *code, size_t code_len, const struct mcpx_workdir_fill *fill,
                        struct mcpx_sandbox_proc *proc, uint64_t *cpu_base_ms)
{
	struct mcpx_procstat ps;
	struct mcpx_err err = {{0}};

	bp->wanted = true;
	*cpu_base_ms = 0;
	if (!allowed || (bp->state != BASH_NONE && bp->channel != lim->channel)) {
		end_bash(bp);
		return 0;
	}
	/* Still starting: it stays for the next call. */
	if (bp->state != BASH_READY)
		return 0;
	if (mcpx_procstat_read(bp->proc.pid, &ps) == 0)
		*cpu_base_ms = ps.cpu_ms;
	if (mcpx_sandbox_gate_open(bp->sb, lim, code, code_len, fill, &bp->gate_fd, &bp->proc,
	                           &err) < 0) {
		mcpx_warn("the prepared bash could not take the call (%s); starting cold", err.msg);
		end_bash(bp);
		*cpu_base_ms = 0;
		return 0;
	}
	*proc = bp->proc;
	mcpx_sandbox_proc_reset(&bp->proc);
	bp->state = BASH_NONE;
	return 1;
}

void mcpx_bash_pool_run_ended(struct mcpx_bash_pool *bp, bool allowed)
{
	if (!allowed) {
		end_bash(bp);
		return;
	}
	if (!bp->wanted || bp->state != BASH_NONE || bp->failures >= MAX_FAILURES ||
	    bp->timer.armed)
		return;
	bp->timer.fn = prepare_cb;
	bp->timer.arg = bp;
	mcpx_timer_start(bp->loop, &bp->timer, PREPARE_DELAY_US);
}

void mcpx_bash_pool_discard(struct mcpx_bash_pool *bp)
{
	end_bash(bp);
}

void mcpx_bash_pool_stop(struct mcpx_bash_pool *bp)
{
	end_bash(bp);
	bp->wanted = false;
}

bool mcpx_bash_pool_ready(const struct mcpx_bash_pool *bp)
{
	return bp && bp->state == BASH_READY;
}

void mcpx_bash_pool_free(struct mcpx_bash_pool *bp)
{
	if (!bp)
		return;
	mcpx_bash_pool_stop(bp);
	free(bp);
}
