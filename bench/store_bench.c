/*
 * store_bench.c - what the workspace store costs, per backend: the time of
 * a put (save) and a refreshing get (restore) of blobs of 0 B, 1 MiB,
 * 10 MiB and 64 MiB, a lease taken and ended, a record written with
 * compare-and-set; and, during each, the longest the event loop went
 * without turning (a 1 ms timer's largest gap), which is what the rest of
 * the server would feel; and the CPU time the process used for it (the
 * loop and the store's threads: the figure that holds on a loaded machine,
 * where the wall-clock ones stretch with the CPU the process gets).
 *
 *   build/store-bench [rounds]      (default 5; prints medians and maxima)
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

/* Turns the loop until w's callback ran, sleeping 0.1 ms between turns
 * (a server's loop sleeps in poll; spinning would be counted as CPU). */
static int wait_done(struct store_fx *fx, struct waitres *w)
{
	struct timespec ts = {0, 100000};

	while (!w->done) {
		(void)mcpx_loop_turn(fx->loop);
		if (!w->done)
			nanosleep(&ts, NULL);
	}
	return w->rc;
}

static uint64_t cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
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

static void row(const char *store, const char *what, uint64_t *t, uint64_t *g, uint64_t *c, int n)
{
	printf("%-6s %-18s wall median %8.2f ms (max %8.2f)  CPU median %7.2f ms  loop's longest "
	       "gap median %7.2f ms (max %7.2f)\n",
	       store, what, (double)median(t, n) / 1000.0, (double)maxof(t, n) / 1000.0,
	       (double)median(c, n) / 1000.0, (double)median(g, n) / 1000.0,
	       (double)maxof(g, n) / 1000.0);
}

static void bench_blob(struct store_fx *fx, struct mcpx_store *s, const char *store, size_t len,
                       int rounds)
{
	struct mcpx_store_put_opts o = {.ttl_ms = 600000};
	struct mcpx_store_key k = {"bench", "workspace", "ws"};
	uint64_t tp[64], gp[64], tg[64], gg[64], cp[64], cg[64];
	char label[40];
	struct gap g;

	for (int r = 0; r < rounds; r++) {
		struct waitres w = {0};
		char *data = malloc(len ? len : 1);
		uint64_t t0, c0;

		memset(data, 'a' + r, len);
		gap_start(&g, fx->loop);
		t0 = mcpx_now_us();
		c0 = cpu_us();
		if (mcpx_store_put(s, &k, data, len, &o, waitres_cb, &w, NULL) < 0 ||
		    wait_done(fx, &w) < 0) {
			fprintf(stderr, "put failed: %s\n", w.error);
			exit(1);
		}
		tp[r] = mcpx_now_us() - t0;
		cp[r] = cpu_us() - c0;
		gp[r] = g.max;
		mcpx_timer_cancel(&g.t);
		waitres_free(&w);
		gap_start(&g, fx->loop);
		t0 = mcpx_now_us();
		if (mcpx_store_get(s, &k, true, waitres_cb, &w, NULL) < 0 ||
		    wait_done(fx, &w) < 0 || w.len != len) {
			fprintf(stderr, "get failed: %s\n", w.error);
			exit(1);
		}
		tg[r] = mcpx_now_us() - t0;
		cg[r] = cpu_us() - c0;
		gg[r] = g.max;
		mcpx_timer_cancel(&g.t);
		waitres_free(&w);
	}
	snprintf(label, sizeof(label), "put %zu KiB", len >> 10);
	row(store, label, tp, gp, cp, rounds);
	snprintf(label, sizeof(label), "get %zu KiB", len >> 10);
	row(store, label, tg, gg, cg, rounds);
}

static void bench_small(struct store_fx *fx, struct mcpx_store *s, const char *store, int rounds)
{
	struct mcpx_store_key k = {"bench", "task", "t1"};
	uint64_t tl[64], gl[64], tr[64], gr[64], cl[64], cr[64], version = 0;
	struct gap g;

	for (int r = 0; r < rounds; r++) {
		struct mcpx_store_record_opts ro = {
		    .expect_version = r ? version : MCPX_STORE_ANY_VERSION, .ttl_ms = 600000};
		struct waitres w = {0};
		uint64_t t0, c0;

		gap_start(&g, fx->loop);
		t0 = mcpx_now_us();
		c0 = cpu_us();
		if (mcpx_store_lease_hold(s, &k, NULL, 10000, 0, NULL, NULL, waitres_cb, &w, NULL) <
		        0 ||
		    wait_done(fx, &w) < 0) {
			fprintf(stderr, "lease failed: %s\n", w.error);
			exit(1);
		}
		mcpx_store_lease_end(w.lease);
		tl[r] = mcpx_now_us() - t0;
		cl[r] = cpu_us() - c0;
		gl[r] = g.max;
		mcpx_timer_cancel(&g.t);
		waitres_free(&w);
		gap_start(&g, fx->loop);
		t0 = mcpx_now_us();
		c0 = cpu_us();
		if (mcpx_store_record_put(s, &k, "{\"status\":\"working\"}", 20, &ro, waitres_cb,
		                          &w, NULL) < 0 ||
		    wait_done(fx, &w) < 0) {
			fprintf(stderr, "record failed: %s\n", w.error);
			exit(1);
		}
		version = w.version;
		tr[r] = mcpx_now_us() - t0;
		cr[r] = cpu_us() - c0;
		gr[r] = g.max;
		mcpx_timer_cancel(&g.t);
		waitres_free(&w);
		fx_turn_for(fx->loop, 20); /* the release goes out */
	}
	row(store, "lease hold + end", tl, gl, cl, rounds);
	row(store, "record put (CAS)", tr, gr, cr, rounds);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {0, 1u << 20, 10u << 20, 64u << 20};
	int rounds = argc > 1 ? atoi(argv[1]) : 5;

	if (rounds < 1 || rounds > 64)
		rounds = 5;
	for (int b = 0; b < 2; b++) {
		struct store_fx fx;
		struct mcpx_store *s;
		const char *name = b ? "redis" : "dir";

		if (b && !fx_have_redis()) {
			printf("redis: skipped (no redis-server)\n");
			continue;
		}
		if (store_fx_init(&fx, b ? FX_REDIS : FX_DIR) < 0 ||
		    !(s = store_fx_open(&fx, NULL)))
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
