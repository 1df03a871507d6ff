/*
 * forkserver_wire.c - the fork server's control socket (forkserver.h,
 * forkserver_wire.h): requests sent, their answers read in order and
 * handed to whoever asked, each bounded in time.
 *
 * The zygote answers strictly in the order of the requests, so the server
 * keeps what it sent in a queue and gives each answer to the oldest
 * request. On the event loop the answers are read by a watch on a dup of
 * the socket, as libuv reads a child's exit: nothing on the loop's thread
 * waits for the zygote (loop_guard.h checks it), and a request not answered
 * within MCPX_FS_ANSWER_TIMEOUT_MS marks the zygote gone. Off the loop (the
 * start-up self-test, unit tests, teardown) an answer someone needs is
 * waited for, with the same bound.
 *
 * What it does not do: decide what to ask (forkserver.c, zygote_cycle.c),
 * or keep a zygote alive: it only notices that one is gone.
 */
#include "forkserver_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "loop_guard.h"

static void arm(struct mcpx_forkserver *fs);

/* Logs what the zygote wrote to its stderr (why it stopped), once it has
 * failed. */
static void log_zygote_stderr(struct mcpx_forkserver *fs)
{
	char buf[2048];
	ssize_t n;

	if (fs->zygote.stderr_fd < 0)
		return;
	n = read(fs->zygote.stderr_fd, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		mcpx_warn("fork server: the zygote said: %s", buf);
	}
}

/* Hands one answer (NULL: none will come) to the oldest request. */
static void answer(struct mcpx_forkserver *fs, const struct mcpx_zygote_reply *rep)
{
	struct mcpx_fs_request *r = fs->head;

	fs->head = r->next;
	if (!fs->head)
		fs->tail = NULL;
	r->next = NULL;
	r->answered = true;
	r->rc = rep ? 0 : -EPIPE;
	if (rep)
		r->rep = *rep;
	if (r->on_answer) {
		r->on_answer(fs, rep);
		return;
	}
	if (r->done) {
		r->done(r->arg, rep ? -rep->err : -EPIPE, rep ? rep->status : 0,
		        rep ? &rep->ru : NULL);
		free(r);
	}
}

void mcpx_fs_fail_all(struct mcpx_forkserver *fs)
{
	fs->dead = true;
	mcpx_timer_cancel(&fs->deadline);
	fs->dispatching++;
	while (fs->head)
		answer(fs, NULL);
	fs->dispatching--;
}

int mcpx_fs_mark_dead(struct mcpx_forkserver *fs, struct mcpx_err *err, const char *what)
{
	if (!fs->dead) {
		log_zygote_stderr(fs);
		mcpx_fs_fail_all(fs);
	}
	return mcpx_err_set(err, EPIPE, "fork server: %s", what);
}

int mcpx_fs_send(struct mcpx_forkserver *fs, const void *msg, size_t len, const void *tail,
                 size_t tail_len, const int *fds, size_t nfds)
{
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(MCPX_ZFD_MAX * sizeof(int))];
	} ctrl;
	struct iovec iov[2] = {{(void *)msg, len}, {(void *)tail, tail_len}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = tail_len ? 2 : 1};
	ssize_t n;

	if (nfds > MCPX_ZFD_MAX)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *c;

		memset(&ctrl, 0, sizeof(ctrl));
		mh.msg_control = ctrl.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	do
		n = sendmsg(fs->ctl, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)(len + tail_len) ? 0 : -EPIPE;
}

int mcpx_fs_recv(struct mcpx_forkserver *fs, struct mcpx_zygote_reply *rep)
{
	ssize_t n;

	do
		n = recv(fs->ctl, rep, sizeof(*rep), MSG_DONTWAIT | MSG_TRUNC);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return -EAGAIN;
	return n == (ssize_t)sizeof(*rep) ? 0 : -EPIPE;
}

/* ---- on the loop ---------------------------------------------------------- */

static void watch_cb(struct mcpx_watch *w, int events)
{
	struct mcpx_forkserver *fs = w->arg;

	if (events & MCPX_EV_CLOSED) {
		fs->watching = false;
		if (fs->stopped) {
			if (!fs->dispatching)
				free(fs);
			return;
		}
		/* The zygote hung up while nothing was asked of it. */
		(void)mcpx_fs_mark_dead(fs, NULL, "the zygote closed its control socket");
		return;
	}
	if (mcpx_fs_read_answers(fs, NULL) == 0)
		arm(fs);
}

static void deadline_cb(struct mcpx_timer *t)
{
	struct mcpx_forkserver *fs = t->arg;

	if (fs->head &&
	    mcpx_now_us() - fs->head->sent_us >= (uint64_t)MCPX_FS_ANSWER_TIMEOUT_MS * 1000u) {
		mcpx_warn("fork server: zygote pid %d did not answer within %d ms",
		          (int)fs->zygote.pid, MCPX_FS_ANSWER_TIMEOUT_MS);
		(void)mcpx_fs_mark_dead(fs, NULL, "no answer from the zygote");
		return;
	}
	arm(fs);
}

/* Reads while a request waits for its answer, and bounds the oldest. */
static void arm(struct mcpx_forkserver *fs)
{
	uint64_t due, now;

	if (fs->stopped || !fs->loop)
		return;
	if (fs->watching)
		(void)mcpx_loop_set_events(&fs->watch, fs->head ? MCPX_EV_READ : 0);
	if (!fs->head) {
		mcpx_timer_cancel(&fs->deadline);
		return;
	}
	due = fs->head->sent_us + (uint64_t)MCPX_FS_ANSWER_TIMEOUT_MS * 1000u;
	now = mcpx_now_us();
	fs->deadline.fn = deadline_cb;
	fs->deadline.arg = fs;
	mcpx_timer_start(fs->loop, &fs->deadline, due > now ? due - now : 0);
}

/* The watch, made on first use (once the zygote is ready: its "ready"
 * message is read by mcpx_forkserver_poll, not here). */
static void watch(struct mcpx_forkserver *fs)
{
	int fd;

	if (!fs->loop || fs->watching || fs->dead)
		return;
	fd = fcntl(fs->ctl, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return;
	fs->watch.fd = fd;
	fs->watch.fn = watch_cb;
	fs->watch.arg = fs;
	if (mcpx_loop_watch(fs->loop, &fs->watch) < 0) {
		close(fd);
		return;
	}
	fs->watching = true;
}

void mcpx_forkserver_use_loop(struct mcpx_forkserver *fs, struct mcpx_loop *loop,
                              void (*on_answer)(void *arg), void *arg)
{
	fs->loop = loop;
	fs->on_answer = on_answer;
	fs->on_answer_arg = arg;
}

void mcpx_fs_enqueue(struct mcpx_forkserver *fs, struct mcpx_fs_request *r)
{
	r->next = NULL;
	r->answered = false;
	r->rc = 0;
	r->sent_us = mcpx_now_us();
	if (fs->tail)
		fs->tail->next = r;
	else
		fs->head = r;
	fs->tail = r;
	watch(fs);
	arm(fs);
}

/* ---- reading answers ------------------------------------------------------ */

/* Waits (bounded) until an answer can be read; false when none came. */
static bool wait_answer(struct mcpx_forkserver *fs, const struct mcpx_fs_request *want)
{
	uint64_t waited = mcpx_now_us() - want->sent_us;
	uint64_t bound = (uint64_t)MCPX_FS_ANSWER_TIMEOUT_MS * 1000u;
	struct pollfd pfd = {.fd = fs->ctl, .events = POLLIN};

	if (waited >= bound)
		return false;
	return mcpx_wait_poll(&pfd, 1, (int)((bound - waited + 999u) / 1000u),
	                      "an answer of the fork server's zygote") > 0;
}

int mcpx_fs_read_answers(struct mcpx_forkserver *fs, struct mcpx_fs_request *want)
{
	struct mcpx_zygote_reply rep;
	int rc;

	fs->dispatching++;
	while (fs->head && !fs->dead && !fs->stopped && !(want && want->answered)) {
		rc = mcpx_fs_recv(fs, &rep);
		if (rc == -EAGAIN) {
			if (!want)
				break;
			if (wait_answer(fs, want))
				continue;
			(void)mcpx_fs_mark_dead(fs, NULL, "no answer from the zygote");
			break;
		}
		if (rc < 0) {
			(void)mcpx_fs_mark_dead(fs, NULL, "the zygote is gone");
			break;
		}
		answer(fs, &rep);
	}
	if (--fs->dispatching == 0 && fs->stopped && !fs->watching) {
		free(fs);
		return -ESHUTDOWN;
	}
	return fs->stopped ? -ESHUTDOWN : 0;
}

void mcpx_fs_release(struct mcpx_forkserver *fs)
{
	fs->stopped = true;
	mcpx_timer_cancel(&fs->deadline);
	if (fs->watching) {
		/* Freed when the watch has ended (watch_cb), which is at once
		 * unless this runs inside the watch's own callback. */
		mcpx_loop_unwatch(&fs->watch);
		return;
	}
	if (!fs->dispatching)
		free(fs);
}

/* ---- reaps ---------------------------------------------------------------- */

static int send_reap(struct mcpx_forkserver *fs, pid_t pid, struct mcpx_fs_request *r)
{
	struct mcpx_zygote_req req;

	if (fs->dead || fs->stopped)
		return -EPIPE;
	memset(&req, 0, sizeof(req));
	req.op = MCPX_ZOP_REAP;
	req.pid = pid;
	if (mcpx_fs_send(fs, &req, sizeof(req), NULL, 0, NULL, 0) < 0)
		return mcpx_fs_mark_dead(fs, NULL, "cannot ask the zygote to reap");
	r->op = MCPX_ZOP_REAP;
	r->pid = pid;
	mcpx_fs_enqueue(fs, r);
	return 0;
}

int mcpx_fs_reap_sync(void *ctx, pid_t pid, int *status, struct rusage *ru)
{
	struct mcpx_forkserver *fs = ctx;
	struct mcpx_fs_request r;
	int rc;

	memset(&r, 0, sizeof(r));
	rc = send_reap(fs, pid, &r);
	if (rc < 0)
		return rc;
	/* fs may be gone once this returns <0 (stopped meanwhile: r was
	 * answered or failed first). */
	(void)mcpx_fs_read_answers(fs, &r);
	if (!r.answered || r.rc < 0)
		return -EPIPE;
	if (r.rep.err) {
		mcpx_warn("fork server: the zygote could not reap %d: %s", (int)pid,
		          strerror(r.rep.err));
		return -r.rep.err;
	}
	*status = r.rep.status;
	*ru = r.rep.ru;
	return 0;
}

int mcpx_fs_reap_async(void *ctx, pid_t pid, mcpx_reaped_fn done, void *arg)
{
	struct mcpx_forkserver *fs = ctx;
	struct mcpx_fs_request *r;
	struct rusage ru = {0};
	int st = 0, rc;

	if (!fs->loop) {
		/* Nobody reads answers for us: the answer is waited for. */
		rc = mcpx_fs_reap_sync(fs, pid, &st, &ru);
		done(arg, rc, st, rc < 0 ? NULL : &ru);
		return 0;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->done = done;
	r->arg = arg;
	rc = send_reap(fs, pid, r);
	if (rc < 0)
		free(r);
	return rc;
}
