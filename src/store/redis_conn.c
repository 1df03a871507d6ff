/*
 * redis_conn.c - a hiredis async context on the server loop (redis_conn.h).
 *
 * The states: down (a retry timer may be set), resolving (a worker runs
 * getaddrinfo), connecting (hiredis connects; AUTH and SELECT are queued
 * behind the connect, and their replies make the connection ready) and
 * ready. One deadline covers resolving, connecting and authenticating.
 * Every attempt has a generation number, so a resolution that ends after
 * its attempt was given up is ignored.
 *
 * hiredis's event hooks become the interest of a loop watch on a dup() of
 * its socket. Whenever hiredis frees its context (an error, the server
 * closing, our own drop) it calls the cleanup hook, which ends the watch
 * and, unless we dropped it ourselves, tells the connection on the next
 * loop turn. A hang-up the loop sees first ends the watch; the context is
 * then dropped on the next loop turn. A read event drains what the socket
 * holds (hiredis reads 16 KiB per call) up to 1 MiB per loop turn: about
 * one piece of a blob (redis_ops.h), which is all one reply may carry. A
 * reply still unparsed beyond max_reply bytes is not one the store asked
 * for (hiredis 0.14 has no cap of its own and would copy it whole on the
 * loop): the connection is dropped instead.
 */
#include "redis_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"
#include "hiredis_lib.h"
#include "log.h"
#include "metrics.h"
#include "offload.h"

#define RETRY_FIRST_MS 100u
#define RETRY_MAX_MS 5000u
#define READ_TURNS 64 /* x 16 KiB per loop turn */
#define PASSWORD_MAX 4096

enum conn_state { C_DOWN, C_RESOLVING, C_CONNECTING, C_READY };

struct rwatch {
	struct mcpx_watch w;
	struct mcpx_redis_conn *c;
	redisAsyncContext *ac;
	int events;
	bool detached; /* the loop's watch is ended or ending */
	bool closed;   /* ... and its MCPX_EV_CLOSED came */
	bool cleaned;  /* hiredis is done with it (its cleanup hook ran) */
};

struct resolve_task {
	struct mcpx_offload_task t;
	struct mcpx_redis_conn *c;
	uint64_t gen;
	char host[256];
	char addr[INET6_ADDRSTRLEN];
	int rc;
};

struct mcpx_redis_conn {
	struct mcpx_loop *loop;
	struct mcpx_store_spec spec;
	char *password; /* NULL: none; zeroised on free */
	uint32_t connect_timeout_ms;
	size_t max_reply;
	struct mcpx_redis_conn_cbs cbs;
	void *arg;
	enum conn_state state;
	uint64_t gen;
	redisAsyncContext *ac;
	struct rwatch *watch;
	int auth_pending; /* AUTH/SELECT replies still due */
	struct mcpx_offload *resolver;
	struct mcpx_timer deadline, retry, dropper;
	uint32_t backoff_ms;
	char drop_why[96];
	bool was_up; /* logged as up; a failure is then logged once */
	bool freeing;
};

static void attempt_failed(struct mcpx_redis_conn *c, const char *why);

/* The event hooks hiredis calls. */

static void ev_set(struct rwatch *rw, int on, int off)
{
	rw->events = (rw->events | on) & ~off;
	if (!rw->detached)
		mcpx_loop_set_events(&rw->w, rw->events);
}

static void ev_add_read(void *p)
{
	ev_set(p, MCPX_EV_READ, 0);
}

static void ev_del_read(void *p)
{
	ev_set(p, 0, MCPX_EV_READ);
}

static void ev_add_write(void *p)
{
	ev_set(p, MCPX_EV_WRITE, 0);
}

static void ev_del_write(void *p)
{
	ev_set(p, 0, MCPX_EV_WRITE);
}

static void ev_cleanup(void *p)
{
	struct rwatch *rw = p;
	struct mcpx_redis_conn *c = rw->c;
	char why[96];

	/* hiredis is freeing the context: by our hand (the state is down
	 * already) or after an error or the server closing (tell the conn,
	 * from the next loop turn: hiredis is still inside its free). */
	if (c && c->watch == rw) {
		c->watch = NULL;
		c->ac = NULL;
		if (!c->freeing && c->state != C_DOWN) {
			snprintf(why, sizeof(why), "the connection to redis was lost (%s)",
			         rw->ac->err ? rw->ac->errstr : "closed");
			mcpx_redis_conn_drop(c, why);
		}
	}
	rw->ac->ev.data = NULL;
	rw->c = NULL;
	rw->cleaned = true;
	/* rw goes when both the loop and hiredis are done with it. */
	if (!rw->detached) {
		rw->detached = true;
		mcpx_loop_unwatch(&rw->w); /* its MCPX_EV_CLOSED frees rw */
	} else if (rw->closed) {
		free(rw);
	}
}

static void watch_cb(struct mcpx_watch *w, int events)
{
	struct rwatch *rw = w->arg;
	struct mcpx_redis_conn *c = rw->c;

	if (events & MCPX_EV_CLOSED) {
		rw->closed = true;
		if (rw->cleaned) {
			free(rw);
			return;
		}
		/* A hang-up: hiredis still holds its context (and rw, until
		 * its cleanup hook). */
		rw->detached = true;
		if (c)
			mcpx_redis_conn_drop(c, "the connection hung up");
		return;
	}
	/* A drop is due on the next turn: nothing more goes through it. */
	if (!c || rw->detached || !c->ac || c->dropper.armed)
		return;
	if (events & MCPX_EV_WRITE)
		mcpx_redisAsyncHandleWrite(c->ac);
	for (int i = 0; i < READ_TURNS && (events & MCPX_EV_READ); i++) {
		const redisReader *rd;
		int avail = 0;

		if (rw->detached || !c->ac)
			break;
		mcpx_redisAsyncHandleRead(c->ac);
		if (rw->detached || !c->ac)
			break;
		rd = c->ac->c.reader;
		if (rd && rd->len - rd->pos > c->max_reply) {
			mcpx_redis_conn_drop(c,
			                     "redis sent a reply larger than the store asks for");
			break;
		}
		if (ioctl(w->fd, FIONREAD, &avail) < 0 || avail <= 0)
			break;
	}
}

static int attach(struct mcpx_redis_conn *c)
{
	struct rwatch *rw = calloc(1, sizeof(*rw));

	if (!rw)
		return -ENOMEM;
	rw->c = c;
	rw->ac = c->ac;
	rw->w.fd = fcntl(c->ac->c.fd, F_DUPFD_CLOEXEC, 3);
	rw->w.fn = watch_cb;
	rw->w.arg = rw;
	if (rw->w.fd < 0 || mcpx_loop_watch(c->loop, &rw->w) < 0) {
		if (rw->w.fd >= 0)
			close(rw->w.fd);
		free(rw);
		return -EIO;
	}
	/* A new watch waits to read; hiredis asks for what it wants. */
	mcpx_loop_set_events(&rw->w, 0);
	c->watch = rw;
	c->ac->ev.data = rw;
	c->ac->ev.addRead = ev_add_read;
	c->ac->ev.delRead = ev_del_read;
	c->ac->ev.addWrite = ev_add_write;
	c->ac->ev.delWrite = ev_del_write;
	c->ac->ev.cleanup = ev_cleanup;
	return 0;
}

/* Connection state. */

static void went_ready(struct mcpx_redis_conn *c)
{
	c->state = C_READY;
	c->backoff_ms = RETRY_FIRST_MS;
	mcpx_timer_cancel(&c->deadline);
	if (!c->was_up)
		mcpx_info("store: connected to redis");
	c->was_up = true;
	mcpx_metrics_store_up("redis", 1);
	c->cbs.ready(c->arg);
}

/* The first word of a Redis error ("WRONGPASS", "NOAUTH", ...): enough to
 * say what went wrong without repeating anything else the server said. */
static void error_code(const redisReply *r, char *out, size_t n)
{
	size_t len = r && r->str ? strcspn(r->str, " ") : 0;

	snprintf(out, n, "%.*s", (int)(len < 32 ? len : 32), len ? r->str : "error");
}

static void auth_cb(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct mcpx_redis_conn *c = privdata;
	redisReply *r = reply;
	char code[40], why[96];

	(void)ac;
	if (!r || c->state != C_CONNECTING)
		return; /* the context is going away; attempt_failed says why */
	if (r->type == REDIS_REPLY_ERROR) {
		error_code(r, code, sizeof(code));
		snprintf(why, sizeof(why), "redis refused the login or the database (%s)", code);
		attempt_failed(c, why);
		return;
	}
	if (--c->auth_pending == 0)
		went_ready(c);
}

/* Connected or not: the cleanup hook hears of a failure; this callback
 * is set because hiredis then watches for the connect to finish. */
static void on_connect(const redisAsyncContext *ac, int status)
{
	(void)ac;
	(void)status;
}

static void send_login(struct mcpx_redis_conn *c)
{
	char db[16];
	const char *argv[3];
	size_t lens[3];
	int argc = 0;

	if (c->password) {
		argv[argc] = "AUTH";
		lens[argc++] = 4;
		if (c->spec.user[0]) {
			argv[argc] = c->spec.user;
			lens[argc++] = strlen(c->spec.user);
		}
		argv[argc] = c->password;
		lens[argc++] = strlen(c->password);
		if (mcpx_redisAsyncCommandArgv(c->ac, auth_cb, c, argc, argv, lens) == REDIS_OK)
			c->auth_pending++;
	}
	if (c->spec.db) {
		snprintf(db, sizeof(db), "%u", c->spec.db);
		argv[0] = "SELECT";
		lens[0] = 6;
		argv[1] = db;
		lens[1] = strlen(db);
		if (mcpx_redisAsyncCommandArgv(c->ac, auth_cb, c, 2, argv, lens) == REDIS_OK)
			c->auth_pending++;
	}
	/* Nothing to log in with: PING, so "ready" still means "answers". */
	if (!c->auth_pending) {
		argv[0] = "PING";
		lens[0] = 4;
		if (mcpx_redisAsyncCommandArgv(c->ac, auth_cb, c, 1, argv, lens) == REDIS_OK)
			c->auth_pending++;
	}
}

static void connect_addr(struct mcpx_redis_conn *c, const char *addr)
{
	c->ac = mcpx_redisAsyncConnect(addr, c->spec.port);
	if (!c->ac || c->ac->err) {
		char why[96];

		snprintf(why, sizeof(why), "cannot connect to redis (%s)",
		         c->ac ? c->ac->errstr : "out of memory");
		if (c->ac)
			mcpx_redisAsyncFree(c->ac);
		c->ac = NULL;
		attempt_failed(c, why);
		return;
	}
	if (attach(c) < 0) {
		mcpx_redisAsyncFree(c->ac);
		c->ac = NULL;
		attempt_failed(c, "cannot watch the connection to redis");
		return;
	}
	c->state = C_CONNECTING;
	c->auth_pending = 0;
	mcpx_redisAsyncSetConnectCallback(c->ac, on_connect);
	send_login(c);
}

static void resolve_work(struct mcpx_offload_task *t)
{
	struct resolve_task *rt = (struct resolve_task *)t;
	struct addrinfo hints, *res = NULL;
	const void *a;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rt->rc = getaddrinfo(rt->host, NULL, &hints, &res);
	if (rt->rc != 0 || !res) {
		rt->rc = rt->rc ? rt->rc : EAI_NONAME;
		return;
	}
	a = res->ai_family == AF_INET6
	        ? (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr
	        : (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr;
	if (!inet_ntop(res->ai_family, a, rt->addr, sizeof(rt->addr)))
		rt->rc = EAI_FAIL;
	freeaddrinfo(res);
}

static void resolve_done(struct mcpx_offload_task *t)
{
	struct resolve_task *rt = (struct resolve_task *)t;
	struct mcpx_redis_conn *c = rt->c;

	if (!t->cancelled && c->state == C_RESOLVING && rt->gen == c->gen) {
		if (rt->rc)
			attempt_failed(c, "the redis host name does not resolve");
		else
			connect_addr(c, rt->addr);
	}
	free(rt);
}

static void start_attempt(struct mcpx_redis_conn *c)
{
	struct resolve_task *rt;
	unsigned char probe[16];

	if (c->state != C_DOWN || c->freeing)
		return;
	mcpx_timer_cancel(&c->retry);
	c->gen++;
	c->state = C_RESOLVING;
	mcpx_timer_start(c->loop, &c->deadline, (uint64_t)c->connect_timeout_ms * 1000u);
	if (inet_pton(AF_INET, c->spec.host, probe) == 1 ||
	    inet_pton(AF_INET6, c->spec.host, probe) == 1) {
		connect_addr(c, c->spec.host);
		return;
	}
	if (!(rt = calloc(1, sizeof(*rt)))) {
		attempt_failed(c, "out of memory");
		return;
	}
	rt->t.work = resolve_work;
	rt->t.done = resolve_done;
	rt->c = c;
	rt->gen = c->gen;
	snprintf(rt->host, sizeof(rt->host), "%s", c->spec.host);
	mcpx_offload_submit(c->resolver, &rt->t);
}

/* Ends the attempt or the connection: the context (if any) is freed, its
 * pending replies come back NULL, the owner is told, a retry is set. */
static void attempt_failed(struct mcpx_redis_conn *c, const char *why)
{
	redisAsyncContext *ac = c->ac;

	c->ac = NULL;
	c->state = C_DOWN;
	mcpx_timer_cancel(&c->deadline);
	if (ac) {
		/* Forget the watch first: the cleanup hook ends it. */
		mcpx_redisAsyncFree(ac);
	}
	if (c->freeing)
		return;
	if (c->was_up || c->backoff_ms == RETRY_FIRST_MS)
		mcpx_warn("store: %s; retrying", why);
	c->was_up = false;
	mcpx_metrics_store_up("redis", 0);
	mcpx_timer_start(c->loop, &c->retry, (uint64_t)c->backoff_ms * 1000u);
	c->backoff_ms = c->backoff_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : c->backoff_ms * 2;
	c->cbs.down(c->arg, why);
}

static void deadline_cb(struct mcpx_timer *t)
{
	struct mcpx_redis_conn *c = t->arg;

	if (c->state == C_RESOLVING || c->state == C_CONNECTING)
		attempt_failed(c, "redis did not answer in time");
}

static void retry_cb(struct mcpx_timer *t)
{
	start_attempt(t->arg);
}

static void dropper_cb(struct mcpx_timer *t)
{
	struct mcpx_redis_conn *c = t->arg;

	if (c->state != C_DOWN)
		attempt_failed(c, c->drop_why);
}

void mcpx_redis_conn_drop(struct mcpx_redis_conn *c, const char *why)
{
	snprintf(c->drop_why, sizeof(c->drop_why), "%s", why);
	mcpx_timer_start(c->loop, &c->dropper, 0);
}

bool mcpx_redis_conn_ready(const struct mcpx_redis_conn *c)
{
	return c->state == C_READY && c->ac;
}

void mcpx_redis_conn_kick(struct mcpx_redis_conn *c)
{
	if (c->state == C_DOWN)
		start_attempt(c);
}

int mcpx_redis_conn_command(struct mcpx_redis_conn *c, redisCallbackFn *fn, void *privdata,
                            int argc, const char **argv, const size_t *lens)
{
	if (!mcpx_redis_conn_ready(c))
		return -ENOTCONN;
	if (mcpx_redisAsyncCommandArgv(c->ac, fn, privdata, argc, argv, lens) != REDIS_OK)
		return -ENOTCONN;
	return 0;
}

/* The password: the file's first line, at most PASSWORD_MAX bytes. */
static int read_password(const char *path, char **out, struct mcpx_err *err)
{
	char *buf = malloc(PASSWORD_MAX + 2);
	int fd, e;
	ssize_t n;

	if (!buf)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, PASSWORD_MAX + 1) : -1;
	e = errno;
	if (fd >= 0)
		close(fd);
	if (n < 0) {
		free(buf);
		return mcpx_err_set(err, EINVAL,
		                    "MCP_EXEC_WORKSPACES_PASSWORD_FILE cannot be read (%s)",
		                    strerror(e));
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	if (n > PASSWORD_MAX || !buf[0]) {
		mcpx_wipe(buf, PASSWORD_MAX + 2);
		free(buf);
		return mcpx_err_set(
		    err, EINVAL,
		    "MCP_EXEC_WORKSPACES_PASSWORD_FILE must hold one line of 1 to %d "
		    "bytes",
		    PASSWORD_MAX);
	}
	*out = buf;
	return 0;
}

int mcpx_redis_conn_new(struct mcpx_loop *loop, const struct mcpx_store_spec *spec,
                        uint32_t connect_timeout_ms, size_t max_reply,
                        const struct mcpx_redis_conn_cbs *cbs, void *arg,
                        struct mcpx_redis_conn **out, struct mcpx_err *err)
{
	struct mcpx_redis_conn *c = calloc(1, sizeof(*c));
	int rc;

	*out = NULL;
	if (!c)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	if (!mcpx_hiredis_available()) {
		free(c);
		return mcpx_err_set(err, ELIBACC, "store: libhiredis cannot be loaded (see the "
		                                  "warning above); install libhiredis0.14");
	}
	c->loop = loop;
	c->spec = *spec;
	c->connect_timeout_ms = connect_timeout_ms;
	c->max_reply = max_reply;
	c->cbs = *cbs;
	c->arg = arg;
	c->backoff_ms = RETRY_FIRST_MS;
	c->deadline.fn = deadline_cb;
	c->retry.fn = retry_cb;
	c->dropper.fn = dropper_cb;
	c->deadline.arg = c->retry.arg = c->dropper.arg = c;
	if (spec->password_file[0] &&
	    (rc = read_password(spec->password_file, &c->password, err)) < 0)
		goto fail;
	if ((rc = mcpx_offload_new(loop, &c->resolver)) < 0) {
		mcpx_err_set(err, -rc, "the store's resolver thread cannot start");
		goto fail;
	}
	mcpx_metrics_store_up("redis", 0);
	start_attempt(c);
	*out = c;
	return 0;
fail:
	free(c->password);
	free(c);
	return rc;
}

void mcpx_redis_conn_free(struct mcpx_redis_conn *c)
{
	redisAsyncContext *ac;

	if (!c)
		return;
	c->freeing = true;
	mcpx_timer_cancel(&c->deadline);
	mcpx_timer_cancel(&c->retry);
	mcpx_timer_cancel(&c->dropper);
	ac = c->ac;
	c->ac = NULL;
	c->state = C_DOWN;
	if (ac)
		mcpx_redisAsyncFree(ac);
	mcpx_offload_free(c->resolver);
	if (c->password) {
		mcpx_wipe(c->password, strlen(c->password));
		free(c->password);
	}
	free(c);
}
