/*
 * metrics_workspace.c - exec's workspace calls for /metrics (metrics.h): how
 * each call's restore and save ended, and how long calls waited for a
 * workspace another call was using.
 *
 * The store's own series (operations, latencies, bytes moved and held) are
 * metrics_store.c's; these count what a call saw, whatever the store did
 * underneath (a save refused on the host because the workspace is over its
 * cap never reaches the store). Labels come from fixed tables; nothing is
 * rendered before the first workspace call. Loop thread only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "buf.h"
#include "metrics.h"

static const char *const restores[] = {"restored", "new", "busy", "refused", "error"};
#define N_RESTORES (sizeof(restores) / sizeof(restores[0]))
static const char *const saves[] = {"saved",      "deleted", "too_large", "quota",
                                    "lease_lost", "error",   "not_run"};
#define N_SAVES (sizeof(saves) / sizeof(saves[0]))
static const double buckets[] = {0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60};
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

static struct {
	bool used;
	uint64_t restores[N_RESTORES + 1]; /* the last: anything else */
	uint64_t saves[N_SAVES + 1];
	uint64_t wait[N_BUCKETS + 1];
	uint64_t wait_count;
	double wait_sum;
} m;

static size_t find(const char *const *t, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (s && strcmp(t[i], s) == 0)
			return i;
	return n;
}

void mcpx_metrics_workspace_restore(const char *outcome, double lease_wait_s)
{
	size_t b = 0;

	m.used = true;
	m.restores[find(restores, N_RESTORES, outcome)]++;
	if (lease_wait_s < 0)
		return;
	while (b < N_BUCKETS && lease_wait_s > buckets[b])
		b++;
	m.wait[b]++;
	m.wait_count++;
	m.wait_sum += lease_wait_s;
}

void mcpx_metrics_workspace_save(const char *outcome)
{
	m.used = true;
	m.saves[find(saves, N_SAVES, outcome)]++;
}

int mcpx_metrics_workspace_render(struct mcpx_buf *b)
{
	uint64_t cum = 0;
	int rc = 0;

	if (!m.used)
		return 0;
	rc |= mcpx_buf_adds(b, "# HELP mcp_exec_workspace_restores_total exec calls with a "
	                       "workspace, by how taking and loading it ended.\n"
	                       "# TYPE mcp_exec_workspace_restores_total counter\n");
	for (size_t i = 0; i <= N_RESTORES; i++)
		rc |= mcpx_buf_addf(
		    b, "mcp_exec_workspace_restores_total{outcome=\"%s\"} %" PRIu64 "\n",
		    i < N_RESTORES ? restores[i] : "other", m.restores[i]);
	rc |= mcpx_buf_adds(b, "# HELP mcp_exec_workspace_saves_total exec calls with a workspace, "
	                       "by how saving the run's version ended.\n"
	                       "# TYPE mcp_exec_workspace_saves_total counter\n");
	for (size_t i = 0; i <= N_SAVES; i++)
		rc |=
		    mcpx_buf_addf(b, "mcp_exec_workspace_saves_total{outcome=\"%s\"} %" PRIu64 "\n",
		                  i < N_SAVES ? saves[i] : "other", m.saves[i]);
	rc |=
	    mcpx_buf_adds(b, "# HELP mcp_exec_workspace_lease_wait_seconds How long a call waited "
	                     "to take its workspace (another call had it).\n"
	                     "# TYPE mcp_exec_workspace_lease_wait_seconds histogram\n");
	for (size_t i = 0; i < N_BUCKETS; i++) {
		cum += m.wait[i];
		rc |= mcpx_buf_addf(
		    b, "mcp_exec_workspace_lease_wait_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
		    buckets[i], cum);
	}
	rc |= mcpx_buf_addf(b,
	                    "mcp_exec_workspace_lease_wait_seconds_bucket{le=\"+Inf\"} %" PRIu64
	                    "\nmcp_exec_workspace_lease_wait_seconds_sum %.6f\n"
	                    "mcp_exec_workspace_lease_wait_seconds_count %" PRIu64 "\n",
	                    m.wait_count, m.wait_sum, m.wait_count);
	return rc < 0 ? -ENOMEM : 0;
}
