/*
 * store_bench.c - what the workspace store costs, per backend: the time of
 * a put (save) and a refreshing get (restore) of blobs of 0 B, 1 MiB,
 * 10 MiB and 64 MiB, a lease taken and ended, a record written with
 * compare-and-set; and, during each, the longest the event loop went
 * without turning (a 1 ms timer's largest gap), which is what the rest of
 * the server would feel; the CPU time the process used for it (the loop
 * and the store's threads: the figure that holds on a loaded machine,
 * where the wall-clock ones stretch with the CPU the process gets); and
 * the CPU time of the longest single loop turn (the loop thread's own,
 * so a turn the scheduler paused does not count): what one turn may hold
 * the loop for when the process has a core to itself.
 *
 *   build/store-bench [rounds] [dir|redis] [piece KiB]
 *
 * rounds: default 5 (it prints medians and maxima); a store's name runs
 * that store only; piece KiB sets the Redis store's redis_piece_bytes
 * (default 1024: what one command or reply carries of a blob).
 *
 * The directory store writes under /tmp (whatever filesystem that is:
 * say which when quoting numbers); the Redis store runs against a
 * redis-server this program starts on loopback (skipped without one).
 * Numbers only: it asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_fixture.h"

struct gap {
	struct mcpx_timer t;
	struct mcpx_loop *loop;
	uint64_t last, max;
};

static void gap_cb(struct mcpx_timer *t)
{
	struct gap *g = t->arg;
	uint64_t now = mcpx_now_us();

	if (now - g->last > g->max)
		g->max = now - g->last;
	g->last = now;
	mcpx_timer_start(g->loop, &g->t, 1000);
}

static void gap_start(struct gap *g, struct mcpx_loop *loop)
{
	memset(g, 0, sizeof(*g));
	g->loop = loop;
	g->t.fn = gap_cb;
	g->t.arg = g;
	g->last = mcpx_now_us();
	mcpx_timer_start(loop, &g->t, 1000);
}

static uint64_t clock_us(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t cpu_us(void)
{
	return clock_us(CLOCK_PROCESS_CPUTIME_ID);
}

/* The loop thread's CPU in its longest turn since the last reset. */
static uint64_t turn_max_us;

/* Turns the loop until w's callback ran, sleeping 0.1 ms between turns
 * (a server's loop sleeps in poll; spinning would be counted as CPU). */
static int wait_done(struct store_fx *fx, struct waitres *w)
{
	struct timespec ts = {0, 100000};

	while (!w->done) {
		uint64_t c0 = clock_us(CLOCK_THREAD_CPUTIME_ID), c;

		(void)mcpx_loop_turn(fx->loop);
		c = clock_us(CLOCK_THREAD_CPUTIME_ID) - c0;
		turn_max_us = c > turn_max_us ? c : turn_max_us;
		if (!w->done)
			nanosleep(&ts, NULL);
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

/* One operation's figures over the rounds: wall time, process CPU, the
 * loop's longest gap, the CPU of its longest turn. */
struct fig {
	uint64_t t[64], c[64], g[64], turn[64];
};

static void row(const char *store, const char *what, struct fig *f, int n)
{
	printf("%-6s %-16s wall median %8.2f ms (max %8.2f)  CPU median %7.2f ms  loop's longest "
	       "gap median %7.2f ms (max %7.2f)  longest turn CPU median %6.2f ms (max %6.2f)\n",
	       store, what, (double)median(f->t, n) / 1000.0, (double)maxof(f->t, n) / 1000.0,
	       (double)median(f->c, n) / 1000.0, (double)median(f->g, n) / 1000.0,
	       (double)maxof(f->g, n) / 1000.0, (double)median(f->turn, n) / 1000.0,
	       (double)maxof(f->turn, n) / 1000.0);
}

/* Starts measuring one operation. */
static void fig_start(struct gap *g, struct store_fx *fx, uint64_t *t0, uint64_t *c0)
{
	gap_start(g, fx->loop);
	turn_max_us = 0;
	*t0 = mcpx_now_us();
	*c0 = cpu_us();
}

/* Ends measuring round r of one operation. */
static void fig_end(struct fig *f, int r, struct gap *g, uint64_t t0, uint64_t c0)
{
	f->t[r] = mcpx_now_us() - t0;
	f->c[r] = cpu_us() - c0;
	f->g[r] = g->max;
	f->turn[r] = turn_max_us;
	mcpx_timer_cancel(&g->t);
}

static void bench_blob(struct store_fx *fx, struct mcpx_store *s, const char *store, size_t len,
                       int rounds)
{
	struct mcpx_store_put_opts o = {.ttl_ms = 600000};
	struct mcpx_store_key k = {"bench", "workspace", "ws"};
	static struct fig put, get;
	char label[40];
	struct gap g;

	for (int r = 0; r < rounds; r++) {
		struct waitres w = {0};
		char *data = malloc(len ? len : 1);
		uint64_t t0, c0;

		memset(data, 'a' + r, len);
		fig_start(&g, fx, &t0, &c0);
		if (mcpx_store_put(s, &k, data, len, &o, waitres_cb, &w, NULL) < 0 ||
		    wait_done(fx, &w) < 0) {
			fprintf(stderr, "put failed: %s\n", w.error);
			exit(1);
		}
		fig_end(&put, r, &g, t0, c0);
		waitres_free(&w);
		fig_start(&g, fx, &t0, &c0);
		if (mcpx_store_get(s, &k, true, waitres_cb, &w, NULL) < 0 ||
		    wait_done(fx, &w) < 0 || w.len != len) {
			fprintf(stderr, "get failed: %s\n", w.error);
			exit(1);
		}
		fig_end(&get, r, &g, t0, c0);
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
	struct gap g;

	for (int r = 0; r < rounds; r++) {
		struct mcpx_store_record_opts ro = {
		    .expect_version = r ? version : MCPX_STORE_ANY_VERSION, .ttl_ms = 600000};
		struct waitres w = {0};
		uint64_t t0, c0;

		fig_start(&g, fx, &t0, &c0);
		if (mcpx_store_lease_hold(s, &k, NULL, 10000, 0, NULL, NULL, waitres_cb, &w, NULL) <
		        0 ||
		    wait_done(fx, &w) < 0) {
			fprintf(stderr, "lease failed: %s\n", w.error);
			exit(1);
		}
		mcpx_store_lease_end(w.lease);
		fig_end(&lease, r, &g, t0, c0);
		waitres_free(&w);
		fig_start(&g, fx, &t0, &c0);
		if (mcpx_store_record_put(s, &k, "{\"status\":\"working\"}", 20, &ro, waitres_cb,
		                          &w, NULL) < 0 ||
		    wait_done(fx, &w) < 0) {
			fprintf(stderr, "record failed: %s\n", w.error);
			exit(1);
		}
		version = w.version;
		fig_end(&rec, r, &g, t0, c0);
		waitres_free(&w);
		fx_turn_for(fx->loop, 20); /* the release goes out */
	}
	row(store, "lease hold + end", &lease, rounds);
	row(store, "record put (CAS)", &rec, rounds);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {0, 1u << 20, 10u << 20, 64u << 20};
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	const char *only = argc > 2 ? argv[2] : NULL;
	unsigned piece_kib = argc > 3 ? (unsigned)atoi(argv[3]) : 0;

	if (rounds < 1 || rounds > 64)
		rounds = 5;
	for (int b = 0; b < 2; b++) {
		struct store_fx fx;
		struct mcpx_store_config cfg;
		struct mcpx_store *s;
		const char *name = b ? "redis" : "dir";

		if (only && strcmp(only, name) != 0)
			continue;
		if (b && !fx_have_redis()) {
			printf("redis: skipped (no redis-server)\n");
			continue;
		}
		if (store_fx_init(&fx, b ? FX_REDIS : FX_DIR) < 0)
			return 1;
		store_fx_config(&fx, &cfg);
		cfg.redis_piece_bytes = piece_kib << 10;
		if (!(s = store_fx_open(&fx, &cfg)))
			return 1;
		fx_turn_for(fx.loop, 200); /* connected */
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			bench_blob(&fx, s, name, sizes[i], rounds);
		bench_small(&fx, s, name, rounds);
		mcpx_store_free(s);
		store_fx_close(&fx);
	}
	return 0;
}
