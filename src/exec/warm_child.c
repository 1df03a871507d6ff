/*
 * warm_child.c - the next run's warm child (warm_child.h): its state, the
 * transitions allowed between states, and the warm protocol's bytes as the
 * server reads them.
 *
 * What it does not do: start, take, hand over or end a process (the warm
 * pool does, warm_pool.c), or write the protocol's bytes (the interpreter
 * does, src/zygote/).
 */
#include "warm_child.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include "log.h"
#include "warm.h"

/* Which state may follow which (warm_child.h's diagram), one bit per next
 * state. Anything else is the holder's bug. */
#define TO(s) (1u << (s))
static const unsigned allowed[] = {
    [MCPX_WARM_CHILD_NONE] = TO(MCPX_WARM_CHILD_ASKED) | TO(MCPX_WARM_CHILD_FORKED),
    [MCPX_WARM_CHILD_ASKED] = TO(MCPX_WARM_CHILD_FORKED) | TO(MCPX_WARM_CHILD_DISCARDED),
    [MCPX_WARM_CHILD_FORKED] =
        TO(MCPX_WARM_CHILD_READY) | TO(MCPX_WARM_CHILD_TAKEN) | TO(MCPX_WARM_CHILD_DISCARDED),
    [MCPX_WARM_CHILD_READY] = TO(MCPX_WARM_CHILD_TAKEN) | TO(MCPX_WARM_CHILD_DISCARDED),
    [MCPX_WARM_CHILD_TAKEN] = TO(MCPX_WARM_CHILD_NONE),
    [MCPX_WARM_CHILD_DISCARDED] = TO(MCPX_WARM_CHILD_NONE),
};
#define N_STATES (sizeof(allowed) / sizeof(allowed[0]))

const char *mcpx_warm_child_state_name(enum mcpx_warm_child_state s)
{
	static const char *const names[] = {
	    [MCPX_WARM_CHILD_NONE] = "none",     [MCPX_WARM_CHILD_ASKED] = "asked",
	    [MCPX_WARM_CHILD_FORKED] = "forked", [MCPX_WARM_CHILD_READY] = "ready",
	    [MCPX_WARM_CHILD_TAKEN] = "taken",   [MCPX_WARM_CHILD_DISCARDED] = "discarded",
	};

	return (unsigned)s < N_STATES ? names[s] : "invalid";
}

void mcpx_warm_child_init(struct mcpx_warm_child *c)
{
	c->state = MCPX_WARM_CHILD_NONE;
	mcpx_sandbox_proc_reset(&c->proc);
}

int mcpx_warm_state_to(enum mcpx_warm_child_state *s, enum mcpx_warm_child_state next,
                       const char *why)
{
	if ((unsigned)*s >= N_STATES || (unsigned)next >= N_STATES || !(allowed[*s] & TO(next))) {
		mcpx_error("warm child: refused the transition %s -> %s%s%s",
		           mcpx_warm_child_state_name(*s), mcpx_warm_child_state_name(next),
		           why ? ": " : "", why ? why : "");
		return -EPROTO;
	}
	*s = next;
	return 0;
}

int mcpx_warm_state_end(enum mcpx_warm_child_state *s, enum mcpx_warm_child_state how)
{
	int rc = 0;

	if (*s == MCPX_WARM_CHILD_NONE)
		return 0;
	if (*s != how)
		rc = mcpx_warm_state_to(s, how, "ending it");
	if (rc == 0)
		rc = mcpx_warm_state_to(s, MCPX_WARM_CHILD_NONE, NULL);
	/* The next child starts from nothing, whatever this one's end was. */
	*s = MCPX_WARM_CHILD_NONE;
	return rc;
}

int mcpx_warm_child_to(struct mcpx_warm_child *c, enum mcpx_warm_child_state next, const char *why)
{
	return mcpx_warm_state_to(&c->state, next, why);
}

int mcpx_warm_child_end(struct mcpx_warm_child *c, enum mcpx_warm_child_state how)
{
	int rc = mcpx_warm_state_end(&c->state, how);

	mcpx_sandbox_proc_reset(&c->proc);
	return rc;
}

bool mcpx_warm_child_prepared(const struct mcpx_warm_child *c)
{
	return c->state == MCPX_WARM_CHILD_ASKED || c->state == MCPX_WARM_CHILD_FORKED ||
	       c->state == MCPX_WARM_CHILD_READY;
}

/* ---- the protocol's bytes ------------------------------------------------ */

int mcpx_warm_markers_take(unsigned *left, const char *buf, size_t n, size_t *used, bool *ready)
{
	size_t i = 0;

	for (; *left && i < n; i++, (*left)--) {
		/* READY comes first, so it is due while both are. */
		char want = *left >= MCPX_WARM_MARKERS_ALL ? MCPX_WARM_READY : MCPX_WARM_TAKEN;

		if (buf[i] != want) {
			*left = 0;
			*used = i;
			return -EPROTO;
		}
		if (want == MCPX_WARM_READY && ready)
			*ready = true;
	}
	*used = i;
	return 0;
}

int mcpx_warm_marker_read(int fd, unsigned *left, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	size_t used;
	ssize_t n;
	char byte;
	int r;

	if (!*left)
		return -EINVAL;
	if (timeout_ms > 0) {
		do
			r = poll(&pfd, 1, timeout_ms);
		while (r < 0 && errno == EINTR);
		if (r == 0)
			return -EAGAIN;
	}
	do
		n = read(fd, &byte, 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (n == 0)
		return -EPIPE;
	return mcpx_warm_markers_take(left, &byte, 1, &used, NULL);
}
