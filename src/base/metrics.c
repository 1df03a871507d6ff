/*
 * metrics.c - the process's Prometheus metrics, in text exposition format
 * 0.0.4.
 *
 * Modules report events through small functions; /metrics calls
 * mcpx_metrics_render(). Every label set is bounded by a fixed table, and
 * values outside it are folded into "other", so no client can create an
 * unbounded number of series (a cardinality explosion is a denial of service
 * on the monitoring system). State is process-wide and unsynchronised: the
 * server is single-threaded. The calls' series (tools, profiles, egress,
 * upstreams) are metrics_calls.c's; how each line is spelled is
 * prom_text.c's.
 * This module does not serve HTTP and does not read any other module's
 * state; gauges are handed in at render time.
 */
#include "metrics.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "loop_guard.h"
#include "prom_text.h"

static const char *const outcomes[] = {"ok",     "error_exit", "timeout",  "killed", "cancelled",
                                       "failed", "expired",    "shutdown", "busy",   "other"};
static const char *const limits[] = {"none", "timeout",   "memory",    "cpu",
                                     "disk", "processes", "file_size", "other"};
static const char *const replace_reasons[] = {"runs", "age", "died", "other"};
/* Why the server closed an HTTP connection before (or instead of) a normal
 * response; see http_conn.c. */
static const char *const closes[] = {"header_timeout", "body_timeout",   "evicted",
                                     "refused",        "peer_closed",    "pipelined",
                                     "bad_head",       "head_too_large", "other"};
#define N_CLOSES (sizeof(closes) / sizeof(closes[0]))
/* ServiceAccount tokens: reviews sent (the first three), and values never
 * sent, for their shape or past a limit (tokenreview.c). */
static const char *const review_outcomes[] = {
    "admitted",        "refused",       "unavailable",       "not_jwt",
    "limited_address", "limited_total", "limited_in_flight", "other"};
#define N_REVIEW_OUTCOMES (sizeof(review_outcomes) / sizeof(review_outcomes[0]))
#define N_OUTCOMES (sizeof(outcomes) / sizeof(outcomes[0]))
#define N_REASONS (sizeof(replace_reasons) / sizeof(replace_reasons[0]))
#define N_LIMITS (sizeof(limits) / sizeof(limits[0]))

/* Status codes outside 100..599 are not HTTP; they share one "other" slot. */
#define HTTP_MIN 100
#define HTTP_MAX 599
#define HTTP_SLOTS (HTTP_MAX - HTTP_MIN + 2)

/* Layers and info keys come from our own code, not from clients, but the
 * tables are still fixed so a bug cannot grow them without bound. */
#define MAX_LAYERS 16
#define MAX_INFO 16
#define NAME_MAX_LEN 48
#define VALUE_MAX_LEN 128

struct named {
	char name[NAME_MAX_LEN];
	char value[VALUE_MAX_LEN];
	int active;
	bool used;
};

static struct {
	uint64_t executions[N_OUTCOMES][N_LIMITS];
	struct mcpx_prom_hist duration, queue_wait;
	uint64_t http[HTTP_SLOTS];
	uint64_t closes[N_CLOSES];
	uint64_t reviews[N_REVIEW_OUTCOMES];
	unsigned long long http_connections;
	struct named layers[MAX_LAYERS];
	struct named info[MAX_INFO];
	long zygote_pid;
	uint64_t zygote_replaced[N_REASONS];
} m;

void mcpx_metrics_execution(const char *outcome, const char *limit, double duration_s,
                            double queue_wait_s)
{
	size_t o = mcpx_prom_lookup(outcomes, N_OUTCOMES, outcome ? outcome : "other");
	size_t l = limit ? mcpx_prom_lookup(limits, N_LIMITS, limit) : 0;

	m.executions[o][l]++;
	/* A "busy" rejection never entered the queue nor ran; observing its
	 * zeros would drag both distributions towards nothing. */
	if (strcmp(outcomes[o], "busy") == 0)
		return;
	mcpx_prom_observe(&m.duration, duration_s);
	mcpx_prom_observe(&m.queue_wait, queue_wait_s);
}

void mcpx_metrics_http_response(int status)
{
	if (status >= HTTP_MIN && status <= HTTP_MAX)
		m.http[status - HTTP_MIN]++;
	else
		m.http[HTTP_SLOTS - 1]++;
}

void mcpx_metrics_http_conn_closed(const char *reason)
{
	m.closes[mcpx_prom_lookup(closes, N_CLOSES, reason ? reason : "other")]++;
}

void mcpx_metrics_tokenreview(const char *outcome)
{
	m.reviews[mcpx_prom_lookup(review_outcomes, N_REVIEW_OUTCOMES,
	                           outcome ? outcome : "other")]++;
}

void mcpx_metrics_http_connections(unsigned long long open)
{
	m.http_connections = open;
}

/* Finds or claims the slot for name; NULL when the table is full or the name
 * too long (it is dropped rather than truncated into a different name). */
static struct named *named_slot(struct named *t, size_t n, const char *name)
{
	struct named *free_slot = NULL;

	if (strlen(name) >= NAME_MAX_LEN)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (t[i].used && strcmp(t[i].name, name) == 0)
			return &t[i];
		if (!t[i].used && !free_slot)
			free_slot = &t[i];
	}
	if (free_slot) {
		free_slot->used = true;
		snprintf(free_slot->name, sizeof(free_slot->name), "%s", name);
	}
	return free_slot;
}

void mcpx_metrics_set_layer(const char *layer, int active)
{
	struct named *s;

	if (!layer || !layer[0])
		return;
	s = named_slot(m.layers, MAX_LAYERS, layer);
	if (s)
		s->active = active ? 1 : 0;
}

/* Label names must match [a-zA-Z_][a-zA-Z0-9_]*; anything else would make
 * the whole exposition unparsable, so offending characters become '_'. */
static void sanitize_label_name(char *s)
{
	for (char *p = s; *p; p++) {
		bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
		          (p != s && *p >= '0' && *p <= '9');
		if (!ok)
			*p = '_';
	}
}

void mcpx_metrics_set_info(const char *key, const char *value)
{
	char name[NAME_MAX_LEN];
	struct named *s;

	if (!key || !key[0] || !value || strlen(key) >= sizeof(name))
		return;
	snprintf(name, sizeof(name), "%s", key);
	sanitize_label_name(name);
	s = named_slot(m.info, MAX_INFO, name);
	if (s)
		snprintf(s->value, sizeof(s->value), "%s", value);
}

void mcpx_metrics_set_zygote(long pid)
{
	m.zygote_pid = pid > 0 ? pid : 0;
}

void mcpx_metrics_zygote_replaced(const char *reason)
{
	m.zygote_replaced[mcpx_prom_lookup(replace_reasons, N_REASONS,
	                                   reason ? reason : "other")]++;
}

static void put_zygote(struct mcpx_prom_buf *b)
{
	mcpx_prom_gauge(b, "mcp_exec_zygote_pid",
	                "Pid of the fork server's current zygote; 0 when there is none.",
	                (unsigned long long)m.zygote_pid);
	mcpx_prom_header(b, "mcp_exec_zygote_replacements_total", "counter",
	                 "Zygotes replaced, by why: served their runs or time, or died.");
	for (size_t i = 0; i < N_REASONS; i++)
		mcpx_prom_put(b, "mcp_exec_zygote_replacements_total{reason=\"%s\"} %" PRIu64 "\n",
		              replace_reasons[i], m.zygote_replaced[i]);
}

/* The loop's own health (loop_guard.h): its longest callback since the
 * previous scrape (each scrape starts a new window, so a benchmark can
 * scrape before and after what it measures) and the waits that blocked it. */
static void put_loop(struct mcpx_prom_buf *b)
{
	mcpx_prom_header(b, "mcp_exec_loop_stall_max_seconds", "gauge",
	                 "The longest time the event loop spent in one callback since the previous "
	                 "scrape of /metrics (every client and run waited meanwhile).");
	mcpx_prom_put(b, "mcp_exec_loop_stall_max_seconds ");
	mcpx_prom_double(b, (double)mcpx_loop_stall_max_us_take() / 1e6);
	mcpx_prom_put(b, "\n");
	mcpx_prom_header(
	    b, "mcp_exec_loop_blocking_waits_total", "counter",
	    "Waits that blocked the event loop's thread (a wait for the fork server's "
	    "answer, a process's exit or a cgroup's removal): 0 unless something is wrong.");
	mcpx_prom_put(b, "mcp_exec_loop_blocking_waits_total %" PRIu64 "\n",
	              mcpx_loop_blocking_waits());
}

static unsigned long long nonneg(long long v)
{
	return v < 0 ? 0 : (unsigned long long)v;
}

/* The HTTP front door: responses by status, open connections, and the
 * connections closed early, by reason. */
static void put_http(struct mcpx_prom_buf *b)
{
	mcpx_prom_header(b, "mcp_exec_http_responses_total", "counter",
	                 "HTTP responses sent, by status code.");
	for (int i = 0; i < HTTP_SLOTS; i++) {
		if (!m.http[i])
			continue;
		if (i < HTTP_SLOTS - 1)
			mcpx_prom_put(b, "mcp_exec_http_responses_total{code=\"%d\"} %" PRIu64 "\n",
			              HTTP_MIN + i, m.http[i]);
		else
			mcpx_prom_put(b,
			              "mcp_exec_http_responses_total{code=\"other\"} %" PRIu64 "\n",
			              m.http[i]);
	}

	mcpx_prom_gauge(b, "mcp_exec_http_connections", "Open HTTP connections.",
	                m.http_connections);
	mcpx_prom_header(b, "mcp_exec_http_connections_closed_total", "counter",
	                 "HTTP connections the server closed early, by reason.");
	for (size_t i = 0; i < N_CLOSES; i++)
		if (m.closes[i])
			mcpx_prom_put(
			    b,
			    "mcp_exec_http_connections_closed_total{reason=\"%s\"} %" PRIu64 "\n",
			    closes[i], m.closes[i]);
	mcpx_prom_header(b, "mcp_exec_tokenreviews_total", "counter",
	                 "ServiceAccount tokens that needed the API server, by outcome: admitted, "
	                 "refused, unavailable (TokenReviews sent); not_jwt, limited_address, "
	                 "limited_total, limited_in_flight (not sent).");
	for (size_t i = 0; i < N_REVIEW_OUTCOMES; i++)
		if (m.reviews[i])
			mcpx_prom_put(b,
			              "mcp_exec_tokenreviews_total{outcome=\"%s\"} %" PRIu64 "\n",
			              review_outcomes[i], m.reviews[i]);
}

static void put_layers(struct mcpx_prom_buf *b)
{
	mcpx_prom_header(b, "mcp_exec_sandbox_layer", "gauge",
	                 "1 for each sandbox layer that is active, 0 for each that is not.");
	for (size_t i = 0; i < MAX_LAYERS; i++) {
		if (!m.layers[i].used)
			continue;
		mcpx_prom_put(b, "mcp_exec_sandbox_layer{layer=\"");
		mcpx_prom_label(b, m.layers[i].name);
		mcpx_prom_put(b, "\"} %d\n", m.layers[i].active);
	}
}

/* The workspace and task store's series (metrics_store.c). */
static void put_store(struct mcpx_prom_buf *b)
{
	struct mcpx_buf sb;

	mcpx_buf_init(&sb, MCPX_PROM_RENDER_CAP / 4);
	if (mcpx_metrics_store_render(&sb) < 0 || mcpx_metrics_workspace_render(&sb) < 0)
		b->failed = true;
	else if (sb.len)
		mcpx_prom_put(b, "%s", mcpx_buf_str(&sb));
	mcpx_buf_free(&sb);
}

/* The build and this replica's settings, as labels. */
static void put_info(struct mcpx_prom_buf *b)
{
	bool any_info = false;

	mcpx_prom_header(b, "mcp_exec_build_info", "gauge", "The version of this build.");
	mcpx_prom_put(b, "mcp_exec_build_info{version=\"");
	mcpx_prom_label(b, MCPX_VERSION);
	mcpx_prom_put(b, "\"} 1\n");

	mcpx_prom_header(b, "mcp_exec_info", "gauge", "Settings of this replica, as labels.");
	for (size_t i = 0; i < MAX_INFO; i++) {
		if (!m.info[i].used)
			continue;
		mcpx_prom_put(b, "%s%s=\"", any_info ? "," : "mcp_exec_info{", m.info[i].name);
		mcpx_prom_label(b, m.info[i].value);
		mcpx_prom_put(b, "\"");
		any_info = true;
	}
	if (any_info)
		mcpx_prom_put(b, "} 1\n");
}

static char *render(const struct mcpx_metrics_gauges *g, size_t *len, bool loop)
{
	static const struct mcpx_metrics_gauges zero;
	struct mcpx_prom_buf b = {0};

	if (!g)
		g = &zero;

	mcpx_prom_header(&b, "mcp_exec_executions_total", "counter",
	                 "Executions finished, by outcome and the limit that was hit.");
	for (size_t o = 0; o < N_OUTCOMES; o++)
		for (size_t l = 0; l < N_LIMITS; l++)
			if (m.executions[o][l])
				mcpx_prom_put(
				    &b,
				    "mcp_exec_executions_total{outcome=\"%s\",limit=\"%s\"} "
				    "%" PRIu64 "\n",
				    outcomes[o], limits[l], m.executions[o][l]);

	mcpx_prom_histogram(&b, "mcp_exec_execution_duration_seconds",
	                    "Wall-clock time of executions in the sandbox.", &m.duration);
	mcpx_prom_histogram(&b, "mcp_exec_queue_wait_seconds",
	                    "Time executions waited in the queue before starting.", &m.queue_wait);

	mcpx_prom_gauge(&b, "mcp_exec_queue_depth", "Executions waiting in the queue.",
	                g->queue_depth);
	mcpx_prom_gauge(&b, "mcp_exec_running", "Executions running now.", nonneg(g->running));
	mcpx_prom_gauge(&b, "mcp_exec_active_sessions", "Sessions seen recently on this replica.",
	                g->active_sessions);
	mcpx_prom_gauge(&b, "mcp_exec_sse_streams", "Open SSE streams.", g->sse_streams);
	mcpx_prom_gauge(&b, "mcp_exec_ready", "1 when the replica accepts work.", g->ready ? 1 : 0);
	mcpx_prom_gauge(&b, "mcp_exec_draining", "1 while shutting down.", g->draining ? 1 : 0);

	put_http(&b);
	mcpx_metrics_calls_render(&b);
	put_layers(&b);

	put_zygote(&b);
	put_store(&b);
	if (loop)
		put_loop(&b);

	put_info(&b);

	if (b.failed) {
		free(b.p);
		return NULL;
	}
	if (len)
		*len = b.len;
	return b.p;
}

char *mcpx_metrics_render(const struct mcpx_metrics_gauges *g, size_t *len)
{
	return render(g, len, false);
}

char *mcpx_metrics_render_scrape(const struct mcpx_metrics_gauges *g, size_t *len)
{
	return render(g, len, true);
}
