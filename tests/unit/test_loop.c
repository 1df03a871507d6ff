/*
 * test_loop.c - the event loop's interest in read and write (loop.h): write
 * readiness is reported only while asked for, is level-triggered, follows
 * the peer draining a full socket, and read interest can be switched off and
 * on; a watched dup() leaves the original descriptor open.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "loop.h"

struct probe {
	struct mcpx_watch w;
	struct mcpx_loop *loop;
	int peer;
	int reads, writes, closed;
	int stop_after_writes; /* drop write interest and stop after this many */
	bool drained;          /* the peer had drained before the first write event */
	bool write_after_drain;
};

static void probe_cb(struct mcpx_watch *w, int events)
{
	struct probe *p = w->arg;
	char buf[4096];

	if (events & MCPX_EV_READ) {
		p->reads++;
		while (read(w->fd, buf, sizeof(buf)) > 0)
			;
		mcpx_loop_set_events(w, 0);
		mcpx_loop_stop(p->loop);
	}
	if (events & MCPX_EV_WRITE) {
		p->writes++;
		if (p->writes == 1)
			p->write_after_drain = p->drained;
		if (p->stop_after_writes && p->writes == p->stop_after_writes) {
			mcpx_loop_set_events(w, 0);
			mcpx_loop_stop(p->loop);
		}
	}
	if (events & MCPX_EV_CLOSED)
		p->closed++;
}

static void probe_init(struct probe *p, struct mcpx_loop *loop, int fd, int peer)
{
	memset(p, 0, sizeof(*p));
	p->loop = loop;
	p->peer = peer;
	p->w.fd = fd;
	p->w.fn = probe_cb;
	p->w.arg = p;
}

/* Write interest on a writable socket fires again and again until dropped. */
static void test_level_triggered_write(struct mcpx_loop *loop)
{
	struct probe p;
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
	probe_init(&p, loop, sv[0], sv[1]);
	p.stop_after_writes = 3;
	CHECK_INT(mcpx_loop_watch(loop, &p.w), 0);
	CHECK_INT(mcpx_loop_set_events(&p.w, MCPX_EV_WRITE), 0);
	CHECK_INT(mcpx_loop_run(loop), 0);
	CHECK_INT(p.writes, 3);
	CHECK_INT(p.reads, 0);
	mcpx_loop_unwatch(&p.w);
	CHECK_INT(p.closed, 1);
	close(sv[1]);
}

struct drain {
	struct mcpx_timer t;
	struct probe *p;
};

static void drain_cb(struct mcpx_timer *t)
{
	struct drain *d = (struct drain *)t;
	char buf[65536];

	while (read(d->p->peer, buf, sizeof(buf)) > 0)
		;
	d->p->drained = true;
}

/* A full socket reports writable only once the peer has read from it. */
static void test_write_waits_for_room(struct mcpx_loop *loop)
{
	struct probe p;
	struct drain d;
	char buf[4096];
	int sv[2];

	memset(buf, 'x', sizeof(buf));
	memset(&d, 0, sizeof(d));
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
	while (write(sv[0], buf, sizeof(buf)) > 0)
		;
	CHECK_INT(errno, EAGAIN);
	probe_init(&p, loop, sv[0], sv[1]);
	p.stop_after_writes = 1;
	CHECK_INT(mcpx_loop_watch(loop, &p.w), 0);
	CHECK_INT(mcpx_loop_set_events(&p.w, MCPX_EV_WRITE), 0);
	d.p = &p;
	d.t.fn = drain_cb;
	mcpx_timer_start(loop, &d.t, 20000);
	CHECK_INT(mcpx_loop_run(loop), 0);
	CHECK_INT(p.writes, 1);
	CHECK(p.write_after_drain);
	mcpx_loop_unwatch(&p.w);
	close(sv[1]);
}

static void write_peer_cb(struct mcpx_timer *t)
{
	struct drain *d = (struct drain *)t;

	CHECK_INT(write(d->p->peer, "x", 1), 1);
}

static void enable_read_cb(struct mcpx_timer *t)
{
	struct drain *d = (struct drain *)t;

	d->p->drained = true; /* here: read interest is back */
	CHECK_INT(mcpx_loop_set_events(&d->p->w, MCPX_EV_READ), 0);
}

/* With read interest off, pending data is not reported until it is back on;
 * the watched dup leaves the original open. */
static void test_read_interest_toggles(struct mcpx_loop *loop)
{
	struct probe p;
	struct drain wr, en;
	int sv[2], dup_fd;

	memset(&wr, 0, sizeof(wr));
	memset(&en, 0, sizeof(en));
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
	dup_fd = fcntl(sv[0], F_DUPFD_CLOEXEC, 0);
	CHECK(dup_fd >= 0);
	probe_init(&p, loop, dup_fd, sv[1]);
	CHECK_INT(mcpx_loop_watch(loop, &p.w), 0);
	CHECK_INT(mcpx_loop_set_events(&p.w, 0), 0);
	wr.p = en.p = &p;
	wr.t.fn = write_peer_cb;
	en.t.fn = enable_read_cb;
	mcpx_timer_start(loop, &wr.t, 0);
	mcpx_timer_start(loop, &en.t, 50000);
	CHECK_INT(mcpx_loop_run(loop), 0);
	CHECK_INT(p.reads, 1);
	CHECK(p.drained); /* the read came only after interest was restored */
	mcpx_loop_unwatch(&p.w);
	CHECK_INT(p.closed, 1);
	/* The original survives its watched duplicate. */
	CHECK_INT(write(sv[1], "y", 1), 1);
	{
		char c = 0;
		CHECK_INT(read(sv[0], &c, 1), 1);
		CHECK(c == 'y');
	}
	CHECK_INT(mcpx_loop_set_events(&p.w, MCPX_EV_READ), -EBADF);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	/* A stopped loop stays stopped: each test gets its own. */
	void (*const tests[])(struct mcpx_loop *) = {
	    test_level_triggered_write, test_write_waits_for_room, test_read_interest_toggles};

	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		struct mcpx_loop *loop = mcpx_loop_new();

		CHECK(loop != NULL);
		if (!loop)
			return 1;
		tests[i](loop);
		mcpx_loop_free(loop);
	}
	CHECK_DONE();
}
