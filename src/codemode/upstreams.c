/*
 * upstreams.c - the client of the policy's upstream MCP servers as one
 * module (upstream.h): made (every upstream of the current policy
 * connected), told whom to tell when a tool list changes, asked whether
 * every exposed upstream has answered once (what the first tools/list and
 * /readyz wait for), and freed (its calls cancelled without callbacks, its
 * connections and notifications ended).
 *
 * The top of the upstream client's files: it wires a connection's waiting
 * calls to the call relay (upstream_call.c), so the connection
 * (upstream_conn.c) calls nothing above it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "upstream_internal.h"

int mcpx_upstreams_new(struct mcpx_loop *loop, struct mcpx_curl_loop *http,
                       struct mcpx_policy_store *store, const char *ca_file,
                       struct mcpx_upstreams **out)
{
	struct mcpx_upstreams *u = calloc(1, sizeof(*u));

	*out = NULL;
	if (!u || (ca_file && ca_file[0] && !(u->ca_file = strdup(ca_file)))) {
		free(u);
		return -ENOMEM;
	}
	u->loop = loop;
	u->http = http;
	u->store = store;
	u->next_id = 1;
	/* What a connection does with the calls waiting for it. */
	u->send_waiting = mcpx_up_call_send;
	u->refuse_waiting = mcpx_up_call_refuse;
	mcpx_upstreams_reload(u);
	*out = u;
	return 0;
}

bool mcpx_upstreams_settled(struct mcpx_upstreams *u, const struct mcpx_policy *policy, char *why,
                            size_t len)
{
	for (size_t i = 0; u && policy && i < policy->n_upstreams; i++) {
		const struct mcpx_upstream_conf *conf = &policy->upstreams[i];
		const struct upstream *up = conf->expose ? mcpx_up_find(u, conf->name) : NULL;

		if (up && !up->settled) {
			if (why)
				snprintf(why, len, "waiting for upstream %s's first answer",
				         up->name);
			return false;
		}
	}
	return true;
}

void mcpx_upstreams_on_list_changed(struct mcpx_upstreams *u, void (*fn)(void *arg), void *arg)
{
	u->changed = fn;
	u->changed_arg = arg;
}

void mcpx_upstreams_free(struct mcpx_upstreams *u)
{
	if (!u)
		return;
	while (u->sent) {
		struct mcpx_upstream_call *c = u->sent;

		mcpx_upc_cancel(c->req);
		c->req = NULL;
		mcpx_up_call_free(c);
	}
	while (u->ups) {
		struct upstream *up = u->ups;

		while (up->waiting)
			mcpx_up_call_free(up->waiting);
		u->ups = up->next;
		up->gone = true;
		mcpx_up_unref(up);
	}
	while (u->notifs) {
		struct notif *n = u->notifs;

		u->notifs = n->next;
		mcpx_upc_cancel(n->req);
		free(n);
	}
	free(u->ca_file);
	free(u);
}
