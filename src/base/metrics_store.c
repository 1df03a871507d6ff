/*
 * metrics_store.c - the store's series for /metrics (metrics.h): operations
 * by store, operation and outcome; how long gets and puts take; bytes moved;
 * and what each store holds.
 *
 * Every label comes from a fixed table (two stores, the operations, a few
 * outcomes), so the series are bounded whatever callers do. Nothing is
 * rendered until a store reports something, so a server without one shows
 * none of these. State is unsynchronised, like metrics.c's: only the loop
 * thread reports.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "buf.h"
#include "metrics.h"

static const char *const stores[] = {"dir", "redis"};
#define N_STORES 2
static const char *const ops[] = {"get",         "put",           "delete",        "list",
                                  "record_get",  "record_put",    "record_delete", "lease_acquire",
                                  "lease_renew", "lease_release", "lease_peek",    "other"};
#define N_OPS (sizeof(ops) / sizeof(ops[0]))
static const char *const outcomes[] = {"ok",      "not_found",   "conflict", "too_large", "quota",
                                       "timeout", "unavailable", "shutdown", "error"};
#define N_OUTCOMES (sizeof(outcomes) / sizeof(outcomes[0]))
/* Only gets and puts (restores and saves) get a latency histogram. */
static const double buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                 0.25,  0.5,    1,     2.5,  5,     10,   30};
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

struct hist {
	uint64_t counts[N_BUCKETS + 1];
	uint64_t count;
	double sum;
};

static struct {
	bool used[N_STORES];
	uint64_t ops[N_STORES][N_OPS][N_OUTCOMES];
	struct hist latency[N_STORES][2]; /* get, put */
	uint64_t read_bytes[N_STORES], written_bytes[N_STORES];
	bool stored_known[N_STORES];
	uint64_t objects[N_STORES], bytes[N_STORES];
	int up[N_STORES]; /* -1: never said */
	bool up_known[N_STORES];
} m;

/* The first error of a render (a full buffer, no memory). */
static int render_rc;
#define ADDF(b, ...)                                                                               \
	do {                                                                                       \
		int r_ = mcpx_buf_addf(b, __VA_ARGS__);                                            \
		if (r_ < 0 && !render_rc)                                                          \
			render_rc = r_;                                                            \
	} while (0)

static size_t find(const char *const *t, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (s && strcmp(t[i], s) == 0)
			return i;
	return n;
}

static size_t store_index(const char *store)
{
	size_t i = find(stores, N_STORES, store);

	return i < N_STORES ? i : 0;
}

void mcpx_metrics_store_op(const char *store, const char *op, const char *outcome, double seconds,
                           uint64_t bytes)
{
	size_t s = store_index(store), o = find(ops, N_OPS, op),
	       r = find(outcomes, N_OUTCOMES, outcome);

	if (o == N_OPS)
		o = N_OPS - 1;
	if (r == N_OUTCOMES)
		r = N_OUTCOMES - 1;
	m.used[s] = true;
	m.ops[s][o][r]++;
	if ((o == 0 || o == 1) && strcmp(outcomes[r], "shutdown") != 0) {
		struct hist *h = &m.latency[s][o];
		size_t i = 0;

		if (!(seconds >= 0))
			seconds = 0;
		while (i < N_BUCKETS && seconds > buckets[i])
			i++;
		h->counts[i]++;
		h->count++;
		h->sum += seconds;
	}
	if (r == 0 && o == 0)
		m.read_bytes[s] += bytes;
	if (r == 0 && o == 1)
		m.written_bytes[s] += bytes;
}

void mcpx_metrics_store_stored(const char *store, uint64_t objects, uint64_t bytes)
{
	size_t s = store_index(store);

	m.used[s] = true;
	m.stored_known[s] = true;
	m.objects[s] = objects;
	m.bytes[s] = bytes;
}

void mcpx_metrics_store_up(const char *store, int up)
{
	size_t s = store_index(store);

	m.used[s] = true;
	m.up_known[s] = true;
	m.up[s] = up ? 1 : 0;
}

static void render_hist(struct mcpx_buf *b, size_t s, size_t o)
{
	const struct hist *h = &m.latency[s][o];
	const char *name = "mcp_exec_store_duration_seconds";
	uint64_t cum = 0;

	for (size_t i = 0; i <= N_BUCKETS; i++) {
		cum += h->counts[i];
		if (i < N_BUCKETS)
			ADDF(b, "%s_bucket{store=\"%s\",op=\"%s\",le=\"%g\"} %" PRIu64 "\n", name,
			     stores[s], ops[o], buckets[i], cum);
		else
			ADDF(b, "%s_bucket{store=\"%s\",op=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name,
			     stores[s], ops[o], cum);
	}
	ADDF(b, "%s_sum{store=\"%s\",op=\"%s\"} %.9g\n", name, stores[s], ops[o], h->sum);
	ADDF(b, "%s_count{store=\"%s\",op=\"%s\"} %" PRIu64 "\n", name, stores[s], ops[o],
	     h->count);
}

static void render_gauges(struct mcpx_buf *b)
{
	ADDF(b, "%s",
	     "# HELP mcp_exec_store_transferred_bytes_total Bytes of blobs read from "
	     "and written to the store.\n"
	     "# TYPE mcp_exec_store_transferred_bytes_total counter\n");
	for (size_t s = 0; s < N_STORES; s++)
		if (m.used[s])
			ADDF(b,
			     "mcp_exec_store_transferred_bytes_total{store=\"%s\",direction="
			     "\"read\"} %" PRIu64 "\n"
			     "mcp_exec_store_transferred_bytes_total{store=\"%s\",direction="
			     "\"write\"} %" PRIu64 "\n",
			     stores[s], m.read_bytes[s], stores[s], m.written_bytes[s]);
	ADDF(b, "%s",
	     "# HELP mcp_exec_store_bytes Bytes of unexpired blobs and records in the "
	     "store (directory: their data, at the last sweep; Redis: the server's "
	     "used_memory).\n# TYPE mcp_exec_store_bytes gauge\n");
	for (size_t s = 0; s < N_STORES; s++)
		if (m.stored_known[s])
			ADDF(b, "mcp_exec_store_bytes{store=\"%s\"} %" PRIu64 "\n", stores[s],
			     m.bytes[s]);
	ADDF(b, "%s",
	     "# HELP mcp_exec_store_objects Unexpired blobs and records in the store, "
	     "at the last count.\n# TYPE mcp_exec_store_objects gauge\n");
	for (size_t s = 0; s < N_STORES; s++)
		if (m.stored_known[s])
			ADDF(b, "mcp_exec_store_objects{store=\"%s\"} %" PRIu64 "\n", stores[s],
			     m.objects[s]);
	ADDF(b, "%s",
	     "# HELP mcp_exec_store_up 1 while the store answers, 0 while it is "
	     "unreachable.\n# TYPE mcp_exec_store_up gauge\n");
	for (size_t s = 0; s < N_STORES; s++)
		if (m.up_known[s])
			ADDF(b, "mcp_exec_store_up{store=\"%s\"} %d\n", stores[s], m.up[s]);
}

int mcpx_metrics_store_render(struct mcpx_buf *b)
{
	render_rc = 0;
	if (!m.used[0] && !m.used[1])
		return 0;
	ADDF(b, "%s",
	     "# HELP mcp_exec_store_operations_total Operations on the workspace and "
	     "task store, by store, operation and outcome.\n"
	     "# TYPE mcp_exec_store_operations_total counter\n");
	for (size_t s = 0; s < N_STORES; s++)
		for (size_t o = 0; o < N_OPS; o++)
			for (size_t r = 0; r < N_OUTCOMES; r++)
				if (m.ops[s][o][r])
					ADDF(b,
					     "mcp_exec_store_operations_total{store=\"%s\",op=\"%"
					     "s\","
					     "outcome=\"%s\"} %" PRIu64 "\n",
					     stores[s], ops[o], outcomes[r], m.ops[s][o][r]);
	ADDF(b, "%s",
	     "# HELP mcp_exec_store_duration_seconds Time a get (restore) or a put "
	     "(save) of a blob took, from the call to its answer.\n"
	     "# TYPE mcp_exec_store_duration_seconds histogram\n");
	for (size_t s = 0; s < N_STORES; s++)
		if (m.used[s])
			for (size_t o = 0; o < 2; o++)
				render_hist(b, s, o);
	render_gauges(b);
	return render_rc;
}
