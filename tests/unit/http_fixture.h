/*
 * http_fixture.h - a small HTTP/1.1 server on 127.0.0.1 for the unit tests
 * of the outgoing requests (test_egress_handle.c, test_upstream_client.c,
 * test_broker_egress.c): it runs in a thread of the test, keeps
 * connections alive between requests, and records what reached it, so a
 * test can tell a followed redirect (a request for the target) and a
 * reused connection (two requests on one connection) from their absence.
 *
 * Each request (request line, headers, a Content-Length body) is answered
 * by the test's respond() with the bytes to write, written as the pieces
 * it gives, each flushed on its own after a short pause (so the client
 * reads them in separate chunks), and whether to close the connection
 * afterwards.
 *
 * Ownership: everything is the fixture's; http_fixture_stop() joins the
 * thread, closes every socket and frees what it recorded.
 */
#ifndef MCPX_HTTP_FIXTURE_H
#define MCPX_HTTP_FIXTURE_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HTTP_FIXTURE_CONNS 32
#define HTTP_FIXTURE_REQS 256
#define HTTP_FIXTURE_PIECES 8

/* One request as it arrived. */
struct http_fixture_req {
	int conn; /* which connection (0, 1, ... in accept order) */
	char method[16];
	char path[256];
	char headers[4096]; /* the raw header lines */
	char body[8192];
	size_t body_len;
};

/* What to answer: up to HTTP_FIXTURE_PIECES pieces written one by one. */
struct http_fixture_resp {
	const char *piece[HTTP_FIXTURE_PIECES];
	size_t len[HTTP_FIXTURE_PIECES]; /* 0: strlen */
	bool close;                      /* close the connection after it */
};

struct http_fixture;
typedef void (*http_fixture_fn)(struct http_fixture *fx, const struct http_fixture_req *req,
                                struct http_fixture_resp *resp);

struct http_fixture {
	int port;
	http_fixture_fn respond;
	void *arg; /* the test's */
	/* Recorded (read under lock). */
	pthread_mutex_t lock;
	int conns;
	struct http_fixture_req reqs[HTTP_FIXTURE_REQS];
	int n_reqs;
	/* The thread's. */
	int listen_fd, wake[2];
	pthread_t thread;
	struct {
		int fd;
		int id;
		char buf[16384];
		size_t len;
	} c[HTTP_FIXTURE_CONNS];
};

/* A complete request in c's buffer: its length, or 0 when more is due. */
static inline size_t http_fixture_complete(const char *buf, size_t len, size_t *head, size_t *body)
{
	const char *end = NULL, *cl;

	for (size_t i = 0; i + 3 < len; i++)
		if (memcmp(buf + i, "\r\n\r\n", 4) == 0) {
			end = buf + i + 4;
			break;
		}
	if (!end)
		return 0;
	*head = (size_t)(end - buf);
	*body = 0;
	for (cl = buf; cl && cl < end; cl = memchr(cl, '\n', (size_t)(end - cl))) {
		if (*cl == '\n')
			cl++;
		if (strncasecmp(cl, "content-length:", 15) == 0)
			*body = (size_t)strtoul(cl + 15, NULL, 10);
	}
	return *head + *body <= len ? *head + *body : 0;
}

static inline void http_fixture_answer(struct http_fixture *fx, int k, size_t head, size_t blen)
{
	struct http_fixture_req *r = calloc(1, sizeof(*r));
	struct http_fixture_resp resp;
	const char *buf = fx->c[k].buf;

	memset(&resp, 0, sizeof(resp));
	r->conn = fx->c[k].id;
	sscanf(buf, "%15s %255s", r->method, r->path);
	snprintf(r->headers, sizeof(r->headers), "%.*s", (int)head, buf);
	r->body_len = blen < sizeof(r->body) ? blen : sizeof(r->body) - 1;
	memcpy(r->body, buf + head, r->body_len);
	pthread_mutex_lock(&fx->lock);
	if (fx->n_reqs < HTTP_FIXTURE_REQS)
		fx->reqs[fx->n_reqs++] = *r;
	pthread_mutex_unlock(&fx->lock);
	fx->respond(fx, r, &resp);
	for (int i = 0; i < HTTP_FIXTURE_PIECES && resp.piece[i]; i++) {
		size_t n = resp.len[i] ? resp.len[i] : strlen(resp.piece[i]);
		struct timespec pause = {0, 20 * 1000 * 1000};

		if (i > 0)
			nanosleep(&pause, NULL);
		if (write(fx->c[k].fd, resp.piece[i], n) != (ssize_t)n)
			break;
	}
	free(r);
	if (resp.close) {
		close(fx->c[k].fd);
		fx->c[k].fd = -1;
	}
}

static inline void *http_fixture_main(void *arg)
{
	struct http_fixture *fx = arg;

	for (;;) {
		struct pollfd p[HTTP_FIXTURE_CONNS + 2];
		int map[HTTP_FIXTURE_CONNS + 2], n = 0;

		p[n].fd = fx->wake[0], p[n].events = POLLIN, map[n++] = -1;
		p[n].fd = fx->listen_fd, p[n].events = POLLIN, map[n++] = -2;
		for (int k = 0; k < HTTP_FIXTURE_CONNS; k++)
			if (fx->c[k].fd >= 0)
				p[n].fd = fx->c[k].fd, p[n].events = POLLIN, map[n++] = k;
		if (poll(p, (nfds_t)n, -1) < 0)
			continue;
		if (p[0].revents)
			return NULL;
		for (int i = 1; i < n; i++) {
			int k = map[i];
			ssize_t got;
			size_t head, blen, whole;

			if (!p[i].revents)
				continue;
			if (k == -2) {
				int fd = accept4(fx->listen_fd, NULL, NULL, SOCK_CLOEXEC), one = 1;

				for (k = 0; fd >= 0 && k < HTTP_FIXTURE_CONNS && fx->c[k].fd >= 0;
				     k++)
					;
				if (fd < 0 || k == HTTP_FIXTURE_CONNS) {
					if (fd >= 0)
						close(fd);
					continue;
				}
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				fx->c[k].fd = fd;
				fx->c[k].len = 0;
				pthread_mutex_lock(&fx->lock);
				fx->c[k].id = fx->conns++;
				pthread_mutex_unlock(&fx->lock);
				continue;
			}
			got = read(fx->c[k].fd, fx->c[k].buf + fx->c[k].len,
			           sizeof(fx->c[k].buf) - fx->c[k].len);
			if (got <= 0) {
				close(fx->c[k].fd);
				fx->c[k].fd = -1;
				continue;
			}
			fx->c[k].len += (size_t)got;
			while (fx->c[k].fd >= 0 &&
			       (whole = http_fixture_complete(fx->c[k].buf, fx->c[k].len, &head,
			                                      &blen))) {
				http_fixture_answer(fx, k, head, blen);
				memmove(fx->c[k].buf, fx->c[k].buf + whole, fx->c[k].len - whole);
				fx->c[k].len -= whole;
			}
		}
	}
}

/* Starts the server; false when it could not. */
static inline bool http_fixture_start(struct http_fixture *fx, http_fixture_fn respond, void *arg)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);

	memset(fx, 0, sizeof(*fx));
	fx->respond = respond;
	fx->arg = arg;
	for (int k = 0; k < HTTP_FIXTURE_CONNS; k++)
		fx->c[k].fd = -1;
	pthread_mutex_init(&fx->lock, NULL);
	fx->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fx->listen_fd < 0 || bind(fx->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fx->listen_fd, 16) < 0 ||
	    getsockname(fx->listen_fd, (struct sockaddr *)&a, &alen) < 0 ||
	    pipe2(fx->wake, O_CLOEXEC) < 0)
		return false;
	fx->port = ntohs(a.sin_port);
	return pthread_create(&fx->thread, NULL, http_fixture_main, fx) == 0;
}

static inline void http_fixture_stop(struct http_fixture *fx)
{
	if (write(fx->wake[1], "x", 1) == 1)
		pthread_join(fx->thread, NULL);
	for (int k = 0; k < HTTP_FIXTURE_CONNS; k++)
		if (fx->c[k].fd >= 0)
			close(fx->c[k].fd);
	close(fx->listen_fd);
	close(fx->wake[0]);
	close(fx->wake[1]);
	pthread_mutex_destroy(&fx->lock);
}

/* How many requests for path arrived (all when path is NULL), and on how
 * many connections the server accepted. */
static inline int http_fixture_count(struct http_fixture *fx, const char *path)
{
	int n = 0;

	pthread_mutex_lock(&fx->lock);
	for (int i = 0; i < fx->n_reqs; i++)
		n += !path || strcmp(fx->reqs[i].path, path) == 0;
	pthread_mutex_unlock(&fx->lock);
	return n;
}

static inline int http_fixture_conns(struct http_fixture *fx)
{
	int n;

	pthread_mutex_lock(&fx->lock);
	n = fx->conns;
	pthread_mutex_unlock(&fx->lock);
	return n;
}

/* A copy of request i (NULL when there is none yet); the caller frees. */
static inline struct http_fixture_req *http_fixture_req(struct http_fixture *fx, int i)
{
	struct http_fixture_req *r = NULL;

	pthread_mutex_lock(&fx->lock);
	if (i >= 0 && i < fx->n_reqs && (r = malloc(sizeof(*r))))
		*r = fx->reqs[i];
	pthread_mutex_unlock(&fx->lock);
	return r;
}

#endif
