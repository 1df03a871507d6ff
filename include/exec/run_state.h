/*
 * run_state.h - where a run is in its life in the executor (executor.c):
 * one state, changed through one transition function that refuses a
 * transition the lifecycle does not have.
 *
 * The states, in the order a run goes through them:
 *
 *   QUEUED ---> RUNNING ---> ENDING ---> DONE
 *     |                                   ^
 *     +-----------------------------------+
 *
 * - QUEUED: accepted, not started: in the queue, or a nested run waiting
 *   for its start on the next loop iteration;
 * - RUNNING: its process was started and is supervised (output, exit,
 *   stdin, wall clock, budget);
 * - ENDING: its leader exited or the run was ended: the whole tree is
 *   killed, and the job waits for its pipes and pidfd to close;
 * - DONE: reaped and reported, or dropped without running (expired,
 *   refused, failed to start, cancelled while queued, drained, freed):
 *   unlinked from its caller and its nested runs, only its memory left.
 *
 * Why a run ended (timed out, a budget, truncated, the environment failed,
 * cancelled) are facts of its result, kept beside the state, not states.
 */
#ifndef MCPX_RUN_STATE_H
#define MCPX_RUN_STATE_H

enum mcpx_run_state {
	MCPX_RUN_QUEUED,
	MCPX_RUN_RUNNING,
	MCPX_RUN_ENDING,
	MCPX_RUN_DONE,
};

/* Moves *s to next when the diagram above has that transition; otherwise
 * logs it (with why, which may be NULL), leaves *s as it was and returns
 * -EPROTO: the caller's bug. Returns 0 on success. */
int mcpx_run_state_to(enum mcpx_run_state *s, enum mcpx_run_state next, const char *why);

/* "queued", "running", "ending", "done", or "invalid". */
const char *mcpx_run_state_name(enum mcpx_run_state s);

#endif
