/*
 * test_metrics.c - renders the exposition after a known series of events and
 * compares it line by line: counters, cumulative buckets, _sum and _count,
 * label clamping and escaping.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "metrics.h"

/* Compares line by line so a failure names the first line that differs. */
static void check_text(const char *got, const char *want)
{
	int line = 1;

	while (*got || *want) {
		size_t g = strcspn(got, "\n"), w = strcspn(want, "\n");
		if (g != w || memcmp(got, want, g) != 0) {
			fprintf(stderr, "line %d differs:\n  got:  %.*s\n  want: %.*s\n", line,
			        (int)g, got, (int)w, want);
			CHECK(!"rendered text matches");
			return;
		}
		got += g + (got[g] == '\n');
		want += w + (want[w] == '\n');
		line++;
	}
}

static const char empty_text[] =
    "# HELP mcp_exec_executions_total Executions finished, by outcome and the limit that "
    "was hit.\n"
    "# TYPE mcp_exec_executions_total counter\n"
    "# HELP mcp_exec_execution_duration_seconds Wall-clock time of executions in the "
    "sandbox.\n"
    "# TYPE mcp_exec_execution_duration_seconds histogram\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.005\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.01\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.025\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.05\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.1\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.25\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.5\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"1\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"2.5\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"5\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"10\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"30\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"60\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"120\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"300\"} 0\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"+Inf\"} 0\n"
    "mcp_exec_execution_duration_seconds_sum 0\n"
    "mcp_exec_execution_duration_seconds_count 0\n"
    "# HELP mcp_exec_queue_wait_seconds Time executions waited in the queue before "
    "starting.\n"
    "# TYPE mcp_exec_queue_wait_seconds histogram\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.005\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.01\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.025\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.05\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.1\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.25\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.5\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"1\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"2.5\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"5\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"10\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"30\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"60\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"120\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"300\"} 0\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"+Inf\"} 0\n"
    "mcp_exec_queue_wait_seconds_sum 0\n"
    "mcp_exec_queue_wait_seconds_count 0\n"
    "# HELP mcp_exec_queue_depth Executions waiting in the queue.\n"
    "# TYPE mcp_exec_queue_depth gauge\n"
    "mcp_exec_queue_depth 0\n"
    "# HELP mcp_exec_running Executions running now.\n"
    "# TYPE mcp_exec_running gauge\n"
    "mcp_exec_running 0\n"
    "# HELP mcp_exec_active_sessions Sessions seen recently on this replica.\n"
    "# TYPE mcp_exec_active_sessions gauge\n"
    "mcp_exec_active_sessions 0\n"
    "# HELP mcp_exec_sse_streams Open SSE streams.\n"
    "# TYPE mcp_exec_sse_streams gauge\n"
    "mcp_exec_sse_streams 0\n"
    "# HELP mcp_exec_ready 1 when the replica accepts work.\n"
    "# TYPE mcp_exec_ready gauge\n"
    "mcp_exec_ready 0\n"
    "# HELP mcp_exec_draining 1 while shutting down.\n"
    "# TYPE mcp_exec_draining gauge\n"
    "mcp_exec_draining 0\n"
    "# HELP mcp_exec_http_responses_total HTTP responses sent, by status code.\n"
    "# TYPE mcp_exec_http_responses_total counter\n"
    "# HELP mcp_exec_http_connections Open HTTP connections.\n"
    "# TYPE mcp_exec_http_connections gauge\n"
    "mcp_exec_http_connections 0\n"
    "# HELP mcp_exec_http_connections_closed_total HTTP connections the server closed early, "
    "by reason.\n"
    "# TYPE mcp_exec_http_connections_closed_total counter\n"
    "# HELP mcp_exec_tokenreviews_total ServiceAccount tokens that needed the API server, by "
    "outcome: admitted, refused, unavailable (TokenReviews sent); not_jwt, limited_address, "
    "limited_total, limited_in_flight (not sent).\n"
    "# TYPE mcp_exec_tokenreviews_total counter\n"
    "# HELP mcp_exec_tool_calls_total tools/call requests (and mcpx.call calls of functions), by "
    "tool and outcome.\n"
    "# TYPE mcp_exec_tool_calls_total counter\n"
    "# HELP mcp_exec_profile_runs_total Runs by the caller's profile (\"none\": no profile "
    "applied) and outcome, refusals (busy, rate_limited) included.\n"
    "# TYPE mcp_exec_profile_runs_total counter\n"
    "# HELP mcp_exec_egress_requests_total Requests of runs through the egress broker, by "
    "rule, outcome and the reason of a denial.\n"
    "# TYPE mcp_exec_egress_requests_total counter\n"
    "# HELP mcp_exec_upstream_calls_total Calls of upstream MCP servers' tools (from runs "
    "and through the gateway), by upstream and outcome.\n"
    "# TYPE mcp_exec_upstream_calls_total counter\n"
    "# HELP mcp_exec_upstream_call_duration_seconds Time from a call of an upstream's tool "
    "to its answer.\n"
    "# TYPE mcp_exec_upstream_call_duration_seconds histogram\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.005\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.01\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.025\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.05\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.1\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.25\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.5\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"1\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"2.5\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"5\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"10\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"30\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"60\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"120\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"300\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"+Inf\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_sum 0\n"
    "mcp_exec_upstream_call_duration_seconds_count 0\n"
    "# HELP mcp_exec_upstream_up 1 when the upstream MCP server answered its last request, 0 "
    "when it is down.\n"
    "# TYPE mcp_exec_upstream_up gauge\n"
    "# HELP mcp_exec_sandbox_layer 1 for each sandbox layer that is active, 0 for each that "
    "is not.\n"
    "# TYPE mcp_exec_sandbox_layer gauge\n"
    "# HELP mcp_exec_zygote_pid Pid of the fork server's current zygote; 0 when there is none.\n"
    "# TYPE mcp_exec_zygote_pid gauge\n"
    "mcp_exec_zygote_pid 0\n"
    "# HELP mcp_exec_zygote_replacements_total Zygotes replaced, by why: served their runs or "
    "time, or died.\n"
    "# TYPE mcp_exec_zygote_replacements_total counter\n"
    "mcp_exec_zygote_replacements_total{reason=\"runs\"} 0\n"
    "mcp_exec_zygote_replacements_total{reason=\"age\"} 0\n"
    "mcp_exec_zygote_replacements_total{reason=\"died\"} 0\n"
    "mcp_exec_zygote_replacements_total{reason=\"other\"} 0\n"
    "# HELP mcp_exec_build_info The version of this build.\n"
    "# TYPE mcp_exec_build_info gauge\n"
    "mcp_exec_build_info{version=\"0.1.0\"} 1\n"
    "# HELP mcp_exec_info Settings of this replica, as labels.\n"
    "# TYPE mcp_exec_info gauge\n";

static const char full_text[] =
    "# HELP mcp_exec_executions_total Executions finished, by outcome and the limit that "
    "was hit.\n"
    "# TYPE mcp_exec_executions_total counter\n"
    "mcp_exec_executions_total{outcome=\"ok\",limit=\"none\"} 2\n"
    "mcp_exec_executions_total{outcome=\"timeout\",limit=\"timeout\"} 1\n"
    "mcp_exec_executions_total{outcome=\"killed\",limit=\"memory\"} 1\n"
    "mcp_exec_executions_total{outcome=\"busy\",limit=\"none\"} 1\n"
    "mcp_exec_executions_total{outcome=\"other\",limit=\"none\"} 1\n"
    "mcp_exec_executions_total{outcome=\"other\",limit=\"other\"} 1\n"
    "# HELP mcp_exec_execution_duration_seconds Wall-clock time of executions in the "
    "sandbox.\n"
    "# TYPE mcp_exec_execution_duration_seconds histogram\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.005\"} 2\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.01\"} 2\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.025\"} 2\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.05\"} 2\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.1\"} 2\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.25\"} 2\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"0.5\"} 3\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"1\"} 3\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"2.5\"} 4\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"5\"} 4\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"10\"} 4\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"30\"} 5\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"60\"} 5\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"120\"} 5\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"300\"} 5\n"
    "mcp_exec_execution_duration_seconds_bucket{le=\"+Inf\"} 6\n"
    "mcp_exec_execution_duration_seconds_sum 432.50390625\n"
    "mcp_exec_execution_duration_seconds_count 6\n"
    "# HELP mcp_exec_queue_wait_seconds Time executions waited in the queue before "
    "starting.\n"
    "# TYPE mcp_exec_queue_wait_seconds histogram\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.005\"} 4\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.01\"} 4\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.025\"} 4\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.05\"} 4\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.1\"} 4\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.25\"} 5\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"0.5\"} 5\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"1\"} 5\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"2.5\"} 6\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"5\"} 6\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"10\"} 6\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"30\"} 6\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"60\"} 6\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"120\"} 6\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"300\"} 6\n"
    "mcp_exec_queue_wait_seconds_bucket{le=\"+Inf\"} 6\n"
    "mcp_exec_queue_wait_seconds_sum 1.75\n"
    "mcp_exec_queue_wait_seconds_count 6\n"
    "# HELP mcp_exec_queue_depth Executions waiting in the queue.\n"
    "# TYPE mcp_exec_queue_depth gauge\n"
    "mcp_exec_queue_depth 3\n"
    "# HELP mcp_exec_running Executions running now.\n"
    "# TYPE mcp_exec_running gauge\n"
    "mcp_exec_running 1\n"
    "# HELP mcp_exec_active_sessions Sessions seen recently on this replica.\n"
    "# TYPE mcp_exec_active_sessions gauge\n"
    "mcp_exec_active_sessions 12\n"
    "# HELP mcp_exec_sse_streams Open SSE streams.\n"
    "# TYPE mcp_exec_sse_streams gauge\n"
    "mcp_exec_sse_streams 4\n"
    "# HELP mcp_exec_ready 1 when the replica accepts work.\n"
    "# TYPE mcp_exec_ready gauge\n"
    "mcp_exec_ready 1\n"
    "# HELP mcp_exec_draining 1 while shutting down.\n"
    "# TYPE mcp_exec_draining gauge\n"
    "mcp_exec_draining 0\n"
    "# HELP mcp_exec_http_responses_total HTTP responses sent, by status code.\n"
    "# TYPE mcp_exec_http_responses_total counter\n"
    "mcp_exec_http_responses_total{code=\"200\"} 3\n"
    "mcp_exec_http_responses_total{code=\"404\"} 1\n"
    "mcp_exec_http_responses_total{code=\"599\"} 1\n"
    "mcp_exec_http_responses_total{code=\"other\"} 3\n"
    "# HELP mcp_exec_http_connections Open HTTP connections.\n"
    "# TYPE mcp_exec_http_connections gauge\n"
    "mcp_exec_http_connections 7\n"
    "# HELP mcp_exec_http_connections_closed_total HTTP connections the server closed early, "
    "by reason.\n"
    "# TYPE mcp_exec_http_connections_closed_total counter\n"
    "mcp_exec_http_connections_closed_total{reason=\"header_timeout\"} 2\n"
    "mcp_exec_http_connections_closed_total{reason=\"evicted\"} 1\n"
    "mcp_exec_http_connections_closed_total{reason=\"other\"} 2\n"
    "# HELP mcp_exec_tokenreviews_total ServiceAccount tokens that needed the API server, by "
    "outcome: admitted, refused, unavailable (TokenReviews sent); not_jwt, limited_address, "
    "limited_total, limited_in_flight (not sent).\n"
    "# TYPE mcp_exec_tokenreviews_total counter\n"
    "mcp_exec_tokenreviews_total{outcome=\"admitted\"} 1\n"
    "mcp_exec_tokenreviews_total{outcome=\"not_jwt\"} 2\n"
    "mcp_exec_tokenreviews_total{outcome=\"other\"} 1\n"
    "# HELP mcp_exec_tool_calls_total tools/call requests (and mcpx.call calls of functions), by "
    "tool and outcome.\n"
    "# TYPE mcp_exec_tool_calls_total counter\n"
    "mcp_exec_tool_calls_total{tool=\"exec\",outcome=\"ok\"} 2\n"
    "mcp_exec_tool_calls_total{tool=\"get_invoice\",outcome=\"invalid_arguments\"} 1\n"
    "mcp_exec_tool_calls_total{tool=\"get_invoice\",outcome=\"other\"} 1\n"
    "mcp_exec_tool_calls_total{tool=\"other\",outcome=\"raised\"} 1\n"
    "# HELP mcp_exec_profile_runs_total Runs by the caller's profile (\"none\": no profile "
    "applied) and outcome, refusals (busy, rate_limited) included.\n"
    "# TYPE mcp_exec_profile_runs_total counter\n"
    "mcp_exec_profile_runs_total{profile=\"billing\",outcome=\"ok\"} 2\n"
    "mcp_exec_profile_runs_total{profile=\"billing\",outcome=\"rate_limited\"} 1\n"
    "mcp_exec_profile_runs_total{profile=\"none\",outcome=\"busy\"} 1\n"
    "# HELP mcp_exec_egress_requests_total Requests of runs through the egress broker, by "
    "rule, outcome and the reason of a denial.\n"
    "# TYPE mcp_exec_egress_requests_total counter\n"
    "mcp_exec_egress_requests_total{rule=\"api\",outcome=\"ok\",reason=\"none\"} 2\n"
    "mcp_exec_egress_requests_total{rule=\"none\",outcome=\"denied\",reason=\"no_rule\"} 1\n"
    "mcp_exec_egress_requests_total{rule=\"api\",outcome=\"denied\",reason=\"other\"} 1\n"
    "mcp_exec_egress_requests_total{rule=\"api\",outcome=\"other\",reason=\"none\"} 1\n"
    "# HELP mcp_exec_upstream_calls_total Calls of upstream MCP servers' tools (from runs "
    "and through the gateway), by upstream and outcome.\n"
    "# TYPE mcp_exec_upstream_calls_total counter\n"
    "mcp_exec_upstream_calls_total{upstream=\"fx\",outcome=\"ok\"} 1\n"
    "mcp_exec_upstream_calls_total{upstream=\"fx\",outcome=\"denied\"} 1\n"
    "mcp_exec_upstream_calls_total{upstream=\"fx\",outcome=\"other\"} 1\n"
    "# HELP mcp_exec_upstream_call_duration_seconds Time from a call of an upstream's tool "
    "to its answer.\n"
    "# TYPE mcp_exec_upstream_call_duration_seconds histogram\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.005\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.01\"} 0\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.025\"} 1\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.05\"} 1\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.1\"} 1\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.25\"} 1\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"0.5\"} 1\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"1\"} 1\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"2.5\"} 2\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"5\"} 2\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"10\"} 2\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"30\"} 2\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"60\"} 2\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"120\"} 2\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"300\"} 2\n"
    "mcp_exec_upstream_call_duration_seconds_bucket{le=\"+Inf\"} 2\n"
    "mcp_exec_upstream_call_duration_seconds_sum 1.515625\n"
    "mcp_exec_upstream_call_duration_seconds_count 2\n"
    "# HELP mcp_exec_upstream_up 1 when the upstream MCP server answered its last request, 0 "
    "when it is down.\n"
    "# TYPE mcp_exec_upstream_up gauge\n"
    "mcp_exec_upstream_up{upstream=\"fx\"} 1\n"
    "mcp_exec_upstream_up{upstream=\"dead\"} 0\n"
    "# HELP mcp_exec_sandbox_layer 1 for each sandbox layer that is active, 0 for each that "
    "is not.\n"
    "# TYPE mcp_exec_sandbox_layer gauge\n"
    "mcp_exec_sandbox_layer{layer=\"seccomp\"} 1\n"
    "mcp_exec_sandbox_layer{layer=\"landlock\"} 0\n"
    "mcp_exec_sandbox_layer{layer=\"we\\\"ird\\\\\\n\"} 1\n"
    "# HELP mcp_exec_zygote_pid Pid of the fork server's current zygote; 0 when there is none.\n"
    "# TYPE mcp_exec_zygote_pid gauge\n"
    "mcp_exec_zygote_pid 4242\n"
    "# HELP mcp_exec_zygote_replacements_total Zygotes replaced, by why: served their runs or "
    "time, or died.\n"
    "# TYPE mcp_exec_zygote_replacements_total counter\n"
    "mcp_exec_zygote_replacements_total{reason=\"runs\"} 2\n"
    "mcp_exec_zygote_replacements_total{reason=\"age\"} 0\n"
    "mcp_exec_zygote_replacements_total{reason=\"died\"} 1\n"
    "mcp_exec_zygote_replacements_total{reason=\"other\"} 1\n"
    "# HELP mcp_exec_build_info The version of this build.\n"
    "# TYPE mcp_exec_build_info gauge\n"
    "mcp_exec_build_info{version=\"0.1.0\"} 1\n"
    "# HELP mcp_exec_info Settings of this replica, as labels.\n"
    "# TYPE mcp_exec_info gauge\n"
    "mcp_exec_info{warm_mode=\"on\",bad_key=\"a\\nb \\\"q\\\" \\\\\",_lives=\"x\"} 1\n";

int main(void)
{
	struct mcpx_metrics_gauges g = {0};
	size_t len = 0;
	char *text;

	/* Before any event: every family is declared, gauges read zero. */
	text = mcpx_metrics_render(NULL, &len);
	CHECK(text != NULL);
	if (text) {
		CHECK_INT(len, strlen(text));
		check_text(text, empty_text);
	}
	free(text);

	/* Durations and waits chosen to be exact in binary, so _sum is exact. */
	mcpx_metrics_execution("ok", NULL, 0.00390625, 0);
	mcpx_metrics_execution("ok", NULL, 0.5, 1.5);
	mcpx_metrics_execution("timeout", "timeout", 30, 0.25);
	mcpx_metrics_execution("weird-outcome", "gpu", 400, 0);
	mcpx_metrics_execution(NULL, NULL, 2, 0);
	/* A busy rejection counts but is not observed in the histograms. */
	mcpx_metrics_execution("busy", NULL, 99, 99);
	/* Nonsense durations count as zero. */
	mcpx_metrics_execution("killed", "memory", -1, NAN);

	mcpx_metrics_http_response(200);
	mcpx_metrics_http_response(200);
	mcpx_metrics_http_response(404);
	mcpx_metrics_http_response(200);
	mcpx_metrics_http_response(599);
	mcpx_metrics_http_response(0);
	mcpx_metrics_http_response(600);
	mcpx_metrics_http_response(-1);

	mcpx_metrics_tool_call("exec", "ok");
	mcpx_metrics_tool_call("get_invoice", "invalid_arguments");
	mcpx_metrics_tool_call("exec", "ok");
	mcpx_metrics_tool_call("get_invoice", "made-up");
	mcpx_metrics_tool_call(NULL, "raised");
	/* Runs by profile: a missing profile is "none"; outcomes as given. */
	mcpx_metrics_profile_run("billing", "ok");
	mcpx_metrics_profile_run("billing", "rate_limited");
	mcpx_metrics_profile_run(NULL, "busy");
	mcpx_metrics_profile_run("billing", "ok");

	mcpx_metrics_egress("api", "ok", NULL);
	mcpx_metrics_egress(NULL, "denied", "no_rule");
	mcpx_metrics_egress("api", "ok", NULL);
	mcpx_metrics_egress("api", "denied", "made-up");
	mcpx_metrics_egress("api", "strange", NULL);
	mcpx_metrics_upstream_call("fx", "ok", 0.015625);
	mcpx_metrics_upstream_call("fx", "denied", -1); /* never sent: no latency */
	mcpx_metrics_upstream_call("fx", "weird", 1.5);
	mcpx_metrics_upstream_up("fx", 1);
	mcpx_metrics_upstream_up("dead", 0);
	mcpx_metrics_upstream_up("gone", 1);
	mcpx_metrics_upstream_up("gone", -1); /* left the policy: not shown */
	mcpx_metrics_http_connections(7);
	mcpx_metrics_http_conn_closed("header_timeout");
	mcpx_metrics_http_conn_closed("evicted");
	mcpx_metrics_http_conn_closed("header_timeout");
	mcpx_metrics_http_conn_closed("made-up");
	mcpx_metrics_http_conn_closed(NULL);
	mcpx_metrics_tokenreview("not_jwt");
	mcpx_metrics_tokenreview("admitted");
	mcpx_metrics_tokenreview("not_jwt");
	mcpx_metrics_tokenreview("made-up");

	mcpx_metrics_set_layer("seccomp", 0);
	mcpx_metrics_set_layer("landlock", 0);
	mcpx_metrics_set_layer("seccomp", 1);
	mcpx_metrics_set_layer("we\"ird\\\n", 7);
	mcpx_metrics_set_layer("", 1);
	mcpx_metrics_set_layer(NULL, 1);

	mcpx_metrics_set_info("warm_mode", "off");
	mcpx_metrics_set_info("bad-key", "a\nb \"q\" \\");
	mcpx_metrics_set_info("warm_mode", "on");
	mcpx_metrics_set_info("9lives", "x");
	mcpx_metrics_set_info("", "ignored");
	mcpx_metrics_set_info("k", NULL);

	mcpx_metrics_set_zygote(17);
	mcpx_metrics_set_zygote(4242);
	mcpx_metrics_zygote_replaced("runs");
	mcpx_metrics_zygote_replaced("died");
	mcpx_metrics_zygote_replaced("runs");
	mcpx_metrics_zygote_replaced("whatever");

	g.queue_depth = 3;
	g.running = 1;
	g.active_sessions = 12;
	g.sse_streams = 4;
	g.ready = 1;
	g.draining = 0;
	text = mcpx_metrics_render(&g, &len);
	CHECK(text != NULL);
	if (text) {
		CHECK_INT(len, strlen(text));
		check_text(text, full_text);
	}
	free(text);

	/* The layer and info tables are bounded: flooding them neither grows
	 * the output without limit nor disturbs the existing series. */
	for (int i = 0; i < 100; i++) {
		char name[32];
		snprintf(name, sizeof(name), "layer%d", i);
		mcpx_metrics_set_layer(name, 1);
		snprintf(name, sizeof(name), "key%d", i);
		mcpx_metrics_set_info(name, "v");
	}
	text = mcpx_metrics_render(&g, &len);
	CHECK(text != NULL);
	if (text) {
		CHECK(strstr(text, "mcp_exec_sandbox_layer{layer=\"seccomp\"} 1\n") != NULL);
		CHECK(strstr(text, "layer12\"") != NULL);
		CHECK(strstr(text, "layer13\"") == NULL);
		CHECK(strstr(text, "warm_mode=\"on\"") != NULL);
		CHECK(len < 16384);
	}
	free(text);

	/* Egress rule names come from a policy that can change: the series
	 * are bounded, the overflow counted as rule "other". */
	for (int i = 0; i < 2000; i++) {
		char name[32];
		snprintf(name, sizeof(name), "rule%d", i);
		mcpx_metrics_egress(name, "ok", NULL);
	}
	text = mcpx_metrics_render(&g, &len);
	CHECK(text != NULL);
	if (text) {
		CHECK(strstr(text, "{rule=\"api\",outcome=\"ok\",reason=\"none\"} 2\n") != NULL);
		CHECK(strstr(text, "{rule=\"rule0\",outcome=\"ok\",reason=\"none\"} 1\n") != NULL);
		CHECK(strstr(text, "{rule=\"other\",outcome=\"ok\",reason=\"none\"}") != NULL);
		CHECK(strstr(text, "rule1999\"") == NULL);
		CHECK(len < 128 * 1024);
	}
	free(text);

	/* Function names, too: bounded series, the overflow as "other". */
	for (int i = 0; i < 2000; i++) {
		char name[32];
		snprintf(name, sizeof(name), "fn%d", i);
		mcpx_metrics_tool_call(name, "ok");
	}
	text = mcpx_metrics_render(&g, &len);
	CHECK(text != NULL);
	if (text) {
		CHECK(strstr(text, "{tool=\"exec\",outcome=\"ok\"} 2\n") != NULL);
		CHECK(strstr(text, "{tool=\"fn0\",outcome=\"ok\"} 1\n") != NULL);
		CHECK(strstr(text, "{tool=\"other\",outcome=\"ok\"}") != NULL);
		CHECK(strstr(text, "fn1999\"") == NULL);
	}
	free(text);
	CHECK_DONE();
}
