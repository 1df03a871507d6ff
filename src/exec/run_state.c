/*
 * run_state.c - a run's lifecycle in the executor (run_state.h): its states
 * and the transitions allowed between them.
 *
 * What it does not do: what happens on entering a state (the executor's
 * job_enter, executor.c), or any waiting.
 */
#include "run_state.h"

#include <errno.h>
#include <stddef.h>

#include "log.h"

/* Which state may follow which (run_state.h's diagram), one bit per next
 * state. Anything else is the executor's bug. */
#define TO(s) (1u << (s))
static const unsigned allowed[] = {
    [MCPX_RUN_QUEUED] = TO(MCPX_RUN_RUNNING) | TO(MCPX_RUN_DONE),
    [MCPX_RUN_RUNNING] = TO(MCPX_RUN_ENDING),
    [MCPX_RUN_ENDING] = TO(MCPX_RUN_DONE),
    [MCPX_RUN_DONE] = 0,
};
#define N_STATES (sizeof(allowed) / sizeof(allowed[0]))

const char *mcpx_run_state_name(enum mcpx_run_state s)
{
	static const char *const names[] = {
	    [MCPX_RUN_QUEUED] = "queued",
	    [MCPX_RUN_RUNNING] = "running",
	    [MCPX_RUN_ENDING] = "ending",
	    [MCPX_RUN_DONE] = "done",
	};

	return (unsigned)s < N_STATES ? names[s] : "invalid";
}

int mcpx_run_state_to(enum mcpx_run_state *s, enum mcpx_run_state next, const char *why)
{
	if ((unsigned)*s >= N_STATES || (unsigned)next >= N_STATES || !(allowed[*s] & TO(next))) {
		mcpx_error("run: refused the transition %s -> %s%s%s", mcpx_run_state_name(*s),
		           mcpx_run_state_name(next), why ? ": " : "", why ? why : "");
		return -EPROTO;
	}
	*s = next;
	return 0;
}
