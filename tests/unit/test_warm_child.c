/*
 * test_warm_child.c - the warm child's states and the warm protocol's
 * bytes: every transition the diagram has is taken, every other one is
 * refused and leaves the state as it was; the protocol's bytes are taken
 * off the front of output split anywhere, a wrong byte is a broken
 * protocol with the bytes before it taken, and the fd reader tells
 * nothing yet, end of file and a wrong byte apart.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "warm.h"
#include "warm_child.h"

enum {
	NONE = MCPX_WARM_CHILD_NONE,
	ASKED = MCPX_WARM_CHILD_ASKED,
	FORKED = MCPX_WARM_CHILD_FORKED,
	READY = MCPX_WARM_CHILD_READY,
	TAKEN = MCPX_WARM_CHILD_TAKEN,
	DISCARDED = MCPX_WARM_CHILD_DISCARDED,
	N = DISCARDED + 1
};

/* The diagram of warm_child.h, written out independently of the module. */
static bool legal(int from, int to)
{
	switch (from) {
	case NONE:
		return to == ASKED || to == FORKED;
	case ASKED:
		return to == FORKED || to == DISCARDED;
	case FORKED:
		return to == READY || to == TAKEN || to == DISCARDED;
	case READY:
		return to == TAKEN || to == DISCARDED;
	case TAKEN:
	case DISCARDED:
		return to == NONE;
	}
	return false;
}

static void test_transitions(void)
{
	struct mcpx_warm_child c;
	int n_legal = 0;

	mcpx_warm_child_init(&c);
	CHECK_INT(c.state, NONE);
	CHECK(c.proc.pid <= 0 && c.proc.stdout_fd == -1);
	CHECK(!mcpx_warm_child_prepared(&c));
	for (int from = 0; from < N; from++) {
		for (int to = 0; to < N; to++) {
			int rc;

			c.state = (enum mcpx_warm_child_state)from;
			rc = mcpx_warm_child_to(&c, (enum mcpx_warm_child_state)to, "test");
			if (legal(from, to)) {
				n_legal++;
				CHECK_INT(rc, 0);
				CHECK_INT(c.state, to);
			} else {
				if (rc != -EPROTO)
					fprintf(stderr, "%d -> %d not refused\n", from, to);
				CHECK_INT(rc, -EPROTO);
				CHECK_INT(c.state, from);
			}
		}
	}
	CHECK_INT(n_legal, 11);
	/* An out-of-range state is refused too, without reading past the table. */
	c.state = MCPX_WARM_CHILD_NONE;
	CHECK_INT(mcpx_warm_child_to(&c, (enum mcpx_warm_child_state)N, NULL), -EPROTO);
	CHECK_INT(c.state, NONE);
	/* A whole life, forked from the zygote. */
	CHECK_INT(mcpx_warm_child_to(&c, MCPX_WARM_CHILD_ASKED, NULL), 0);
	CHECK(mcpx_warm_child_prepared(&c));
	CHECK_INT(mcpx_warm_child_to(&c, MCPX_WARM_CHILD_FORKED, NULL), 0);
	CHECK(mcpx_warm_child_prepared(&c));
	CHECK_INT(mcpx_warm_child_to(&c, MCPX_WARM_CHILD_READY, NULL), 0);
	CHECK(mcpx_warm_child_prepared(&c));
	CHECK_INT(mcpx_warm_child_to(&c, MCPX_WARM_CHILD_TAKEN, NULL), 0);
	CHECK(!mcpx_warm_child_prepared(&c));
	/* A taken child cannot be taken or discarded again. */
	CHECK_INT(mcpx_warm_child_to(&c, MCPX_WARM_CHILD_TAKEN, NULL), -EPROTO);
	CHECK_INT(mcpx_warm_child_to(&c, MCPX_WARM_CHILD_DISCARDED, NULL), -EPROTO);
	CHECK_INT(mcpx_warm_child_to(&c, MCPX_WARM_CHILD_NONE, NULL), 0);
	CHECK_STR(mcpx_warm_child_state_name(MCPX_WARM_CHILD_FORKED), "forked");
	CHECK_STR(mcpx_warm_child_state_name((enum mcpx_warm_child_state)99), "invalid");
}

/* Ending a child always leaves NONE with no process, and says when the
 * way it ended was not a legal one. */
static void test_end(void)
{
	struct mcpx_warm_child c;

	mcpx_warm_child_init(&c);
	CHECK_INT(mcpx_warm_child_end(&c, MCPX_WARM_CHILD_DISCARDED), 0);
	CHECK_INT(c.state, MCPX_WARM_CHILD_NONE);
	c.state = MCPX_WARM_CHILD_FORKED;
	c.proc.pid = 42;
	CHECK_INT(mcpx_warm_child_end(&c, MCPX_WARM_CHILD_DISCARDED), 0);
	CHECK_INT(c.state, MCPX_WARM_CHILD_NONE);
	CHECK_INT(c.proc.pid, -1);
	c.state = MCPX_WARM_CHILD_TAKEN;
	CHECK_INT(mcpx_warm_child_end(&c, MCPX_WARM_CHILD_TAKEN), 0);
	CHECK_INT(c.state, MCPX_WARM_CHILD_NONE);
	/* Asked of the zygote, never taken: cannot have been handed to a run. */
	c.state = MCPX_WARM_CHILD_ASKED;
	CHECK_INT(mcpx_warm_child_end(&c, MCPX_WARM_CHILD_TAKEN), -EPROTO);
	CHECK_INT(c.state, MCPX_WARM_CHILD_NONE);
	/* A bare state (the fork server's request) ends the same way. */
	{
		enum mcpx_warm_child_state req = MCPX_WARM_CHILD_NONE;

		CHECK_INT(mcpx_warm_state_to(&req, MCPX_WARM_CHILD_ASKED, NULL), 0);
		CHECK_INT(mcpx_warm_state_to(&req, MCPX_WARM_CHILD_READY, NULL), -EPROTO);
		CHECK_INT(req, MCPX_WARM_CHILD_ASKED);
		CHECK_INT(mcpx_warm_state_to(&req, MCPX_WARM_CHILD_FORKED, NULL), 0);
		CHECK_INT(mcpx_warm_state_end(&req, MCPX_WARM_CHILD_TAKEN), 0);
		CHECK_INT(req, MCPX_WARM_CHILD_NONE);
	}
	/* Not an end at all. */
	c.state = MCPX_WARM_CHILD_FORKED;
	CHECK_INT(mcpx_warm_child_end(&c, MCPX_WARM_CHILD_READY), -EPROTO);
	CHECK_INT(c.state, MCPX_WARM_CHILD_NONE);
}

static void test_markers_take(void)
{
	const char all[] = {MCPX_WARM_READY, MCPX_WARM_TAKEN, 'h', 'i'};
	unsigned left;
	size_t used;
	bool ready;

	/* Both due, all in one buffer: the program's output starts after. */
	left = MCPX_WARM_MARKERS_ALL;
	ready = false;
	CHECK_INT(mcpx_warm_markers_take(&left, all, sizeof(all), &used, &ready), 0);
	CHECK_INT(left, 0);
	CHECK_INT(used, 2);
	CHECK(ready);
	/* Split after READY: TAKEN is due next, at the front of the next read. */
	left = MCPX_WARM_MARKERS_ALL;
	ready = false;
	CHECK_INT(mcpx_warm_markers_take(&left, all, 1, &used, &ready), 0);
	CHECK_INT(left, MCPX_WARM_MARKERS_TAKEN);
	CHECK_INT(used, 1);
	CHECK(ready);
	ready = false;
	CHECK_INT(mcpx_warm_markers_take(&left, all + 1, 3, &used, &ready), 0);
	CHECK_INT(left, 0);
	CHECK_INT(used, 1);
	CHECK(!ready);
	/* Nothing due: everything is output. */
	CHECK_INT(mcpx_warm_markers_take(&left, all, sizeof(all), &used, NULL), 0);
	CHECK_INT(used, 0);
	/* TAKEN alone due, but READY comes: a broken protocol. */
	left = MCPX_WARM_MARKERS_TAKEN;
	CHECK_INT(mcpx_warm_markers_take(&left, all, sizeof(all), &used, NULL), -EPROTO);
	CHECK_INT(left, 0);
	CHECK_INT(used, 0);
	/* READY, then output where TAKEN is due: READY is taken, not the rest. */
	left = MCPX_WARM_MARKERS_ALL;
	ready = false;
	CHECK_INT(
	    mcpx_warm_markers_take(&left, (const char[]){MCPX_WARM_READY, 'x'}, 2, &used, &ready),
	    -EPROTO);
	CHECK_INT(used, 1);
	CHECK_INT(left, 0);
	CHECK(ready);
	/* Output first, where READY is due. */
	left = MCPX_WARM_MARKERS_ALL;
	CHECK_INT(mcpx_warm_markers_take(&left, "x", 1, &used, NULL), -EPROTO);
	CHECK_INT(used, 0);
}

static void test_marker_read(void)
{
	int fds[2];
	unsigned left = MCPX_WARM_MARKERS_ALL;

	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
		CHECK(!"pipe2");
		return;
	}
	/* Nothing yet, waiting or not. */
	CHECK_INT(mcpx_warm_marker_read(fds[0], &left, 0), -EAGAIN);
	CHECK_INT(mcpx_warm_marker_read(fds[0], &left, 20), -EAGAIN);
	CHECK_INT(left, MCPX_WARM_MARKERS_ALL);
	CHECK(write(fds[1], (const char[]){MCPX_WARM_READY, MCPX_WARM_TAKEN, MCPX_WARM_READY}, 3) ==
	      3);
	CHECK_INT(mcpx_warm_marker_read(fds[0], &left, 0), 0);
	CHECK_INT(left, MCPX_WARM_MARKERS_TAKEN);
	CHECK_INT(mcpx_warm_marker_read(fds[0], &left, 1000), 0);
	CHECK_INT(left, 0);
	/* Nothing due: not read. */
	CHECK_INT(mcpx_warm_marker_read(fds[0], &left, 0), -EINVAL);
	/* A byte that is not the one due. */
	left = MCPX_WARM_MARKERS_TAKEN;
	CHECK_INT(mcpx_warm_marker_read(fds[0], &left, 0), -EPROTO);
	CHECK_INT(left, 0);
	/* End of file: the interpreter ended without the byte. */
	close(fds[1]);
	left = MCPX_WARM_MARKERS_ALL;
	CHECK_INT(mcpx_warm_marker_read(fds[0], &left, 0), -EPIPE);
	CHECK_INT(mcpx_warm_marker_read(fds[0], &left, 1000), -EPIPE);
	CHECK_INT(left, MCPX_WARM_MARKERS_ALL);
	close(fds[0]);
}

int main(void)
{
	test_transitions();
	test_end();
	test_markers_take();
	test_marker_read();
	CHECK_DONE();
}
