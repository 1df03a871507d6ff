/*
 * warm_child.h - the next run's warm child, as the server sees it: one
 * state, changed through one transition function, and the one routine that
 * reads the warm protocol's bytes (warm.h: READY, then TAKEN) off the front
 * of a warm interpreter's stdout, for runs (executor.c), for the pool's
 * check before a hand-over (warm_pool.c) and for the zygote's self-test
 * probes (zygote_cycle.c, forkserver.c).
 *
 * The states, in the order a child goes through them:
 *
 *   NONE ---> ASKED ---> FORKED ---> READY ---> TAKEN
 *     |         |          |  \________________/^
 *     |         v          v          |
 *     |     DISCARDED <----+----------+
 *     +-------------------> FORKED  (a fresh interpreter, after-reap mode)
 *
 * - ASKED: a fork was asked of the zygote (zygote_cycle.h) and the child
 *   is not taken from it yet; the zygote's answer may have come or not
 *   (mcpx_zygotes_unanswered_fd says which).
 * - FORKED: a process exists and is the holder's (its proc): taken from
 *   the zygote with its setup verdict possibly still to come, or a fresh
 *   interpreter started; it has not said READY.
 * - READY: it said READY and waits for its code.
 * - TAKEN: handed to a run (a forked child still entering its sandbox may
 *   be handed over from FORKED: its READY byte then precedes its output).
 * - DISCARDED: ended unused, or its preparation failed.
 * TAKEN and DISCARDED end a child: the holder's next child starts at NONE.
 *
 * Nothing here waits, allocates or owns a process: the holder (warm_pool.c)
 * owns the child and its proc, and ends or hands over the process itself.
 * Not thread-safe.
 */
#ifndef MCPX_WARM_CHILD_H
#define MCPX_WARM_CHILD_H

#include <stdbool.h>
#include <stddef.h>

#include "sandbox.h"

enum mcpx_warm_child_state {
	MCPX_WARM_CHILD_NONE,
	MCPX_WARM_CHILD_ASKED,
	MCPX_WARM_CHILD_FORKED,
	MCPX_WARM_CHILD_READY,
	MCPX_WARM_CHILD_TAKEN,
	MCPX_WARM_CHILD_DISCARDED,
};

struct mcpx_warm_child {
	enum mcpx_warm_child_state state;
	/* FORKED and READY: the process, the holder's to end or hand over.
	 * TAKEN: the run's; the pool hands it over with the child, a probe
	 * (its own run) keeps it until it ends it. Reset otherwise. */
	struct mcpx_sandbox_proc proc;
};

/* A child in state NONE with no process. */
void mcpx_warm_child_init(struct mcpx_warm_child *c);

/* Moves c to next, the one place its state changes. A transition the
 * diagram above does not have is a bug in the holder: it is logged and
 * refused (-EPROTO, c unchanged), never an abort, and the holder treats it
 * as a failure to prepare. why (may be NULL) goes into that log line. */
int mcpx_warm_child_to(struct mcpx_warm_child *c, enum mcpx_warm_child_state next, const char *why);

/* Ends c's child: to how (TAKEN or DISCARDED) unless it is there already,
 * then back to NONE with proc reset (the holder has handed over or ended
 * the process first). Nothing to do from NONE. Whatever a refused
 * transition says (logged), c is NONE afterwards: returns 0 or -EPROTO. */
int mcpx_warm_child_end(struct mcpx_warm_child *c, enum mcpx_warm_child_state how);

/* The same two on a bare state, for a record of the child that holds no
 * process (forkserver.c's request to the zygote: NONE, ASKED until the
 * zygote's answer is read, FORKED once it is, then TAKEN or DISCARDED). */
int mcpx_warm_state_to(enum mcpx_warm_child_state *s, enum mcpx_warm_child_state next,
                       const char *why);
int mcpx_warm_state_end(enum mcpx_warm_child_state *s, enum mcpx_warm_child_state how);

/* True from ASKED to READY: a child is being prepared or waits. */
bool mcpx_warm_child_prepared(const struct mcpx_warm_child *c);

const char *mcpx_warm_child_state_name(enum mcpx_warm_child_state s);

/* ---- the protocol's bytes ------------------------------------------------ */

/* How many of the protocol's bytes are still due at the front of a warm
 * interpreter's stdout: both (READY, then TAKEN), or TAKEN alone (READY was
 * read before the hand-over). 0: none (the program's own output). */
#define MCPX_WARM_MARKERS_ALL 2u
#define MCPX_WARM_MARKERS_TAKEN 1u

/* Takes the due protocol bytes off the front of buf (n bytes): *left counts
 * down for each one found, *used says how many of buf's bytes they were
 * (the rest is the program's output) and *ready (may be NULL) is set when
 * READY was among them. Returns 0, or -EPROTO when a byte is not the one
 * due: the interpreter broke the protocol, *left becomes 0 and *used stops
 * before that byte. */
int mcpx_warm_markers_take(unsigned *left, const char *buf, size_t n, size_t *used, bool *ready);

/* Reads the next due byte from fd (O_NONBLOCK), waiting at most timeout_ms
 * for it (0: not at all), and takes it as mcpx_warm_markers_take does.
 * Returns 0 (*left counted down), -EAGAIN (nothing yet), -EPIPE (end of
 * file: the interpreter ended without it), -EPROTO (another byte), -EINVAL
 * (nothing is due) or another -errno of read. */
int mcpx_warm_marker_read(int fd, unsigned *left, int timeout_ms);

#endif
