/*
 * store_fixture.h - what the store's unit tests share (test_store.c,
 * test_store_dir.c, test_store_redis.c): a loop turned by hand, the
 * backends to run a suite against (a directory in a fresh temporary
 * directory; Debian's redis-server started on loopback, on a free port,
 * with a password, by the test itself), and synchronous wrappers that start
 * a store operation and turn the loop until its callback ran.
 *
 * Ownership: struct store_fx owns its loop, directory and redis-server
 * (stopped by pid in store_fx_close, which also removes the directory).
 * Stores opened with store_fx_open are the caller's (mcpx_store_free them
 * before store_fx_close). A struct waitres owns the data it took from a
 * result (waitres_free).
 */
#ifndef MCPX_STORE_FIXTURE_H
#define MCPX_STORE_FIXTURE_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "loop.h"
#include "store.h"

#define FX_PASSWORD "fixture-password-0123456789"

enum fx_backend { FX_DIR, FX_REDIS };

struct store_fx {
	enum fx_backend backend;
	char tmp[64];
	char store_dir[128];
	char password_file[128];
	struct mcpx_loop *loop;
	pid_t redis_pid;
	int redis_port;
};

static inline void fx_sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static inline int64_t fx_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Turns the loop until *flag holds or ms pass; returns *flag. */
static inline bool fx_spin(struct mcpx_loop *loop, const bool *flag, unsigned ms)
{
	uint64_t end = mcpx_now_us() + (uint64_t)ms * 1000u;

	while (!*flag && mcpx_now_us() < end) {
		struct timespec ts = {0, 100000};

		(void)mcpx_loop_turn(loop);
		nanosleep(&ts, NULL);
	}
	return *flag;
}

/* Turns the loop for ms. */
static inline void fx_turn_for(struct mcpx_loop *loop, unsigned ms)
{
	bool never = false;

	(void)fx_spin(loop, &never, ms);
}

/* A free loopback TCP port (the kernel's pick, released for the server). */
static inline int fx_free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Whether the server on port answers PING after AUTH. */
static inline bool fx_redis_ping(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	static const char req[] = "AUTH " FX_PASSWORD "\r\nPING\r\n";
	char buf[64] = "";
	struct timeval tv = {1, 0};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t got = 0;
	bool ok = false;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return false;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    write(fd, req, sizeof(req) - 1) == (ssize_t)(sizeof(req) - 1)) {
		while (got < sizeof(buf) - 1 && !strstr(buf, "+PONG")) {
			ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);

			if (n <= 0)
				break;
			got += (size_t)n;
			buf[got] = '\0';
		}
		ok = strstr(buf, "+OK\r\n+PONG\r\n") != NULL;
	}
	close(fd);
	return ok;
}

/* Starts redis-server on fx->redis_port (chosen when 0) with the
 * fixture's password, nothing saved to disk; waits until it answers.
 * Returns 0, or -1 when it could not start. */
static inline int fx_redis_start(struct store_fx *fx)
{
	char port[16], dir[96];

	if (!fx->redis_port)
		fx->redis_port = fx_free_port();
	snprintf(port, sizeof(port), "%d", fx->redis_port);
	snprintf(dir, sizeof(dir), "%s", fx->tmp);
	fx->redis_pid = fork();
	if (fx->redis_pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1);
		dup2(null, 2);
		execlp("redis-server", "redis-server", "--bind", "127.0.0.1", "--port", port,
		       "--requirepass", FX_PASSWORD, "--save", "", "--appendonly", "no", "--dir",
		       dir, "--daemonize", "no", (char *)NULL);
		_exit(127);
	}
	if (fx->redis_pid < 0)
		return -1;
	for (int i = 0; i < 200; i++) {
		int status;

		if (fx_redis_ping(fx->redis_port))
			return 0;
		if (waitpid(fx->redis_pid, &status, WNOHANG) == fx->redis_pid) {
			fx->redis_pid = 0;
			return -1;
		}
		fx_sleep_ms(25);
	}
	return -1;
}

/* Stops redis-server (by its pid) and reaps it. */
static inline void fx_redis_stop(struct store_fx *fx)
{
	if (fx->redis_pid > 0) {
		kill(fx->redis_pid, SIGKILL);
		waitpid(fx->redis_pid, NULL, 0);
	}
	fx->redis_pid = 0;
}

static inline bool fx_have_redis(void)
{
	return system("command -v redis-server >/dev/null 2>&1") == 0;
}

/* Sets fx up for backend. Returns 0, or -1 (reported) when it cannot. */
static inline int store_fx_init(struct store_fx *fx, enum fx_backend backend)
{
	FILE *f;

	memset(fx, 0, sizeof(*fx));
	fx->backend = backend;
	snprintf(fx->tmp, sizeof(fx->tmp), "/tmp/mcpx-store-test-XXXXXX");
	if (!mkdtemp(fx->tmp)) {
		CHECK(!"mkdtemp");
		return -1;
	}
	snprintf(fx->store_dir, sizeof(fx->store_dir), "%s/store", fx->tmp);
	snprintf(fx->password_file, sizeof(fx->password_file), "%s/password", fx->tmp);
	f = fopen(fx->password_file, "w");
	if (f) {
		fputs(FX_PASSWORD "\n", f);
		fclose(f);
	}
	fx->loop = mcpx_loop_new();
	if (!fx->loop) {
		CHECK(!"mcpx_loop_new");
		return -1;
	}
	if (backend == FX_REDIS && fx_redis_start(fx) < 0) {
		CHECK(!"redis-server started");
		return -1;
	}
	return 0;
}

static inline void store_fx_config(const struct store_fx *fx, struct mcpx_store_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_blob_bytes = 64u << 20;
	/* Generous: the 64 MiB blob under a sanitizer on a loaded machine. */
	cfg->op_timeout_ms = 60000;
	if (fx->backend == FX_DIR) {
		cfg->spec.type = MCPX_STORE_DIR;
		snprintf(cfg->spec.dir, sizeof(cfg->spec.dir), "%s", fx->store_dir);
	} else {
		cfg->spec.type = MCPX_STORE_REDIS;
		snprintf(cfg->spec.host, sizeof(cfg->spec.host), "127.0.0.1");
		cfg->spec.port = fx->redis_port;
		snprintf(cfg->spec.password_file, sizeof(cfg->spec.password_file), "%s",
		         fx->password_file);
	}
}

/* Opens a store on fx (cfg NULL: the fixture's defaults). */
static inline struct mcpx_store *store_fx_open(struct store_fx *fx,
                                               const struct mcpx_store_config *cfg)
{
	struct mcpx_store_config c;
	struct mcpx_store *s = NULL;
	struct mcpx_err err = {{0}};

	if (!cfg) {
		store_fx_config(fx, &c);
		cfg = &c;
	}
	if (mcpx_store_open(fx->loop, cfg, &s, &err) < 0) {
		fprintf(stderr, "store open: %s\n", err.msg);
		CHECK(!"store opened");
		return NULL;
	}
	return s;
}

static inline void store_fx_close(struct store_fx *fx)
{
	char cmd[160];

	fx_redis_stop(fx);
	if (fx->loop)
		mcpx_loop_free(fx->loop);
	fx->loop = NULL;
	if (fx->tmp[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->tmp);
		(void)!system(cmd);
	}
}

/* A result copied out of a callback. */
struct waitres {
	bool done;
	int calls;
	int rc;
	char error[256];
	char *data;
	size_t len;
	uint64_t version;
	int64_t last_used_ms, expires_ms;
	struct mcpx_store_entry *entries;
	size_t n_entries;
	char holder[MCPX_STORE_OWNER_MAX + 1];
	int64_t holder_ms_left;
	struct mcpx_store_lease *lease;
};

static inline void waitres_free(struct waitres *w)
{
	free(w->data);
	free(w->entries);
	memset(w, 0, sizeof(*w));
}

static inline void waitres_cb(void *arg, struct mcpx_store_result *r)
{
	struct waitres *w = arg;

	w->calls++;
	w->done = true;
	w->rc = r->rc;
	snprintf(w->error, sizeof(w->error), "%s", r->error ? r->error : "");
	w->data = r->data;
	r->data = NULL;
	w->len = r->len;
	w->version = r->version;
	w->last_used_ms = r->last_used_ms;
	w->expires_ms = r->expires_ms;
	if (r->n_entries) {
		w->entries = malloc(r->n_entries * sizeof(*w->entries));
		if (w->entries)
			memcpy(w->entries, r->entries, r->n_entries * sizeof(*w->entries));
	}
	w->n_entries = w->entries ? r->n_entries : 0;
	memcpy(w->holder, r->holder, sizeof(w->holder));
	w->holder_ms_left = r->holder_ms_left;
	w->lease = r->lease;
	r->lease = NULL;
}

/* Waits for w's callback (at most 90 s); returns its rc, or -999 when it
 * never came. */
static inline int fx_wait(struct store_fx *fx, struct waitres *w)
{
	if (!fx_spin(fx->loop, &w->done, 90000)) {
		CHECK(!"the callback came within 90 s");
		return -999;
	}
	return w->rc;
}

static inline struct mcpx_store_key fx_key(const char *caller, const char *kind, const char *name)
{
	struct mcpx_store_key k = {caller, kind, name};

	return k;
}

/* Synchronous wrappers: each returns the operation's rc (or the call's
 * when it refused at once) and leaves the result in *w. */
static inline int fx_get(struct store_fx *fx, struct mcpx_store *s, const char *caller,
                         const char *name, bool refresh, struct waitres *w)
{
	struct mcpx_store_key k = fx_key(caller, "workspace", name);
	int rc;

	memset(w, 0, sizeof(*w));
	rc = mcpx_store_get(s, &k, refresh, waitres_cb, w, NULL);
	return rc < 0 ? rc : fx_wait(fx, w);
}

static inline int fx_put_opts(struct store_fx *fx, struct mcpx_store *s, const char *caller,
                              const char *name, const void *data, size_t len,
                              const struct mcpx_store_put_opts *o, struct waitres *w)
{
	struct mcpx_store_key k = fx_key(caller, "workspace", name);
	char *copy = malloc(len ? len : 1);
	int rc;

	memset(w, 0, sizeof(*w));
	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, data, len);
	rc = mcpx_store_put(s, &k, copy, len, o, waitres_cb, w, NULL);
	return rc < 0 ? rc : fx_wait(fx, w);
}

static inline int fx_put(struct store_fx *fx, struct mcpx_store *s, const char *caller,
                         const char *name, const char *text, struct waitres *w)
{
	struct mcpx_store_put_opts o = {.ttl_ms = 60000};

	return fx_put_opts(fx, s, caller, name, text, strlen(text), &o, w);
}

static inline int fx_list(struct store_fx *fx, struct mcpx_store *s, const char *caller,
                          const char *kind, enum mcpx_store_list_what what, struct waitres *w)
{
	struct mcpx_store_key k = fx_key(caller, kind, NULL);
	int rc;

	memset(w, 0, sizeof(*w));
	rc = mcpx_store_list(s, &k, what, waitres_cb, w, NULL);
	return rc < 0 ? rc : fx_wait(fx, w);
}

static inline int fx_hold(struct store_fx *fx, struct mcpx_store *s, const char *caller,
                          const char *name, uint32_t ttl_ms, uint32_t wait_ms,
                          mcpx_store_lost_fn lost, void *lost_arg, struct waitres *w)
{
	struct mcpx_store_key k = fx_key(caller, "workspace", name);
	int rc;

	memset(w, 0, sizeof(*w));
	rc = mcpx_store_lease_hold(s, &k, NULL, ttl_ms, wait_ms, lost, lost_arg, waitres_cb, w,
	                           NULL);
	return rc < 0 ? rc : fx_wait(fx, w);
}

static inline int fx_peek(struct store_fx *fx, struct mcpx_store *s, const char *caller,
                          const char *name, struct waitres *w)
{
	struct mcpx_store_key k = fx_key(caller, "workspace", name);
	int rc;

	memset(w, 0, sizeof(*w));
	rc = mcpx_store_lease_peek(s, &k, waitres_cb, w, NULL);
	return rc < 0 ? rc : fx_wait(fx, w);
}

#endif
