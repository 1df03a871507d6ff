/*
 * metrics.c - the process's Prometheus metrics, in text exposition format
 * 0.0.4.
 *
 * Modules report events through small functions; /metrics calls
 * mcpx_metrics_render(). Every label set is bounded by a fixed table, and
 * values outside it are folded into "other", so no client can create an
 * unbounded number of series (a cardinality explosion is a denial of service
 * on the monitoring system). State is process-wide and unsynchronised: the
 * server is single-threaded. How each line is spelled is prom_text.c's.
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
static const char *const profile_outcomes[] = {"ok",        "error_exit",   "timeout", "killed",
                                               "cancelled", "failed",       "expired", "shutdown",
                                               "busy",      "rate_limited", "other"};
#define N_PROFILE_OUTCOMES (sizeof(profile_outcomes) / sizeof(profile_outcomes[0]))
#define MAX_PROFILE_SERIES 128
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
static const char *const egress_outcomes[] = {"ok", "failed", "cancelled", "denied", "other"};
static const char *const egress_reasons[] = {
    "none",      "not_configured", "bad_request", "bad_url",   "no_rule",           "method",
    "header",    "address",        "redirect",    "too_large", "request_too_large", "in_flight",
    "run_limit", "other"};
#define N_EGRESS_OUTCOMES (sizeof(egress_outcomes) / sizeof(egress_outcomes[0]))
#define N_EGRESS_REASONS (sizeof(egress_reasons) / sizeof(egress_reasons[0]))
/* Tool calls: exec and the policy's functions (whose names reloads can
 * change), each with an outcome; a fixed number of series as for egress. */
static const char *const tool_outcomes[] = {
    "ok", "invalid_arguments", "raised", "bad_result", "failed", "busy", "cancelled", "other"};
#define N_TOOL_OUTCOMES (sizeof(tool_outcomes) / sizeof(tool_outcomes[0]))
#define MAX_TOOL_SERIES 512
/* Rule names come from the policy file (at most 64 rules, but reloads can
 * bring new names): a fixed number of series, the rest counted as "other". */
#define MAX_EGRESS_SERIES 512
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

struct egress_series {
	char rule[65];
	unsigned char outcome, reason;
	uint64_t count;
};

/* Upstream MCP servers (upstream.h): names from the policy file, a fixed
 * number of series, the rest counted as "other". */
static const char *const upstream_outcomes[] = {"ok",     "tool_error", "denied", "timeout",
                                                "failed", "cancelled",  "other"};
#define N_UPSTREAM_OUTCOMES (sizeof(upstream_outcomes) / sizeof(upstream_outcomes[0]))
#define MAX_UPSTREAM_SERIES 256
#define MAX_UPSTREAM_UP 64

struct upstream_series {
	char upstream[33];
	unsigned char outcome;
	uint64_t count;
};

struct upstream_up {
	char upstream[33];
	int up; /* -1: no longer in the policy */
};

struct tool_series {
	char tool[129];
	unsigned char outcome;
	uint64_t count;
};

struct profile_series {
	char profile[65];
	uint64_t count[N_PROFILE_OUTCOMES];
};

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
	struct egress_series egress[MAX_EGRESS_SERIES];
	size_t n_egress;
	struct tool_series tools[MAX_TOOL_SERIES];
	size_t n_tools;
	struct profile_series profiles[MAX_PROFILE_SERIES];
	size_t n_profiles;
	struct upstream_series upstream[MAX_UPSTREAM_SERIES];
	size_t n_upstream;
	struct mcpx_prom_hist upstream_duration;
	struct upstream_up up[MAX_UPSTREAM_UP];
	size_t n_up;
	long zygote_pid;
	uint64_t zygote_replaced[N_REASONS];
} m;

static size_t lookup(const char *const *table, size_t n, const char *s)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (strcmp(table[i], s) == 0)
			return i;
	return n - 1; /* "other" is always last */
}

void mcpx_metrics_execution(const char *outcome, const char *limit, double duration_s,
                            double queue_wait_s)
{
	size_t o = lookup(outcomes, N_OUTCOMES, outcome ? outcome : "other");
	size_t l = limit ? lookup(limits, N_LIMITS, limit) : 0;

	m.executions[o][l]++;
	/* A "busy" rejection never entered the queue nor ran; observing its
	 * zeros would drag both distributions towards nothing. */
	if (strcmp(outcomes[o], "busy") == 0)
		return;
	mcpx_prom_observe(&m.duration, duration_s);
	mcpx_prom_observe(&m.queue_wait, queue_wait_s);
}

void mcpx_metrics_egress(const char *rule, const char *outcome, const char *reason)
{
	unsigned char o =
	    (unsigned char)lookup(egress_outcomes, N_EGRESS_OUTCOMES, outcome ? outcome : "other");
	unsigned char r =
	    (unsigned char)(reason ? lookup(egress_reasons, N_EGRESS_REASONS, reason) : 0);
	char name[65];
	size_t i;

	snprintf(name, sizeof(name), "%s", rule && strlen(rule) < sizeof(name) ? rule : "none");
	for (i = 0; i < m.n_egress; i++)
		if (m.egress[i].outcome == o && m.egress[i].reason == r &&
		    strcmp(m.egress[i].rule, name) == 0)
			break;
	if (i == m.n_egress) {
		/* The last slots are kept for "other": enough for every
		 * outcome and reason, so the table never overflows. */
		if (m.n_egress >= MAX_EGRESS_SERIES - N_EGRESS_OUTCOMES * N_EGRESS_REASONS &&
		    strcmp(name, "other") != 0) {
			mcpx_metrics_egress("other", outcome, reason);
			return;
		}
		if (m.n_egress == MAX_EGRESS_SERIES)
			return;
		snprintf(m.egress[i].rule, sizeof(m.egress[i].rule), "%s", name);
		m.egress[i].outcome = o;
		m.egress[i].reason = r;
		m.n_egress++;
	}
	m.egress[i].count++;
}

void mcpx_metrics_upstream_call(const char *upstream, const char *outcome, double seconds)
{
	unsigned char o = (unsigned char)lookup(upstream_outcomes, N_UPSTREAM_OUTCOMES,
	                                        outcome ? outcome : "other");
	const char *name =
	    upstream && upstream[0] && strlen(upstream) < sizeof(m.upstream[0].upstream) ? upstream
	                                                                                 : "other";
	size_t i;

	if (seconds >= 0)
		mcpx_prom_observe(&m.upstream_duration, seconds);
	for (i = 0; i < m.n_upstream; i++)
		if (m.upstream[i].outcome == o && strcmp(m.upstream[i].upstream, name) == 0)
			break;
	if (i == m.n_upstream) {
		/* The last slots are kept for "other", one per outcome. */
		if (m.n_upstream >= MAX_UPSTREAM_SERIES - N_UPSTREAM_OUTCOMES &&
		    strcmp(name, "other") != 0) {
			mcpx_metrics_upstream_call("other", outcome, -1);
			return;
		}
		if (m.n_upstream == MAX_UPSTREAM_SERIES)
			return;
		snprintf(m.upstream[i].upstream, sizeof(m.upstream[i].upstream), "%s", name);
		m.upstream[i].outcome = o;
		m.n_upstream++;
	}
	m.upstream[i].count++;
}

void mcpx_metrics_upstream_up(const char *upstream, int up)
{
	size_t i;

	for (i = 0; i < m.n_up; i++)
		if (strcmp(m.up[i].upstream, upstream) == 0)
			break;
	if (i == m.n_up) {
		if (m.n_up == MAX_UPSTREAM_UP || strlen(upstream) >= sizeof(m.up[0].upstream))
			return;
		snprintf(m.up[i].upstream, sizeof(m.up[i].upstream), "%s", upstream);
		m.n_up++;
	}
	m.up[i].up = up;
}

void mcpx_metrics_tool_call(const char *tool, const char *outcome)
{
	unsigned char o =
	    (unsigned char)lookup(tool_outcomes, N_TOOL_OUTCOMES, outcome ? outcome : "other");
	const char *name =
	    tool && tool[0] && strlen(tool) < sizeof(m.tools[0].tool) ? tool : "other";
	size_t i;

	for (i = 0; i < m.n_tools; i++)
		if (m.tools[i].outcome == o && strcmp(m.tools[i].tool, name) == 0)
			break;
	if (i == m.n_tools) {
		/* The last slots are kept for "other", one per outcome. */
		if (m.n_tools >= MAX_TOOL_SERIES - N_TOOL_OUTCOMES && strcmp(name, "other") != 0) {
			mcpx_metrics_tool_call("other", outcome);
			return;
		}
		if (m.n_tools == MAX_TOOL_SERIES)
			return;
		snprintf(m.tools[i].tool, sizeof(m.tools[i].tool), "%s", name);
		m.tools[i].outcome = o;
		m.n_tools++;
	}
	m.tools[i].count++;
}

void mcpx_metrics_profile_run(const char *profile, const char *outcome)
{
	const char *name = profile && profile[0] && strlen(profile) < sizeof(m.profiles[0].profile)
	                       ? profile
	                       : "none";
	size_t o = lookup(profile_outcomes, N_PROFILE_OUTCOMES, outcome ? outcome : "other");
	size_t i;

	for (i = 0; i < m.n_profiles; i++)
		if (strcmp(m.profiles[i].profile, name) == 0)
			break;
	if (i == m.n_profiles) {
		/* Profiles come and go with reloads; the last slot is "other". */
		if (m.n_profiles == MAX_PROFILE_SERIES - 1 && strcmp(name, "other") != 0) {
			mcpx_metrics_profile_run("other", outcome);
			return;
		}
		if (m.n_profiles == MAX_PROFILE_SERIES)
			return;
		snprintf(m.profiles[i].profile, sizeof(m.profiles[i].profile), "%s", name);
		m.n_profiles++;
	}
	m.profiles[i].count[o]++;
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
	m.closes[lookup(closes, N_CLOSES, reason ? reason : "other")]++;
}

void mcpx_metrics_tokenreview(const char *outcome)
{
	m.reviews[lookup(review_outcomes, N_REVIEW_OUTCOMES, outcome ? outcome : "other")]++;
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
	m.zygote_replaced[lookup(replace_reasons, N_REASONS, reason ? reason : "other")]++;
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

static void put_tools(struct mcpx_prom_buf *b)
{
	mcpx_prom_header(
	    b, "mcp_exec_tool_calls_total", "counter",
	    "tools/call requests (and mcpx.call calls of functions), by tool and outcome.");
	for (size_t i = 0; i < m.n_tools; i++) {
		mcpx_prom_put(b, "mcp_exec_tool_calls_total{tool=\"");
		mcpx_prom_label(b, m.tools[i].tool);
		mcpx_prom_put(b, "\",outcome=\"%s\"} %" PRIu64 "\n",
		              tool_outcomes[m.tools[i].outcome], m.tools[i].count);
	}
}

static void put_profiles(struct mcpx_prom_buf *b)
{
	mcpx_prom_header(b, "mcp_exec_profile_runs_total", "counter",
	                 "Runs by the caller's profile (\"none\": no profile applied) and outcome, "
	                 "refusals (busy, rate_limited) included.");
	for (size_t i = 0; i < m.n_profiles; i++)
		for (size_t o = 0; o < N_PROFILE_OUTCOMES; o++) {
			if (!m.profiles[i].count[o])
				continue;
			mcpx_prom_put(b, "mcp_exec_profile_runs_total{profile=\"");
			mcpx_prom_label(b, m.profiles[i].profile);
			mcpx_prom_put(b, "\",outcome=\"%s\"} %" PRIu64 "\n", profile_outcomes[o],
			              m.profiles[i].count[o]);
		}
}

static void put_egress(struct mcpx_prom_buf *b)
{
	mcpx_prom_header(
	    b, "mcp_exec_egress_requests_total", "counter",
	    "Requests of runs through the egress broker, by rule, outcome and the reason "
	    "of a denial.");
	for (size_t i = 0; i < m.n_egress; i++) {
		mcpx_prom_put(b, "mcp_exec_egress_requests_total{rule=\"");
		mcpx_prom_label(b, m.egress[i].rule);
		mcpx_prom_put(b, "\",outcome=\"%s\",reason=\"%s\"} %" PRIu64 "\n",
		              egress_outcomes[m.egress[i].outcome],
		              egress_reasons[m.egress[i].reason], m.egress[i].count);
	}
}

static void put_upstreams(struct mcpx_prom_buf *b)
{
	mcpx_prom_header(
	    b, "mcp_exec_upstream_calls_total", "counter",
	    "Calls of upstream MCP servers' tools (from runs and through the gateway), by "
	    "upstream and outcome.");
	for (size_t i = 0; i < m.n_upstream; i++) {
		mcpx_prom_put(b, "mcp_exec_upstream_calls_total{upstream=\"");
		mcpx_prom_label(b, m.upstream[i].upstream);
		mcpx_prom_put(b, "\",outcome=\"%s\"} %" PRIu64 "\n",
		              upstream_outcomes[m.upstream[i].outcome], m.upstream[i].count);
	}
	mcpx_prom_histogram(b, "mcp_exec_upstream_call_duration_seconds",
	                    "Time from a call of an upstream's tool to its answer.",
	                    &m.upstream_duration);
	mcpx_prom_header(
	    b, "mcp_exec_upstream_up", "gauge",
	    "1 when the upstream MCP server answered its last request, 0 when it is down.");
	for (size_t i = 0; i < m.n_up; i++) {
		if (m.up[i].up < 0)
			continue;
		mcpx_prom_put(b, "mcp_exec_upstream_up{upstream=\"");
		mcpx_prom_label(b, m.up[i].upstream);
		mcpx_prom_put(b, "\"} %d\n", m.up[i].up);
	}
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
	put_tools(&b);
	put_profiles(&b);
	put_egress(&b);
	put_upstreams(&b);
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
