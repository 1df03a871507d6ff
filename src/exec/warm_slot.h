/*
 * warm_slot.h - one kind of warm child, and what the warm pool's two files
 * share.
 *
 * warm_pool.c  the pool: its mode and its failures, which kind a run
 *              takes, taking, waiting for a zygote's answer, what is
 *              prepared when runs start and end
 * warm_slot.c  one kind of warm child (plain or scientific): its zygotes
 *              over time (fork-server mode) or its fresh interpreter
 *              (after-reap mode), and the one child prepared for the next
 *              run of that kind: asked, taken, recycled, discarded
 *
 * warm_pool.c sits above warm_slot.c and alone calls down into it; a slot
 * tells the pool of a failure, the end of fork mode or a proven zygote
 * through the pool's hooks (struct warm_pool_hooks).
 *
 * Not for use outside those two files; everyone else has warm_pool.h.
 */
#ifndef MCPX_WARM_SLOT_H
#define MCPX_WARM_SLOT_H

#include <stdbool.h>
#include <stdint.h>

#include "loop.h"
#include "warm_child.h"
#include "warm_pool.h"

struct mcpx_zygotes;

/* One kind of warm child. In fork-server mode a slot has its own zygotes
 * (the plain one preloads nothing; the scientific one MCP_EXEC_PRELOAD);
 * in after-reap mode only the scientific slot is used, for the fresh
 * interpreter. */
struct warm_slot {
	struct mcpx_warm_pool *wp;
	enum mcpx_warm_kind kind;
	bool used;
	const char *preload; /* its zygotes' (a resolved list) */
	/* The next run's child of this kind: its state and, once it exists,
	 * its process (warm_child.h). The one record of it: the zygotes and
	 * the fork server keep only what they need to answer for it. */
	struct mcpx_warm_child child;
	struct mcpx_timer recycle;
	struct mcpx_timer kick;
	/* The kick waits one more loop iteration first: set when a run has
	 * just ended, so that its reply is written before anything is
	 * prepared (mcpx_warm_pool_run_ended). */
	bool kick_yield;
	struct mcpx_zygotes *zyg;     /* fork mode: this kind's zygotes */
	struct mcpx_zygotes *leaving; /* fork mode ended: freed once no run of theirs is left */
	struct mcpx_timer zygote_timer;
	/* Fork mode: runs of this kind wait for its first zygote until then
	 * (mcpx_warm_pool_starting); 0 once it is proven or given up. */
	uint64_t first_deadline_us;
};

/* What a slot tells its pool (warm_pool.c fills them in). */
struct warm_pool_hooks {
	/* A failure to prepare; after a few in a row the mode degrades. */
	void (*failed)(struct mcpx_warm_pool *wp, const char *why);
	/* Fork mode given up for the rest of the process's life. */
	void (*leave_fork_mode)(struct mcpx_warm_pool *wp, const char *why);
	/* A slot's first zygote was proven. */
	void (*zygote_proven)(struct mcpx_warm_pool *wp);
};

struct mcpx_warm_pool {
	const struct warm_pool_hooks *hooks_up;
	struct mcpx_loop *loop;
	const struct mcpx_config *cfg;
	const struct mcpx_sandbox *sb;
	const struct mcpx_executor_hooks *hooks; /* may be NULL: no run gets a channel */
	enum mcpx_warm_mode mode;
	bool stopped;
	pid_t running; /* the running run's process group, or 0 */
	unsigned failures;
	uint64_t last_end_us; /* when the last run ended (0: none yet) */
	struct warm_slot slot[MCPX_WARM_KINDS];
	enum mcpx_warm_kind last_kind; /* of the last child taken */
	bool announced;                /* "fork server ready" logged */
	/* A run waits for a zygote's answer to its kind's fork
	 * (mcpx_warm_pool_wait_kind), told by the zygotes' watch (answered);
	 * wake is called once then. */
	bool waiting;
	enum mcpx_warm_kind waiting_kind;
	void (*wake)(void *arg);
	void *wake_arg;
};

/* ---- warm_slot.c ---- */

bool mcpx_slot_prepared(const struct warm_slot *s);
/* Ends the child's life: handed to a run, or discarded. */
void mcpx_slot_child_end(struct warm_slot *s, enum mcpx_warm_child_state how);
/* Prepares the slot's next child when allowed (mode, stopped, a run beside
 * in after-reap mode); a fork is asked of its zygotes. */
void mcpx_slot_prepare(struct warm_slot *s);
/* On the loop's next turn (after usec), or after the after-reap pause. */
void mcpx_slot_schedule_in(struct warm_slot *s, uint64_t usec);
void mcpx_slot_schedule(struct warm_slot *s);
/* Ends what the slot prepared (never waiting on the loop). */
void mcpx_slot_discard(struct warm_slot *s);
/* Fork mode: takes the asked-for child from the zygote (ASKED to FORKED);
 * a failed sandbox setup goes into *setup_err (may be NULL). */
bool mcpx_slot_take_pending(struct warm_slot *s, struct mcpx_err *setup_err);
/* Fork mode: lets the slot's zygotes do what is due; 1 when a fork can be
 * asked for now, 0 when not, -1 when fork mode ended. */
int mcpx_slot_zygote_ready(struct warm_slot *s);
/* Fork mode: starts the slot's first zygote (primary: its pid is the one
 * /metrics shows). */
void mcpx_slot_start_zygotes(struct warm_slot *s, bool primary);
/* Looks at the slot's zygotes after a run (renewal due, a proof). */
void mcpx_slot_zygotes_later(struct warm_slot *s, uint64_t usec);

/* The limits a warm process is prepared with. */
void mcpx_slot_limits(const struct mcpx_warm_pool *wp, struct mcpx_limits *lim);
/* The zygotes' watch read an answer to a fork (arg: the pool): the run
 * waiting for its child is woken. */
void mcpx_slot_answered(void *arg);

#endif
