/*
 * cmd_probe.c - `mcp-exec-client probe`: is the server alive and ready?
 *
 * GETs /healthz and /readyz next to the MCP endpoint, prints each status
 * with the server's one-line answer, and exits 0 only when /readyz says
 * 200. Exec probes in Kubernetes and humans use it; it needs no token and
 * sends none, since the operations endpoints are open.
 */
#include <stdio.h>

#include "commands.h"
#include "http_client.h"

/* A health check that takes longer than this is a failed one. */
#define PROBE_TIMEOUT_S 5L

/* Returns the HTTP status, or a negative errno after printing why. */
static long probe_one(struct hc *http, const char *base, const char *path, long timeout_s)
{
	struct hc_reply rep = {0};
	struct hc_req req = {0};
	struct mcpx_err err = {{0}};
	char url[2100];
	long status;
	int rc;

	snprintf(url, sizeof(url), "%s%s", base, path);
	req.method = "GET";
	req.url = url;
	req.timeout_s = timeout_s;
	rc = hc_request(http, &req, &rep, &err);
	status = rep.status;
	if (rc < 0) {
		fprintf(stderr, "mcp-exec-client: %s\n", err.msg);
		hc_reply_free(&rep);
		return rc;
	}
	printf("%s: %ld %s\n", path + 1, status, rep.text);
	hc_reply_free(&rep);
	return status;
}

int cmd_probe(const struct cli_opts *o)
{
	struct mcpx_err err = {{0}};
	struct hc *http = NULL;
	long timeout_s = o->timeout_s ? (long)o->timeout_s : PROBE_TIMEOUT_S;
	char base[2048];
	long live, ready;
	int rc;

	cli_base_url(o->url, base, sizeof(base));
	rc = hc_new(&http, NULL, &err);
	if (rc < 0) {
		fprintf(stderr, "mcp-exec-client: %s\n", err.msg);
		return 1;
	}
	live = probe_one(http, base, "/healthz", timeout_s);
	/* An unreachable server has nothing more to say. */
	ready = live < 0 ? live : probe_one(http, base, "/readyz", timeout_s);
	hc_free(http);
	if (live == 200 && ready == 200) {
		printf("ready\n");
		return 0;
	}
	printf("%s\n", live == 200 ? "alive, not ready" : "not alive");
	return 1;
}
