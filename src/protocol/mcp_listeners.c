/*
 * mcp_listeners.c - the streams that take notifications/tools/list_changed:
 * a transport's session-wide stream (told once its session is initialized)
 * and 2026-07-28 subscriptions (held open, ended by the client's
 * cancellation, their sink's end or the server's completion result; the
 * subscriptions/listen request that opens one is mcp_stateless.c's).
 *
 * It does not know when the tool list changes; the caller of
 * mcpx_core_tools_changed does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "mcp_core.h"
#include "utf8.h"

/* ---- listeners: notifications/tools/list_changed ----------------------- */

struct listener *mcpx_mcp_listener_add(struct mcpx_core *core, struct mcpx_sink *sink)
{
	struct listener *l = calloc(1, sizeof(*l));

	if (l) {
		l->sink = sink;
		l->next = core->listeners;
		core->listeners = l;
	}
	return l;
}

void mcpx_mcp_listener_unlink(struct mcpx_core *core, struct listener *l)
{
	for (struct listener **pp = &core->listeners; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			return;
		}
	}
}

void mcpx_mcp_listener_free(struct listener *l)
{
	cJSON_Delete(l->sub_id);
	free(l);
}

int mcpx_core_listen(struct mcpx_core *core, struct mcpx_sink *sink,
                     const struct mcpx_session *session)
{
	struct listener *l = mcpx_mcp_listener_add(core, sink);

	if (!l)
		return -ENOMEM;
	l->session = session;
	l->tools = true;
	return 0;
}

int mcpx_core_listen_key(struct mcpx_core *core, struct mcpx_sink *sink, const char *key)
{
	int rc = mcpx_core_listen(core, sink, NULL);

	if (rc == 0)
		mcpx_utf8_copy_trunc(core->listeners->key, sizeof(core->listeners->key), key);
	return rc;
}

struct listener *mcpx_mcp_subscription_find(struct mcpx_core *core, const char *key,
                                            const cJSON *id)
{
	for (struct listener *l = core->listeners; l; l = l->next)
		if (l->sub_id && strcmp(l->key, key) == 0 && mcpx_jsonrpc_id_equal(l->sub_id, id))
			return l;
	return NULL;
}

/* _meta naming the subscription, as every message on its stream carries
 * (basic/patterns/subscriptions, "Receiving Notifications"). */
cJSON *mcpx_mcp_subscription_meta(const struct listener *l)
{
	cJSON *meta = cJSON_CreateObject();

	if (!mcpx_json_add_owned(meta, META_SUBSCRIPTION_ID, cJSON_Duplicate(l->sub_id, true))) {
		cJSON_Delete(meta);
		return NULL;
	}
	return meta;
}

/* Ends a subscription. graceful: with its completion result ("the server
 * SHOULD respond to the original subscriptions/listen request with a
 * completion result before closing the stream"); otherwise it stays
 * unanswered, and the sink hears so when tell_sink. */
void mcpx_mcp_subscription_end(struct mcpx_core *core, struct listener *l, bool graceful,
                               bool tell_sink)
{
	struct mcpx_sink *sink = l->sink;
	cJSON *res = NULL;

	mcpx_mcp_listener_unlink(core, l);
	if (graceful && !sink->gone) {
		res = cJSON_CreateObject();
		if (!mcpx_json_add_owned(res, "_meta", mcpx_mcp_subscription_meta(l)) ||
		    !mcpx_mcp_decorate_stateless(core, res)) {
			cJSON_Delete(res);
			res = NULL;
		}
	}
	if (res) {
		mcpx_mcp_emit_response(sink, NULL, mcpx_jsonrpc_result(l->sub_id, res));
	} else {
		if (sink->pending > 0)
			sink->pending--;
		if (tell_sink && !sink->gone && sink->unanswered)
			sink->unanswered(sink);
	}
	mcpx_mcp_listener_free(l);
}

void mcpx_core_end_subscriptions(struct mcpx_core *core)
{
	struct listener *l = core->listeners, *next;

	for (; l; l = next) {
		next = l->next;
		if (l->sub_id)
			mcpx_mcp_subscription_end(core, l, true, true);
	}
}

bool mcpx_core_tools_can_change(const struct mcpx_core *core)
{
	return core->tools_list_changed;
}

void mcpx_core_tools_changed(struct mcpx_core *core)
{
	if (!core->tools_list_changed)
		return; /* listChanged false was declared: nobody may hear it */
	for (struct listener *l = core->listeners; l; l = l->next) {
		cJSON *params = NULL;

		/* "The server MUST NOT send notification types the client has
		 * not explicitly requested"; a session hears of it once it is
		 * initialized. */
		if (l->sink->gone || !l->tools || (l->session && !l->session->initialized))
			continue;
		if (l->sub_id) {
			params = cJSON_CreateObject();
			if (!mcpx_json_add_owned(params, "_meta", mcpx_mcp_subscription_meta(l))) {
				cJSON_Delete(params);
				continue;
			}
		}
		mcpx_mcp_emit(l->sink,
		              mcpx_jsonrpc_notification("notifications/tools/list_changed", params),
		              false);
	}
}

/* Drops sink's listeners (all of them when sink is NULL), answering
 * nothing. */
void mcpx_mcp_drop_listeners(struct mcpx_core *core, const struct mcpx_sink *sink)
{
	struct listener *l = core->listeners, *next;

	for (; l; l = next) {
		next = l->next;
		if (sink && l->sink != sink)
			continue;
		mcpx_mcp_listener_unlink(core, l);
		if (l->sub_id && l->sink->pending > 0)
			l->sink->pending--;
		mcpx_mcp_listener_free(l);
	}
}
