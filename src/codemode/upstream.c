/*
 * upstream.c - the upstream MCP servers (upstream.h): one connection state
 * per upstream of the current policy, its tool list, and the calls of its
 * tools.
 *
 * A connection state (struct upstream) is shared by every caller of that
 * upstream whatever policy version it runs under; a call carries its own
 * version's entry (credential, limits), and is refused when a reload moved
 * the upstream to another URL meanwhile. States are reference-counted: the
 * module's list holds one, each call in flight another, so a reload can
 * drop an upstream while its calls finish.
 *
 * The protocol: each request is one POST (upstream_client.h) carrying the
 * session id and the negotiated protocol version. A 404 to a request with
 * a session id means the upstream forgot the session (it restarted): the
 * state reconnects and the call is sent again once. A transport failure
 * marks the upstream down; the retry timer reconnects it.
 *
 * This file, near the bottom of the client's files, holds the requests
 * every part sends; the module's life is upstreams.c's, the connection
 * state machine upstream_conn.c's, the calls upstream_call.c's, the tool
 * catalogue upstream_catalog.c's, a kept list upstream_list.c's
 * (upstream_internal.h).
 *
 * What it does not do: keep the run's budget (upstream_ops.c), list tools
 * to MCP clients (tool_upstream.c), or parse the policy
 * (policy_upstreams.c).
 */
#include "upstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "upstream_internal.h"

#define CANCEL_TIMEOUT_MS 5000

void mcpx_up_target(const struct upstream *up, const struct mcpx_upstream_conf *conf,
                    uint64_t timeout_ms, struct mcpx_upc_target *t)
{
	memset(t, 0, sizeof(*t));
	t->url = conf->url;
	t->allow = conf->allow;
	t->n_allow = conf->n_allow;
	t->cred_header = conf->has_credential ? conf->cred.header : NULL;
	t->cred_value = conf->has_credential ? conf->cred.value : NULL;
	t->session_id = up->session;
	t->protocol_version = up->version[0] ? up->version : NULL;
	t->ca_file = up->mod->ca_file;
	t->max_bytes = conf->max_response_bytes;
	t->timeout_ms = timeout_ms;
}

/* A JSON-RPC message: {"jsonrpc": "2.0", "id": id (unless < 0), "method",
 * "params"}; params is taken. */
char *mcpx_up_message(double id, const char *method, cJSON *params)
{
	cJSON *m = cJSON_CreateObject();
	char *text = NULL;

	if (m && cJSON_AddStringToObject(m, "jsonrpc", "2.0") &&
	    (id < 0 || cJSON_AddNumberToObject(m, "id", id)) &&
	    cJSON_AddStringToObject(m, "method", method) &&
	    (!params || cJSON_AddItemToObject(m, "params", params))) {
		params = NULL;
		/* The arguments' numbers as they came (json.h). */
		text = mcpx_json_print_exact(m);
	}
	cJSON_Delete(params);
	cJSON_Delete(m);
	return text;
}

static void notif_done(void *arg, struct mcpx_upc_result *res)
{
	struct notif *n = arg;

	(void)res;
	for (struct notif **pp = &n->mod->notifs; *pp; pp = &(*pp)->next) {
		if (*pp == n) {
			*pp = n->next;
			break;
		}
	}
	free(n);
}

/* Tells the upstream that request id is cancelled; nothing waits for the
 * answer. */
void mcpx_up_send_cancelled(struct upstream *up, const struct mcpx_upstream_conf *conf, double id,
                            const char *why)
{
	struct mcpx_upc_target t;
	cJSON *params = cJSON_CreateObject();
	struct notif *n = calloc(1, sizeof(*n));
	char *body;

	if (!params || !n || !cJSON_AddNumberToObject(params, "requestId", id) ||
	    !cJSON_AddStringToObject(params, "reason", why)) {
		cJSON_Delete(params);
		free(n);
		return;
	}
	body = mcpx_up_message(-1, "notifications/cancelled", params);
	mcpx_up_target(up, conf, CANCEL_TIMEOUT_MS, &t);
	n->mod = up->mod;
	if (!body || mcpx_upc_post(up->mod->http, &t, body, -1, notif_done, n, &n->req) < 0) {
		free(body);
		free(n);
		return;
	}
	free(body);
	n->next = up->mod->notifs;
	up->mod->notifs = n;
}
