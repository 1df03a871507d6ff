/*
 * metrics_calls.c - the series of calls for /metrics (metrics.h): tool
 * calls by tool and outcome, runs by the caller's profile and outcome,
 * egress requests by rule, outcome and reason, upstream MCP servers' calls
 * (by upstream and outcome, with their duration) and whether each is up.
 *
 * Tool, profile, rule and upstream names come from the policy file, and
 * reloads can bring new ones: each table has a fixed number of series and
 * keeps its last slots for "other", so no policy and no client can grow
 * them. State is unsynchronised, like metrics.c's: only the loop thread
 * reports. metrics.c renders these series in their place among the rest.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "prom_text.h"

static const char *const profile_outcomes[] = {"ok",        "error_exit",   "timeout", "killed",
                                               "cancelled", "failed",       "expired", "shutdown",
                                               "busy",      "rate_limited", "other"};
#define N_PROFILE_OUTCOMES (sizeof(profile_outcomes) / sizeof(profile_outcomes[0]))
#define MAX_PROFILE_SERIES 128
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

static struct {
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
} m;

void mcpx_metrics_egress(const char *rule, const char *outcome, const char *reason)
{
	unsigned char o = (unsigned char)mcpx_prom_lookup(egress_outcomes, N_EGRESS_OUTCOMES,
	                                                  outcome ? outcome : "other");
	unsigned char r =
	    (unsigned char)(reason ? mcpx_prom_lookup(egress_reasons, N_EGRESS_REASONS, reason)
	                           : 0);
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
	unsigned char o = (unsigned char)mcpx_prom_lookup(upstream_outcomes, N_UPSTREAM_OUTCOMES,
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
	unsigned char o = (unsigned char)mcpx_prom_lookup(tool_outcomes, N_TOOL_OUTCOMES,
	                                                  outcome ? outcome : "other");
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
	size_t o =
	    mcpx_prom_lookup(profile_outcomes, N_PROFILE_OUTCOMES, outcome ? outcome : "other");
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

void mcpx_metrics_calls_render(struct mcpx_prom_buf *b)
{
	put_tools(b);
	put_profiles(b);
	put_egress(b);
	put_upstreams(b);
}
