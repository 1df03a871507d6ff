/*
 * upstream_conn.c - an upstream's connection state machine: initialize (the
 * version negotiated, the session id), notifications/initialized, tools/list
 * page by page, ready (waiting calls sent); down on a failure (waiting calls
 * refused, a retry with a backoff doubling from 1 s to 60 s); the GET stream
 * on which the upstream announces tool list changes; the states a policy
 * reload keeps, adds or drops.
 *
 * It does not relay calls (upstream_call.c) nor list tools to anyone
 * (upstream_catalog.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "metrics.h"
#include "upstream_internal.h"

/* The version this client asks for, and those it accepts in return. */
#define PROTOCOL_VERSION "2025-06-18"
static const char *const versions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

#define LIST_PAGES_MAX 50
#define BACKOFF_MAX_S 60

static void stop_listening(struct upstream *up)
{
	mcpx_timer_cancel(&up->listen_timer);
	mcpx_timer_cancel(&up->changed_timer);
	mcpx_upc_cancel(up->listen);
	up->listen = NULL;
}

void mcpx_up_unref(struct upstream *up)
{
	if (!up || --up->refs > 0)
		return;
	stop_listening(up);
	mcpx_timer_cancel(&up->retry);
	mcpx_timer_cancel(&up->settle_timer);
	mcpx_upc_cancel(up->req);
	mcpx_up_catalog_free(up->tools);
	mcpx_up_catalog_free(up->listing);
	mcpx_policy_unref(up->policy);
	free(up);
}

static void set_state(struct upstream *up, enum up_state s)
{
	up->state = s;
	if (!up->gone)
		mcpx_metrics_upstream_up(up->name, s == UP_READY ? 1 : 0);
}

static void retry_cb(struct mcpx_timer *t)
{
	struct upstream *up = t->arg;

	mcpx_up_connect(up);
}

/* Every call waiting for up is refused with "upstream <name> <what><why>",
 * through the module's hook (upstream_call.c's, wired by upstreams.c): the
 * connection calls nothing above it. */
static void refuse_waiting(struct upstream *up, const char *what, const char *why)
{
	char msg[MCPX_UPSTREAM_MSG_MAX];

	snprintf(msg, sizeof(msg), "upstream %s %s%s", up->name, what, why);
	while (up->waiting)
		up->mod->refuse_waiting(up->waiting, msg);
}

/* The upstream did not answer: waiting calls are refused, and a retry is
 * scheduled with a backoff. */
void mcpx_up_go_down(struct upstream *up, const char *why)
{
	bool was_ready = up->state == UP_READY;

	mcpx_upc_cancel(up->req);
	up->req = NULL;
	stop_listening(up);
	up->step = STEP_NONE;
	snprintf(up->down_why, sizeof(up->down_why), "%s", why);
	set_state(up, UP_DOWN);
	if (!up->down_logged || was_ready)
		mcpx_warn("upstream %s (%s) is down: %s; retrying in %u s", up->name, up->conf->url,
		          why, up->backoff_s ? up->backoff_s : BACKOFF_MIN_S);
	up->down_logged = true;
	up->refs++; /* the waiting calls' ends may drop the last other reference */
	refuse_waiting(up, "is down: ", up->down_why);
	if (!up->gone)
		mcpx_up_settle(up);
	if (!up->gone) {
		up->backoff_s = up->backoff_s ? up->backoff_s * 2 : BACKOFF_MIN_S;
		if (up->backoff_s > BACKOFF_MAX_S)
			up->backoff_s = BACKOFF_MAX_S;
		up->retry.fn = retry_cb;
		up->retry.arg = up;
		mcpx_timer_start(up->mod->loop, &up->retry, (uint64_t)up->backoff_s * 1000000u);
	}
	mcpx_up_unref(up);
}

static void listen_start(struct upstream *up);

static void listen_timer_cb(struct mcpx_timer *t)
{
	listen_start(t->arg);
}

static void changed_timer_cb(struct mcpx_timer *t)
{
	mcpx_up_tools_changed(t->arg);
}

/* Called from inside curl's write callback, where curl takes no new
 * transfer and the stream must not be freed: the refresh waits for the
 * next loop iteration. */
static void listen_message(void *arg, const cJSON *msg)
{
	struct upstream *up = arg;
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");

	if (cJSON_IsString(method) &&
	    strcmp(method->valuestring, "notifications/tools/list_changed") == 0) {
		up->changed_timer.fn = changed_timer_cb;
		up->changed_timer.arg = up;
		mcpx_timer_start(up->mod->loop, &up->changed_timer, 0);
	}
}

/* The stream ended: opened again after a pause while the upstream is up,
 * unless the upstream does not offer one (405). */
static void listen_done(void *arg, struct mcpx_upc_result *res)
{
	struct upstream *up = arg;

	up->listen = NULL;
	if (res->kind == MCPX_UPC_HTTP && res->status == 405) {
		up->no_listen = true;
		return;
	}
	if (up->state != UP_READY || up->gone)
		return;
	/* It went away: found now rather than by the next call. */
	if (res->kind == MCPX_UPC_DOWN) {
		mcpx_up_go_down(up, res->msg);
		return;
	}
	up->listen_timer.fn = listen_timer_cb;
	up->listen_timer.arg = up;
	mcpx_timer_start(up->mod->loop, &up->listen_timer, (uint64_t)BACKOFF_MIN_S * 1000000u);
}

/* The GET stream on which the upstream announces changes outside answers,
 * when it says it announces them. */
static void listen_start(struct upstream *up)
{
	struct mcpx_upc_target t;

	if (up->listen || up->no_listen || !up->announces || up->state != UP_READY || up->gone)
		return;
	mcpx_up_target(up, up->conf, 0, &t);
	if (mcpx_upc_listen(up->mod->http, &t, listen_message, listen_done, up, &up->listen) < 0)
		up->listen = NULL;
}

static void became_ready(struct upstream *up)
{
	bool first = up->down_logged || up->state != UP_READY;

	if (first)
		mcpx_info("upstream %s: connected (protocol %s, %zu tools)", up->name, up->version,
		          up->tools->n);
	up->down_logged = false;
	up->backoff_s = 0;
	set_state(up, UP_READY);
	listen_start(up);
	up->refs++;
	while (up->waiting) {
		struct mcpx_upstream_call *c = up->waiting;

		up->waiting = c->next;
		up->mod->send_waiting(c);
	}
	/* The gateway's list, or exec's description (tool counts), may have
	 * changed; the listener compares before it tells anyone. */
	up->settled = true;
	mcpx_timer_cancel(&up->settle_timer);
	if (up->mod->changed)
		up->mod->changed(up->mod->changed_arg);
	mcpx_up_unref(up);
}

static void list_page(struct upstream *up, const char *cursor);

static void list_done(void *arg, struct mcpx_upc_result *res)
{
	struct upstream *up = arg;
	const cJSON *result = cJSON_GetObjectItemCaseSensitive(res->response, "result");
	const cJSON *tools = cJSON_GetObjectItemCaseSensitive(result, "tools");
	const cJSON *next = cJSON_GetObjectItemCaseSensitive(result, "nextCursor");
	const cJSON *t;

	up->req = NULL;
	if (res->kind == MCPX_UPC_SESSION_GONE) {
		mcpx_up_connect(up);
		return;
	}
	if (res->kind != MCPX_UPC_OK || !cJSON_IsArray(tools)) {
		mcpx_up_go_down(up, res->kind != MCPX_UPC_OK ? res->msg
		                                             : "tools/list gave no tool list");
		return;
	}
	cJSON_ArrayForEach(t, tools)
	{
		/* Kept as text within the caps (upstream_catalog.c). */
		if (mcpx_up_catalog_add(up->listing, t, up->conf) == -ENOMEM) {
			mcpx_up_go_down(up, "out of memory");
			return;
		}
	}
	if (!up->listing->truncated && cJSON_IsString(next) && next->valuestring[0] &&
	    ++up->pages < LIST_PAGES_MAX) {
		list_page(up, next->valuestring);
		return;
	}
	if (up->listing->truncated)
		mcpx_warn("upstream %s: its tool list passes max_tools (%u) or max_tools_bytes "
		          "(%zu): the first %zu tools (%zu bytes) are kept, the rest left out",
		          up->name, up->conf->max_tools, up->conf->max_tools_bytes, up->listing->n,
		          up->listing->bytes);
	mcpx_up_catalog_free(up->tools);
	up->tools = up->listing;
	up->listing = NULL;
	up->step = STEP_NONE;
	if (res->list_changed || up->refresh) {
		up->refresh = false;
		list_page(up, NULL);
	}
	became_ready(up);
}

static void list_page(struct upstream *up, const char *cursor)
{
	struct mcpx_upc_target t;
	cJSON *params = NULL;
	char *body;

	if (!cursor) {
		mcpx_up_catalog_free(up->listing);
		up->listing = mcpx_up_catalog_new();
		up->pages = 0;
	}
	if (cursor && (!(params = cJSON_CreateObject()) ||
	               !cJSON_AddStringToObject(params, "cursor", cursor))) {
		cJSON_Delete(params);
		mcpx_up_go_down(up, "out of memory");
		return;
	}
	up->step = STEP_LIST;
	body = mcpx_up_message(up->mod->next_id, "tools/list", params);
	mcpx_up_target(up, up->conf, (uint64_t)up->conf->timeout_s * 1000u, &t);
	if (!up->listing || !body ||
	    mcpx_upc_post(up->mod->http, &t, body, up->mod->next_id++, list_done, up, &up->req) < 0)
		mcpx_up_go_down(up, "out of memory");
	free(body);
}

static void initialized_done(void *arg, struct mcpx_upc_result *res)
{
	struct upstream *up = arg;

	up->req = NULL;
	if (res->kind != MCPX_UPC_OK) {
		mcpx_up_go_down(up, res->msg);
		return;
	}
	list_page(up, NULL);
}

static bool version_known(const char *v)
{
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (strcmp(v, versions[i]) == 0)
			return true;
	return false;
}

static void initialize_done(void *arg, struct mcpx_upc_result *res)
{
	struct upstream *up = arg;
	const cJSON *result = cJSON_GetObjectItemCaseSensitive(res->response, "result");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(result, "protocolVersion");
	const cJSON *info = cJSON_GetObjectItemCaseSensitive(result, "serverInfo");
	const cJSON *sname = cJSON_GetObjectItemCaseSensitive(info, "name");
	const cJSON *caps = cJSON_GetObjectItemCaseSensitive(result, "capabilities");
	const cJSON *tcaps = cJSON_GetObjectItemCaseSensitive(caps, "tools");
	struct mcpx_upc_target t;
	char *body;

	up->req = NULL;
	if (res->kind != MCPX_UPC_OK) {
		mcpx_up_go_down(up, res->msg);
		return;
	}
	if (!cJSON_IsObject(result) || !cJSON_IsString(v)) {
		mcpx_up_go_down(up, "initialize gave no protocolVersion");
		return;
	}
	if (!version_known(v->valuestring)) {
		mcpx_up_go_down(up, "the upstream speaks a protocol version this server does not");
		return;
	}
	snprintf(up->version, sizeof(up->version), "%s", v->valuestring);
	snprintf(up->session, sizeof(up->session), "%s", res->session_id);
	snprintf(up->server_name, sizeof(up->server_name), "%s",
	         cJSON_IsString(sname) ? sname->valuestring : "");
	up->announces = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tcaps, "listChanged"));
	up->step = STEP_INITIALIZED;
	body = mcpx_up_message(-1, "notifications/initialized", NULL);
	mcpx_up_target(up, up->conf, (uint64_t)up->conf->timeout_s * 1000u, &t);
	if (!body || mcpx_upc_post(up->mod->http, &t, body, -1, initialized_done, up, &up->req) < 0)
		mcpx_up_go_down(up, "out of memory");
	free(body);
}

/* (Re)connects: a new session, a new tool list. Calls that come meanwhile
 * wait. */
void mcpx_up_connect(struct upstream *up)
{
	struct mcpx_upc_target t;
	cJSON *params = cJSON_CreateObject(), *info = cJSON_CreateObject();
	char *body;

	mcpx_timer_cancel(&up->retry);
	mcpx_upc_cancel(up->req);
	up->req = NULL;
	stop_listening(up);
	up->no_listen = false;
	up->session[0] = up->version[0] = '\0';
	up->refresh = false;
	set_state(up, UP_CONNECTING);
	up->step = STEP_INITIALIZE;
	if (!params || !info ||
	    !cJSON_AddStringToObject(params, "protocolVersion", PROTOCOL_VERSION) ||
	    !cJSON_AddItemToObject(params, "capabilities", cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(info, "name", MCPX_NAME) ||
	    !cJSON_AddStringToObject(info, "version", MCPX_VERSION) ||
	    !cJSON_AddItemToObject(params, "clientInfo", info)) {
		cJSON_Delete(params);
		cJSON_Delete(info);
		mcpx_up_go_down(up, "out of memory");
		return;
	}
	body = mcpx_up_message(up->mod->next_id, "initialize", params);
	mcpx_up_target(up, up->conf, (uint64_t)up->conf->timeout_s * 1000u, &t);
	if (!body || mcpx_upc_post(up->mod->http, &t, body, up->mod->next_id++, initialize_done, up,
	                           &up->req) < 0)
		mcpx_up_go_down(up, "out of memory");
	free(body);
}

/* The upstream said its tools changed: list them again (the old list
 * serves until the new one is in). */
void mcpx_up_tools_changed(struct upstream *up)
{
	if (up->state != UP_READY)
		return;
	if (up->step == STEP_LIST) {
		up->refresh = true;
		return;
	}
	list_page(up, NULL);
}

void mcpx_up_settle(struct upstream *up)
{
	if (up->settled)
		return;
	up->settled = true;
	mcpx_timer_cancel(&up->settle_timer);
	/* What waited for it (a first tools/list, /readyz) is told. */
	if (up->mod->changed)
		up->mod->changed(up->mod->changed_arg);
}

static void settle_timer_cb(struct mcpx_timer *t)
{
	struct upstream *up = t->arg;

	mcpx_warn("upstream %s: no answer within its timeout_s (%u s) of being added; the tool "
	          "list goes on without it",
	          up->name, up->conf->timeout_s);
	mcpx_up_settle(up);
}

static struct upstream *up_new(struct mcpx_upstreams *u, struct mcpx_policy *p,
                               const struct mcpx_upstream_conf *conf)
{
	struct upstream *up = calloc(1, sizeof(*up));

	if (!up)
		return NULL;
	up->mod = u;
	up->refs = 1;
	snprintf(up->name, sizeof(up->name), "%s", conf->name);
	up->policy = mcpx_policy_ref(p);
	up->conf = conf;
	up->next = u->ups;
	u->ups = up;
	/* The first tools/list waits for its first answer, at most its
	 * timeout_s (issue 34 item 7). */
	up->settle_timer.fn = settle_timer_cb;
	up->settle_timer.arg = up;
	mcpx_timer_start(u->loop, &up->settle_timer, (uint64_t)conf->timeout_s * 1000000u);
	mcpx_up_connect(up);
	return up;
}

struct upstream *mcpx_up_find(const struct mcpx_upstreams *u, const char *name)
{
	for (struct upstream *up = u->ups; up; up = up->next)
		if (strcmp(up->name, name) == 0)
			return up;
	return NULL;
}

/* Drops up from the list: its connection ends; calls in flight keep it. */
static void up_drop(struct upstream *up)
{
	for (struct upstream **pp = &up->mod->ups; *pp; pp = &(*pp)->next) {
		if (*pp == up) {
			*pp = up->next;
			break;
		}
	}
	mcpx_metrics_upstream_up(up->name, -1);
	up->gone = true;
	mcpx_timer_cancel(&up->retry);
	mcpx_timer_cancel(&up->settle_timer);
	mcpx_upc_cancel(up->req);
	up->req = NULL;
	stop_listening(up);
	up->refs++;
	refuse_waiting(up, "was removed or changed by a policy reload", "");
	/* The list's reference and the guard's above: the guard keeps refs at
	 * 2 or more until here, so the list's is dropped as a plain decrement
	 * and the guard's through up_unref, which frees when it was the last
	 * (one call, not two: after a free nothing may read up). */
	up->refs--;
	mcpx_up_unref(up);
}

/* The same connection serves both entries: same URL, ranges and credential. */
static bool same_endpoint(const struct mcpx_upstream_conf *a, const struct mcpx_upstream_conf *b)
{
	if (strcmp(a->url, b->url) != 0 || a->n_allow != b->n_allow ||
	    memcmp(a->allow, b->allow, a->n_allow * sizeof(a->allow[0])) != 0 ||
	    a->has_credential != b->has_credential)
		return false;
	return !a->has_credential || (strcmp(a->cred.header, b->cred.header) == 0 &&
	                              a->cred.value_len == b->cred.value_len &&
	                              memcmp(a->cred.value, b->cred.value, a->cred.value_len) == 0);
}

void mcpx_upstreams_reload(struct mcpx_upstreams *u)
{
	struct mcpx_policy *p = mcpx_policy_store_current(u->store);
	struct upstream *up, *next;

	for (up = u->ups; up; up = next) {
		const struct mcpx_upstream_conf *conf =
		    mcpx_policy_upstream(p, up->name, strlen(up->name));

		next = up->next;
		if (!conf || !same_endpoint(conf, up->conf)) {
			up_drop(up);
			continue;
		}
		/* Same endpoint: the connection and its list stay; limits,
		 * globs and expose come from the new entry. */
		mcpx_policy_ref(p);
		mcpx_policy_unref(up->policy);
		up->policy = p;
		up->conf = conf;
	}
	for (size_t i = 0; p && i < p->n_upstreams; i++)
		if (!mcpx_up_find(u, p->upstreams[i].name))
			up_new(u, p, &p->upstreams[i]);
}
