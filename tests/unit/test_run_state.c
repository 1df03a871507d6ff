/*
 * test_run_state.c - a run's lifecycle in the executor: every transition
 * the diagram of run_state.h has is taken, every other one (a run started
 * twice, one that ends without having run, one brought back from DONE) is
 * refused and leaves the state as it was.
 */
#include <errno.h>
#include <stdbool.h>

#include "check.h"
#include "run_state.h"

enum {
	QUEUED = MCPX_RUN_QUEUED,
	RUNNING = MCPX_RUN_RUNNING,
	ENDING = MCPX_RUN_ENDING,
	DONE = MCPX_RUN_DONE,
	N = DONE + 1
};

/* The diagram of run_state.h, written out independently of the module. */
static bool legal(int from, int to)
{
	switch (from) {
	case QUEUED:
		return to == RUNNING || to == DONE;
	case RUNNING:
		return to == ENDING;
	case ENDING:
		return to == DONE;
	}
	return false;
}

static void test_transitions(void)
{
	int n_legal = 0;

	for (int from = 0; from < N; from++) {
		for (int to = 0; to < N; to++) {
			enum mcpx_run_state s = (enum mcpx_run_state)from;
			int rc = mcpx_run_state_to(&s, (enum mcpx_run_state)to, "test");

			if (legal(from, to)) {
				n_legal++;
				CHECK_INT(rc, 0);
				CHECK_INT(s, to);
			} else {
				if (rc != -EPROTO)
					fprintf(stderr, "%d -> %d not refused\n", from, to);
				CHECK_INT(rc, -EPROTO);
				CHECK_INT(s, from);
			}
		}
	}
	CHECK_INT(n_legal, 4);
}

/* A run's whole life, and what is refused on the way: an out-of-range
 * state is refused without reading past the table. */
static void test_life(void)
{
	enum mcpx_run_state s = MCPX_RUN_QUEUED;

	CHECK_INT(mcpx_run_state_to(&s, MCPX_RUN_ENDING, NULL), -EPROTO);
	CHECK_INT(mcpx_run_state_to(&s, MCPX_RUN_RUNNING, NULL), 0);
	CHECK_INT(mcpx_run_state_to(&s, MCPX_RUN_RUNNING, NULL), -EPROTO);
	CHECK_INT(mcpx_run_state_to(&s, MCPX_RUN_DONE, NULL), -EPROTO);
	CHECK_INT(mcpx_run_state_to(&s, MCPX_RUN_ENDING, NULL), 0);
	CHECK_INT(mcpx_run_state_to(&s, MCPX_RUN_DONE, NULL), 0);
	CHECK_INT(mcpx_run_state_to(&s, MCPX_RUN_QUEUED, NULL), -EPROTO);
	CHECK_INT(s, DONE);
	CHECK_INT(mcpx_run_state_to(&s, (enum mcpx_run_state)N, NULL), -EPROTO);
	s = (enum mcpx_run_state)N;
	CHECK_INT(mcpx_run_state_to(&s, MCPX_RUN_DONE, NULL), -EPROTO);
	CHECK_STR(mcpx_run_state_name(MCPX_RUN_ENDING), "ending");
	CHECK_STR(mcpx_run_state_name((enum mcpx_run_state)N), "invalid");
}

int main(void)
{
	test_transitions();
	test_life();
	CHECK_DONE();
}
