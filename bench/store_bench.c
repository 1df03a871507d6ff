/*
 * store_bench.c - what the workspace store costs, per backend: a put
 * (save) and a refreshing get (restore) of blobs of 0 B, 1 MiB, 10 MiB and
 * 64 MiB, a lease taken and ended, a record written with compare-and-set.
 * For each:
 *   wall          its time, start to callback;
 *   CPU           the process's CPU time (the loop and the store's
 *                 threads), the figure that holds on a loaded machine,
 *                 where wall times stretch with the CPU the process gets;
 *   longest wait  the longest the loop kept a probe waiting: a thread
 *                 writes a timestamp into a pipe the loop watches every
 *                 millisecond, and the loop reads how long each waited;
 *                 that is what any client of the server would feel;
 *   longest turn CPU   the loop thread's CPU in its longest single turn (a
 *                 turn the scheduler paused does not count): what one
 *                 turn may hold the loop for with a core to itself;
 *   redis-server CPU   the CPU of redis-server's main thread (the one that
 *                 runs commands, which every other client waits behind).
 *
 *   build/store-bench [rounds] [dir|redis] [piece KiB]
 *
 * rounds: default 5 (it prints medians, and maxima where said); a store's
 * name runs that store only; piece KiB sets the Redis store's
 * redis_piece_bytes (default 1024: what one command or reply carries of a
 * blob).
 *
 * The loop is turned as the server's is: each turn waits in poll
 * (lws_service with no timeout) until a socket is ready or a timer is due,
 * so a wall time is never one of the program's own sleeps.
 *
 * The directory store writes under /tmp (whatever filesystem that is:
 * say which when quoting numbers); the Redis store runs against a
 * redis-server this program starts on loopback (skipped without one).
 * Numbers only: it asserts nothing.
 */
#include <fcntl.h>
#include <libwebsockets.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop_lws.h"
#include "store_fixture.h"

static uint64_t clock_us(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The lws context under the loop the benchmark turns: mcpx_loop_turn
 * never waits, lws_service on the context does, as the server's loop. */
static struct lws_context *bench_ctx;

/* A loop on a context of the benchmark's own (mcpx_loop_wrap, as the HTTP
 * server makes its loop). NULL when it cannot. */
static struct mcpx_loop *bench_loop_new(void)
{
	static struct lws_protocols protocols[2];
	struct lws_context_creation_info info;

	protocols[0] = mcpx_loop_fd_protocol;
	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = protocols;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	bench_ctx = lws_create_context(&info);
	return bench_ctx ? mcpx_loop_wrap(bench_ctx) : NULL;
}

/* The probe: a thread writes its clock into a pipe every millisecond; the
 * loop reads each and keeps the longest wait. */
struct probe {
	int fds[2];
	pthread_t thread;
	volatile bool stop;
	struct mcpx_watch w;
	uint64_t max_us; /* since the last reset */
};

static void *probe_thread(void *arg)
{
	struct probe *p = arg;
	struct timespec ts = {0, 1000000};

	while (!p->stop) {
		uint64_t now = clock_us(CLOCK_MONOTONIC);

		if (write(p->fds[1], &now, sizeof(now)) != sizeof(now))
			break;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void probe_cb(struct mcpx_watch *w, int events)
{
	struct probe *p = w->arg;
	uint64_t sent[64], now;
	ssize_t n;

	if (events & MCPX_EV_CLOSED)
		return;
	/* The clock after each read: every stamp read was written before. */
	while ((n = read(w->fd, sent, sizeof(sent))) > 0) {
		now = clock_us(CLOCK_MONOTONIC);
		for (size_t i = 0; i < (size_t)n / sizeof(sent[0]); i++)
			p->max_us = now - sent[i] > p->max_us ? now - sent[i] : p->max_us;
	}
}

static int probe_start(struct probe *p, struct mcpx_loop *loop)
{
	memset(p, 0, sizeof(*p));
	if (pipe2(p->fds, O_CLOEXEC) < 0)
		return -1;
	fcntl(p->fds[0], F_SETFL, O_NONBLOCK);
	p->w.fd = p->fds[0];
	p->w.fn = probe_cb;
	p->w.arg = p;
	if (mcpx_loop_watch(loop, &p->w) < 0 ||
	    pthread_create(&p->thread, NULL, probe_thread, p) != 0)
		return -1;
	return 0;
}

static void probe_stop(struct probe *p)
{
	p->stop = true;
	pthread_join(p->thread, NULL);
	close(p->fds[1]);
	mcpx_loop_unwatch(&p->w);
}

static struct probe probe;

/* redis-server's pid (0: the directory store) and its main thread's CPU
 * time so far (schedstat's first field, in nanoseconds). */
static pid_t server_pid;

static uint64_t server_cpu_us(void)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	if (!server_pid)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)server_pid);
	if ((f = fopen(path, "r"))) {
		if (fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		fclose(f);
	}
	return ns / 1000u;
}

/* The loop thread's CPU in its longest turn since the last reset. */
static uint64_t turn_max_us;

/* Turns the loop until w's callback ran, each turn waiting in poll. */
static int wait_done(struct waitres *w)
{
	while (!w->done) {
		uint64_t c0 = clock_us(CLOCK_THREAD_CPUTIME_ID), c;

		if (lws_service(bench_ctx, 0) < 0) {
			fprintf(stderr, "the loop failed\n");
			exit(1);
		}
		c = clock_us(CLOCK_THREAD_CPUTIME_ID) - c0;
		turn_max_us = c > turn_max_us ? c : turn_max_us;
	}
	return w->rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

static uint64_t maxof(const uint64_t *v, int n)
{
	uint64_t m = 0;

	for (int i = 0; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

static double ms(uint64_t us)
{
	return (double)us / 1000.0;
}

/* One operation's figures over the rounds. */
struct fig {
	uint64_t t[64], c[64], wait[64], turn[64], srv[64];
	uint64_t t0, c0, s0; /* this round's start */
};

/* Medians over the rounds, and the maxima of wall time, wait and turn. */
static void row(const char *store, const char *what, struct fig *f, int n)
{
	printf("%-6s %-16s wall %8.2f ms (max %8.2f)  CPU %7.2f ms  longest wait %7.2f ms (max "
	       "%7.2f)  longest turn CPU %6.2f ms (max %6.2f)",
	       store, what, ms(median(f->t, n)), ms(maxof(f->t, n)), ms(median(f->c, n)),
	       ms(median(f->wait, n)), ms(maxof(f->wait, n)), ms(median(f->turn, n)),
	       ms(maxof(f->turn, n)));
	if (server_pid)
		printf("  redis-server CPU %7.2f ms", ms(median(f->srv, n)));
	printf("\n");
	fflush(stdout);
}

static void fig_start(struct fig *f)
{
	uint64_t stale[64];

	/* Stamps written while the program itself held the loop (filling
	 * the next blob) are not the store's doing. */
	while (read(probe.fds[0], stale, sizeof(stale)) > 0)
		;
	probe.max_us = 0;
	turn_max_us = 0;
	f->s0 = server_cpu_us();
	f->t0 = mcpx_now_us();
	f->c0 = clock_us(CLOCK_PROCESS_CPUTIME_ID);
}

static void fig_end(struct fig *f, int r)
{
	f->t[r] = mcpx_now_us() - f->t0;
	f->c[r] = clock_us(CLOCK_PROCESS_CPUTIME_ID) - f->c0;
	f->wait[r] = probe.max_us;
	f->turn[r] = turn_max_us;
	f->srv[r] = server_cpu_us() - f->s0;
}

static void bench_blob(struct mcpx_store *s, const char *store, size_t len, int rounds)
{
	struct mcpx_store_put_opts o = {.ttl_ms = 600000};
	struct mcpx_store_key k = {"bench", "workspace", "ws"};
	static struct fig put, get;
	char label[40];

	for (int r = 0; r < rounds; r++) {
		struct waitres w = {0};
		char *data = malloc(len ? len : 1);

		memset(data, 'a' + r, len);
		fig_start(&put);
		if (mcpx_store_put(s, &k, data, len, &o, waitres_cb, &w, NULL) < 0 ||
		    wait_done(&w) < 0) {
			fprintf(stderr, "put failed: %s\n", w.error);
			exit(1);
		}
		fig_end(&put, r);
		waitres_free(&w);
		fig_start(&get);
		if (mcpx_store_get(s, &k, true, waitres_cb, &w, NULL) < 0 || wait_done(&w) < 0 ||
		    w.len != len) {
			fprintf(stderr, "get failed: %s\n", w.error);
			exit(1);
		}
		fig_end(&get, r);
		waitres_free(&w);
	}
	snprintf(label, sizeof(label), "put %zu KiB", len >> 10);
	row(store, label, &put, rounds);
	snprintf(label, sizeof(label), "get %zu KiB", len >> 10);
	row(store, label, &get, rounds);
}

static void bench_small(struct store_fx *fx, struct mcpx_store *s, const char *store, int rounds)
{
	struct mcpx_store_key k = {"bench", "task", "t1"};
	static struct fig lease, rec;
	uint64_t version = 0;

	for (int r = 0; r < rounds; r++) {
		struct mcpx_store_record_opts ro = {
		    .expect_version = r ? version : MCPX_STORE_ANY_VERSION, .ttl_ms = 600000};
		struct waitres w = {0};

		fig_start(&lease);
		if (mcpx_store_lease_hold(s, &k, NULL, 10000, 0, NULL, NULL, waitres_cb, &w, NULL) <
		        0 ||
		    wait_done(&w) < 0) {
			fprintf(stderr, "lease failed: %s\n", w.error);
			exit(1);
		}
		mcpx_store_lease_end(w.lease);
		fig_end(&lease, r);
		waitres_free(&w);
		fig_start(&rec);
		if (mcpx_store_record_put(s, &k, "{\"status\":\"working\"}", 20, &ro, waitres_cb,
		                          &w, NULL) < 0 ||
		    wait_done(&w) < 0) {
			fprintf(stderr, "record failed: %s\n", w.error);
			exit(1);
		}
		version = w.version;
		fig_end(&rec, r);
		waitres_free(&w);
		fx_turn_for(fx->loop, 20); /* the release goes out */
	}
	row(store, "lease hold + end", &lease, rounds);
	row(store, "record put (CAS)", &rec, rounds);
}

/* One store's rows. 0, or -1 when it could not run. */
static int bench_store(int b, int rounds, unsigned piece_kib)
{
	static const size_t sizes[] = {0, 1u << 20, 10u << 20, 64u << 20};
	const char *name = b ? "redis" : "dir";
	struct mcpx_store_config cfg;
	struct store_fx fx;
	struct mcpx_store *s;

	if (store_fx_init(&fx, b ? FX_REDIS : FX_DIR) < 0)
		return -1;
	mcpx_loop_free(fx.loop);
	if (!(fx.loop = bench_loop_new()) || probe_start(&probe, fx.loop) < 0)
		return -1;
	server_pid = fx.redis_pid;
	store_fx_config(&fx, &cfg);
	cfg.redis_piece_bytes = piece_kib << 10;
	if (!(s = store_fx_open(&fx, &cfg)))
		return -1;
	fx_turn_for(fx.loop, 200); /* connected */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		bench_blob(s, name, sizes[i], rounds);
	bench_small(&fx, s, name, rounds);
	mcpx_store_free(s);
	probe_stop(&probe);
	fx_turn_for(fx.loop, 10); /* the probe's watch ends */
	store_fx_close(&fx);
	lws_context_destroy(bench_ctx);
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	const char *only = argc > 2 ? argv[2] : NULL;
	unsigned piece_kib = argc > 3 ? (unsigned)atoi(argv[3]) : 0;

	if (rounds < 1 || rounds > 64)
		rounds = 5;
	for (int b = 0; b < 2; b++) {
		if (only && strcmp(only, b ? "redis" : "dir") != 0)
			continue;
		if (b && !fx_have_redis()) {
			printf("redis: skipped (no redis-server)\n");
			continue;
		}
		if (bench_store(b, rounds, piece_kib) < 0)
			return 1;
	}
	return 0;
}
