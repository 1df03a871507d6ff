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
 * What it does not do: keep the run's budget (upstream_ops.c), list tools
 * to MCP clients (tool_upstream.c), or parse the policy
 * (policy_upstreams.c).
 */
#include "upstream.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "buf.h"
#include "caller.h"
#include "config.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "policy.h"
#include "upstream_client.h"

/* The version this client asks for, and those it accepts in return. */
#define PROTOCOL_VERSION "2025-06-18"
static const char *const versions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

#define LIST_PAGES_MAX 50
#define BACKOFF_MIN_S 1
#define BACKOFF_MAX_S 60
#define CANCEL_TIMEOUT_MS 5000

enum up_state { UP_CONNECTING, UP_READY, UP_DOWN };
enum up_step { STEP_NONE, STEP_INITIALIZE, STEP_INITIALIZED, STEP_LIST };

struct notif;

struct upstream {
	struct mcpx_upstreams *mod;
	struct upstream *next;
	unsigned refs;
	bool gone; /* no longer in the module's list */
	char name[MCPX_UPSTREAM_NAME_MAX + 1];
	struct mcpx_policy *policy; /* the version conf lives in */
	const struct mcpx_upstream_conf *conf;
	enum up_state state;
	enum up_step step;
	struct mcpx_upc_req *req; /* the connection's request in flight */
	char session[MCPX_UPC_SESSION_MAX];
	char version[16];
	char server_name[128];
	bool announces;              /* capabilities.tools.listChanged */
	bool no_listen;              /* the GET stream was refused (405): not again */
	struct mcpx_upc_req *listen; /* the GET stream, or NULL */
	struct mcpx_timer listen_timer;
	struct mcpx_timer changed_timer; /* a list_changed seen on the stream */
	cJSON *tools;                    /* what tools/list gave, or NULL before */
	cJSON *listing;                  /* pages gathered so far */
	unsigned pages;
	bool refresh; /* list again once the current listing ends */
	struct mcpx_timer retry;
	unsigned backoff_s;
	char down_why[256];
	bool down_logged;
	struct mcpx_upstream_call *waiting; /* calls waiting for UP_READY */
};

struct mcpx_upstream_call {
	struct mcpx_upstreams *mod;
	struct mcpx_upstream_call *next; /* in up->waiting, or the module's sent list */
	struct upstream *up;             /* ref */
	struct mcpx_policy *policy;      /* ref: conf lives in it */
	const struct mcpx_upstream_conf *conf;
	char tool[129];
	cJSON *args; /* the arguments */
	double id;
	bool retried, sent;
	uint64_t started_us, deadline_us;
	struct mcpx_upc_req *req;
	mcpx_upstream_done_fn done;
	void *arg;
	char run_id[33], request_id[129], caller[MCPX_CALLER_MAX];
	char profile[65]; /* the caller's profile's name, "" for none */
	bool gateway;
	uint64_t bytes_in, bytes_out;
};

/* A notification sent and forgotten (notifications/cancelled). */
struct notif {
	struct notif *next;
	struct mcpx_upstreams *mod;
	struct mcpx_upc_req *req;
};

struct mcpx_upstreams {
	struct mcpx_loop *loop;
	struct mcpx_broker *broker;
	struct mcpx_policy_store *store;
	char *ca_file;
	struct upstream *ups;
	struct mcpx_upstream_call *sent; /* calls with a request in flight */
	struct notif *notifs;
	double next_id;
	void (*changed)(void *arg);
	void *changed_arg;
};

static void connect_up(struct upstream *up);
static void send_call(struct mcpx_upstream_call *c);

/* ---- requests ---------------------------------------------------------- */

static void target_of(const struct upstream *up, const struct mcpx_upstream_conf *conf,
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
static char *message(double id, const char *method, cJSON *params)
{
	cJSON *m = cJSON_CreateObject();
	char *text = NULL;

	if (m && cJSON_AddStringToObject(m, "jsonrpc", "2.0") &&
	    (id < 0 || cJSON_AddNumberToObject(m, "id", id)) &&
	    cJSON_AddStringToObject(m, "method", method) &&
	    (!params || cJSON_AddItemToObject(m, "params", params))) {
		params = NULL;
		text = cJSON_PrintUnformatted(m);
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
static void send_cancelled(struct upstream *up, const struct mcpx_upstream_conf *conf, double id,
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
	body = message(-1, "notifications/cancelled", params);
	target_of(up, conf, CANCEL_TIMEOUT_MS, &t);
	n->mod = up->mod;
	if (!body || mcpx_upc_post(up->mod->broker, &t, body, -1, notif_done, n, &n->req) < 0) {
		free(body);
		free(n);
		return;
	}
	free(body);
	n->next = up->mod->notifs;
	up->mod->notifs = n;
}

/* ---- calls: the end ---------------------------------------------------- */

static const char *outcome_of(const struct mcpx_upstream_answer *a)
{
	if (a->kind == MCPX_UPSTREAM_DENIED)
		return "denied";
	if (a->kind == MCPX_UPSTREAM_TOOL_ERROR)
		return "tool_error";
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a->result, "isError")) ? "tool_error"
	                                                                            : "ok";
}

static void audit_call(const struct mcpx_upstream_call *c, const char *status, bool allowed,
                       const char *reason)
{
	struct mcpx_audit_upstream a = {0};
	uint64_t ms = (mcpx_now_us() - c->started_us) / 1000u;

	a.run_id = c->gateway ? NULL : c->run_id;
	a.request_id = c->request_id;
	a.caller = c->caller;
	a.profile = c->profile[0] ? c->profile : NULL;
	a.upstream = c->conf->name;
	a.tool = c->tool;
	a.status = status;
	a.bytes_out = c->bytes_out;
	a.bytes_in = c->bytes_in;
	a.ms = ms;
	a.allowed = allowed;
	a.reason = reason;
	mcpx_audit_upstream_log(&a);
	mcpx_metrics_upstream_call(c->conf->name, allowed ? status : "denied",
	                           c->sent ? (double)ms / 1000.0 : -1);
}

static void stop_listening(struct upstream *up)
{
	mcpx_timer_cancel(&up->listen_timer);
	mcpx_timer_cancel(&up->changed_timer);
	mcpx_upc_cancel(up->listen);
	up->listen = NULL;
}

static void up_unref(struct upstream *up)
{
	if (!up || --up->refs > 0)
		return;
	stop_listening(up);
	mcpx_timer_cancel(&up->retry);
	mcpx_upc_cancel(up->req);
	cJSON_Delete(up->tools);
	cJSON_Delete(up->listing);
	mcpx_policy_unref(up->policy);
	free(up);
}

static void unlink_call(struct mcpx_upstream_call *c)
{
	struct mcpx_upstream_call **lists[2] = {&c->mod->sent, &c->up->waiting};

	for (int i = 0; i < 2; i++) {
		for (struct mcpx_upstream_call **pp = lists[i]; *pp; pp = &(*pp)->next) {
			if (*pp == c) {
				*pp = c->next;
				return;
			}
		}
	}
}

static void call_free(struct mcpx_upstream_call *c)
{
	unlink_call(c);
	mcpx_upc_cancel(c->req);
	up_unref(c->up);
	mcpx_policy_unref(c->policy);
	cJSON_Delete(c->args);
	free(c);
}

/* The call's one answer: audit, metrics, the callback, then it is freed. */
static void finish(struct mcpx_upstream_call *c, struct mcpx_upstream_answer *a, const char *status)
{
	const char *outcome = status ? status : outcome_of(a);

	audit_call(c, outcome, a->kind != MCPX_UPSTREAM_DENIED, a->reason);
	c->done(c->arg, a);
	call_free(c);
}

static void finish_error(struct mcpx_upstream_call *c, enum mcpx_upstream_kind kind,
                         const char *reason, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void finish_error(struct mcpx_upstream_call *c, enum mcpx_upstream_kind kind,
                         const char *reason, const char *status, const char *fmt, ...)
{
	struct mcpx_upstream_answer a = {.kind = kind, .reason = reason};
	char msg[MCPX_UPSTREAM_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	a.message = msg;
	finish(c, &a, status);
}

/* ---- connection states ------------------------------------------------- */

static void set_state(struct upstream *up, enum up_state s)
{
	up->state = s;
	if (!up->gone)
		mcpx_metrics_upstream_up(up->name, s == UP_READY ? 1 : 0);
}

static void retry_cb(struct mcpx_timer *t)
{
	struct upstream *up = t->arg;

	connect_up(up);
}

/* The upstream did not answer: waiting calls are refused, and a retry is
 * scheduled with a backoff. */
static void go_down(struct upstream *up, const char *why)
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
	while (up->waiting)
		finish_error(up->waiting, MCPX_UPSTREAM_DENIED, "upstream_down", NULL,
		             "upstream %s is down: %s", up->name, up->down_why);
	if (!up->gone) {
		up->backoff_s = up->backoff_s ? up->backoff_s * 2 : BACKOFF_MIN_S;
		if (up->backoff_s > BACKOFF_MAX_S)
			up->backoff_s = BACKOFF_MAX_S;
		up->retry.fn = retry_cb;
		up->retry.arg = up;
		mcpx_timer_start(up->mod->loop, &up->retry, (uint64_t)up->backoff_s * 1000000u);
	}
	up_unref(up);
}

static void tools_changed(struct upstream *up);
static void listen_start(struct upstream *up);

static void listen_timer_cb(struct mcpx_timer *t)
{
	listen_start(t->arg);
}

static void changed_timer_cb(struct mcpx_timer *t)
{
	tools_changed(t->arg);
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
		go_down(up, res->msg);
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
	target_of(up, up->conf, 0, &t);
	if (mcpx_upc_listen(up->mod->broker, &t, listen_message, listen_done, up, &up->listen) < 0)
		up->listen = NULL;
}

static void became_ready(struct upstream *up)
{
	bool first = up->down_logged || up->state != UP_READY;

	if (first)
		mcpx_info("upstream %s: connected (protocol %s, %d tools)", up->name, up->version,
		          cJSON_GetArraySize(up->tools));
	up->down_logged = false;
	up->backoff_s = 0;
	set_state(up, UP_READY);
	listen_start(up);
	up->refs++;
	while (up->waiting) {
		struct mcpx_upstream_call *c = up->waiting;

		up->waiting = c->next;
		send_call(c);
	}
	/* The gateway's list, or exec's description (tool counts), may have
	 * changed; the listener compares before it tells anyone. */
	if (up->mod->changed)
		up->mod->changed(up->mod->changed_arg);
	up_unref(up);
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
		connect_up(up);
		return;
	}
	if (res->kind != MCPX_UPC_OK || !cJSON_IsArray(tools)) {
		go_down(up, res->kind != MCPX_UPC_OK ? res->msg : "tools/list gave no tool list");
		return;
	}
	cJSON_ArrayForEach(t, tools)
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");

		/* A tool without a name, or with one that cannot be called by
		 * "<upstream>.<tool>", is left out. */
		if (!cJSON_IsObject(t) || !cJSON_IsString(name) || !name->valuestring[0] ||
		    strlen(name->valuestring) > 128)
			continue;
		cJSON_AddItemToArray(up->listing, cJSON_Duplicate(t, true));
	}
	if (cJSON_IsString(next) && next->valuestring[0] && ++up->pages < LIST_PAGES_MAX) {
		list_page(up, next->valuestring);
		return;
	}
	cJSON_Delete(up->tools);
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
		cJSON_Delete(up->listing);
		up->listing = cJSON_CreateArray();
		up->pages = 0;
	}
	if (cursor && (!(params = cJSON_CreateObject()) ||
	               !cJSON_AddStringToObject(params, "cursor", cursor))) {
		cJSON_Delete(params);
		go_down(up, "out of memory");
		return;
	}
	up->step = STEP_LIST;
	body = message(up->mod->next_id, "tools/list", params);
	target_of(up, up->conf, (uint64_t)up->conf->timeout_s * 1000u, &t);
	if (!up->listing || !body ||
	    mcpx_upc_post(up->mod->broker, &t, body, up->mod->next_id++, list_done, up, &up->req) <
	        0)
		go_down(up, "out of memory");
	free(body);
}

static void initialized_done(void *arg, struct mcpx_upc_result *res)
{
	struct upstream *up = arg;

	up->req = NULL;
	if (res->kind != MCPX_UPC_OK) {
		go_down(up, res->msg);
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
		go_down(up, res->msg);
		return;
	}
	if (!cJSON_IsObject(result) || !cJSON_IsString(v)) {
		go_down(up, "initialize gave no protocolVersion");
		return;
	}
	if (!version_known(v->valuestring)) {
		go_down(up, "the upstream speaks a protocol version this server does not");
		return;
	}
	snprintf(up->version, sizeof(up->version), "%s", v->valuestring);
	snprintf(up->session, sizeof(up->session), "%s", res->session_id);
	snprintf(up->server_name, sizeof(up->server_name), "%s",
	         cJSON_IsString(sname) ? sname->valuestring : "");
	up->announces = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tcaps, "listChanged"));
	up->step = STEP_INITIALIZED;
	body = message(-1, "notifications/initialized", NULL);
	target_of(up, up->conf, (uint64_t)up->conf->timeout_s * 1000u, &t);
	if (!body ||
	    mcpx_upc_post(up->mod->broker, &t, body, -1, initialized_done, up, &up->req) < 0)
		go_down(up, "out of memory");
	free(body);
}

/* (Re)connects: a new session, a new tool list. Calls that come meanwhile
 * wait. */
static void connect_up(struct upstream *up)
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
		go_down(up, "out of memory");
		return;
	}
	body = message(up->mod->next_id, "initialize", params);
	target_of(up, up->conf, (uint64_t)up->conf->timeout_s * 1000u, &t);
	if (!body || mcpx_upc_post(up->mod->broker, &t, body, up->mod->next_id++, initialize_done,
	                           up, &up->req) < 0)
		go_down(up, "out of memory");
	free(body);
}

/* The upstream said its tools changed: list them again (the old list
 * serves until the new one is in). */
static void tools_changed(struct upstream *up)
{
	if (up->state != UP_READY)
		return;
	if (up->step == STEP_LIST) {
		up->refresh = true;
		return;
	}
	list_page(up, NULL);
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
	connect_up(up);
	return up;
}

static struct upstream *find_up(const struct mcpx_upstreams *u, const char *name)
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
	mcpx_upc_cancel(up->req);
	up->req = NULL;
	stop_listening(up);
	up->refs++;
	while (up->waiting)
		finish_error(up->waiting, MCPX_UPSTREAM_DENIED, "upstream_down", NULL,
		             "upstream %s was removed or changed by a policy reload", up->name);
	/* The list's reference and the guard's above: the guard keeps refs at
	 * 2 or more until here, so the list's is dropped as a plain decrement
	 * and the guard's through up_unref, which frees when it was the last
	 * (one call, not two: after a free nothing may read up). */
	up->refs--;
	up_unref(up);
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
		if (!find_up(u, p->upstreams[i].name))
			up_new(u, p, &p->upstreams[i]);
}

/* ---- calls ----------------------------------------------------------- */

static void call_done(void *arg, struct mcpx_upc_result *res)
{
	struct mcpx_upstream_call *c = arg;
	struct upstream *up = c->up;
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(res->response, "error");
	const cJSON *emsg = cJSON_GetObjectItemCaseSensitive(error, "message");
	struct mcpx_upstream_answer a = {.kind = MCPX_UPSTREAM_RESULT};

	c->req = NULL;
	c->bytes_in += res->bytes_in;
	c->bytes_out += res->bytes_out;
	if (res->list_changed)
		tools_changed(up);
	switch (res->kind) {
	case MCPX_UPC_OK:
		break;
	case MCPX_UPC_SESSION_GONE:
		if (!c->retried && !up->gone) {
			/* The upstream restarted: a new session, then once more. */
			c->retried = true;
			unlink_call(c);
			c->next = up->waiting;
			up->waiting = c;
			if (up->state != UP_CONNECTING)
				connect_up(up);
			return;
		}
		finish_error(c, MCPX_UPSTREAM_DENIED, "upstream_down", NULL, "upstream %s: %s",
		             up->name, res->msg);
		return;
	case MCPX_UPC_TIMEOUT:
		send_cancelled(up, c->conf, c->id, "timed out");
		finish_error(c, MCPX_UPSTREAM_TOOL_ERROR, NULL, "timeout",
		             "%s.%s: no answer in %u s (timeout_s of upstream %s, or the run's own "
		             "deadline)",
		             up->name, c->tool, c->conf->timeout_s, up->name);
		return;
	case MCPX_UPC_TOO_LARGE:
		finish_error(c, MCPX_UPSTREAM_DENIED, "too_large", NULL,
		             "%s.%s: the answer is larger than %zu bytes (max_response_bytes)",
		             up->name, c->tool, c->conf->max_response_bytes);
		return;
	case MCPX_UPC_PROTOCOL:
		finish_error(c, MCPX_UPSTREAM_TOOL_ERROR, NULL, "failed", "%s.%s: %s", up->name,
		             c->tool, res->msg);
		return;
	default: /* down, refused address, HTTP error */
		if (!up->gone && up->state == UP_READY && res->kind != MCPX_UPC_HTTP)
			go_down(up, res->msg);
		finish_error(c, MCPX_UPSTREAM_DENIED, "upstream_down", NULL, "upstream %s: %s",
		             up->name, res->msg);
		return;
	}
	if (cJSON_IsObject(error)) {
		finish_error(c, MCPX_UPSTREAM_TOOL_ERROR, NULL, "tool_error", "%s.%s: %s", up->name,
		             c->tool, cJSON_IsString(emsg) ? emsg->valuestring : "JSON-RPC error");
		return;
	}
	a.result = cJSON_DetachItemFromObjectCaseSensitive(res->response, "result");
	if (!cJSON_IsObject(a.result)) {
		cJSON_Delete(a.result);
		finish_error(c, MCPX_UPSTREAM_TOOL_ERROR, NULL, "failed",
		             "%s.%s: the answer has no result", up->name, c->tool);
		return;
	}
	finish(c, &a, NULL);
	cJSON_Delete(a.result);
}

static void send_call(struct mcpx_upstream_call *c)
{
	struct mcpx_upc_target t;
	uint64_t now = mcpx_now_us();
	char *body = NULL;
	cJSON *params;

	if (c->deadline_us <= now) {
		finish_error(c, MCPX_UPSTREAM_TOOL_ERROR, NULL, "timeout",
		             "%s.%s: no time left for the call", c->up->name, c->tool);
		return;
	}
	c->id = c->mod->next_id++;
	params = cJSON_CreateObject();
	if (params && cJSON_AddStringToObject(params, "name", c->tool) &&
	    cJSON_AddItemReferenceToObject(params, "arguments", c->args))
		body = message(c->id, "tools/call", params);
	else
		cJSON_Delete(params);
	target_of(c->up, c->conf, (c->deadline_us - now + 999u) / 1000u, &t);
	c->sent = true;
	if (!body || mcpx_upc_post(c->mod->broker, &t, body, c->id, call_done, c, &c->req) < 0) {
		free(body);
		finish_error(c, MCPX_UPSTREAM_TOOL_ERROR, NULL, "failed", "out of memory");
		return;
	}
	free(body);
	c->next = c->mod->sent;
	c->mod->sent = c;
}

const struct mcpx_upstream_conf *mcpx_upstream_of(const struct mcpx_policy *policy,
                                                  const char *name, const char **tool)
{
	const char *dot = strchr(name, '.');
	const struct mcpx_upstream_conf *conf;

	if (!dot || !dot[1])
		return NULL;
	conf = mcpx_policy_upstream(policy, name, (size_t)(dot - name));
	if (conf && tool)
		*tool = dot + 1;
	return conf;
}

static bool tool_listed(const struct upstream *up, const char *tool)
{
	const cJSON *t;

	cJSON_ArrayForEach(t, up->tools)
	{
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(t, "name");

		if (cJSON_IsString(n) && strcmp(n->valuestring, tool) == 0)
			return true;
	}
	return false;
}

/* The name of who's profile under the policy its call is judged by, for
 * the audit line; "" for none. */
static const char *profile_of(const struct mcpx_upstream_caller *who)
{
	const struct mcpx_profile *pr = mcpx_policy_profile_for(who->policy, who->caller);

	return pr ? pr->name : "";
}

static void copy_caller(struct mcpx_upstream_call *c, const struct mcpx_upstream_caller *who)
{
	snprintf(c->run_id, sizeof(c->run_id), "%s", who->run_id ? who->run_id : "");
	snprintf(c->request_id, sizeof(c->request_id), "%s",
	         who->request_id ? who->request_id : "");
	snprintf(c->caller, sizeof(c->caller), "%s", who->caller ? who->caller : "");
	snprintf(c->profile, sizeof(c->profile), "%s", profile_of(who));
	c->gateway = who->run_id == NULL;
}

void mcpx_upstream_audit_denied(const struct mcpx_upstream_caller *who, const char *upstream,
                                const char *tool, const char *reason)
{
	struct mcpx_audit_upstream a = {0};

	a.run_id = who->run_id;
	a.request_id = who->request_id;
	a.caller = who->caller;
	a.profile = profile_of(who)[0] ? profile_of(who) : NULL;
	a.upstream = upstream;
	a.tool = tool;
	a.allowed = false;
	a.reason = reason;
	mcpx_audit_upstream_log(&a);
	mcpx_metrics_upstream_call(upstream, "denied", -1);
}

/* Only names a caller could have meant are echoed back. */
static const char *shown(const char *s)
{
	for (const char *c = s; *c; c++)
		if (*c < 0x21 || *c > 0x7e)
			return "(unprintable)";
	return strlen(s) > 128 ? "(a long name)" : s;
}

/* The checks before anything is sent: NULL when c may go, else the
 * reason with msg set. */
static const char *refusal(const struct mcpx_upstream_caller *who,
                           const struct mcpx_upstream_conf *conf, const struct upstream *up,
                           const char *tool, char *msg, size_t msglen)
{
	if (who->grant ? !mcpx_egress_grant_has_upstream(who->grant, conf) : !conf->expose) {
		snprintf(msg, msglen, "upstream %s is not one this %s may call", conf->name,
		         who->grant ? "run" : "client");
		return "not_allowed";
	}
	if (!mcpx_upstream_tool_allowed(conf, tool)) {
		snprintf(msg, msglen, "%s.%s is not allowed by the policy (tools of upstream %s)",
		         conf->name, shown(tool), conf->name);
		return "not_allowed";
	}
	if (!up || strcmp(up->conf->url, conf->url) != 0) {
		snprintf(msg, msglen, "upstream %s was changed by a policy reload; call again",
		         conf->name);
		return "upstream_down";
	}
	if (up->state == UP_DOWN) {
		snprintf(msg, msglen, "upstream %s is down: %s", conf->name, up->down_why);
		return "upstream_down";
	}
	if (up->tools && !tool_listed(up, tool)) {
		snprintf(msg, msglen, "upstream %s has no tool named %s", conf->name, shown(tool));
		return "no_tool";
	}
	if (who->deadline_us && who->deadline_us <= mcpx_now_us()) {
		snprintf(msg, msglen, "the calling run has no time left");
		return "deadline";
	}
	return NULL;
}

int mcpx_upstream_call_start(struct mcpx_upstreams *u, const struct mcpx_upstream_caller *who,
                             const char *name, const cJSON *args, mcpx_upstream_done_fn done,
                             void *arg, struct mcpx_upstream_call **out, const char **reason,
                             char *msg, size_t msglen)
{
	const char *tool = NULL;
	const struct mcpx_upstream_conf *conf = mcpx_upstream_of(who->policy, name, &tool);
	struct upstream *up;
	struct mcpx_upstream_call *c;
	uint64_t deadline;

	*out = NULL;
	if (!conf)
		return -ENOENT;
	up = find_up(u, conf->name);
	*reason = refusal(who, conf, up, tool, msg, msglen);
	if (*reason) {
		mcpx_upstream_audit_denied(who, conf->name, tool, *reason);
		return -EACCES;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->args = args ? cJSON_Duplicate(args, true) : cJSON_CreateObject())) {
		free(c);
		return -ENOMEM;
	}
	c->mod = u;
	c->up = up;
	up->refs++;
	c->policy = mcpx_policy_ref(who->policy);
	c->conf = conf;
	snprintf(c->tool, sizeof(c->tool), "%s", tool);
	copy_caller(c, who);
	c->done = done;
	c->arg = arg;
	c->started_us = mcpx_now_us();
	deadline = c->started_us + (uint64_t)conf->timeout_s * 1000000u;
	c->deadline_us =
	    who->deadline_us && who->deadline_us < deadline ? who->deadline_us : deadline;
	*out = c;
	if (up->state == UP_READY) {
		send_call(c);
	} else {
		c->next = up->waiting;
		up->waiting = c;
	}
	return 0;
}

void mcpx_upstream_call_cancel(struct mcpx_upstream_call *c)
{
	if (!c)
		return;
	if (c->req) {
		mcpx_upc_cancel(c->req);
		c->req = NULL;
		send_cancelled(c->up, c->conf, c->id, "the caller went away");
	}
	audit_call(c, "cancelled", true, NULL);
	call_free(c);
}

/* ---- discovery ------------------------------------------------------- */

static cJSON *entry_of(const struct upstream *up, const cJSON *t, bool mcp_form)
{
	const char *name = cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring;
	const cJSON *desc = cJSON_GetObjectItemCaseSensitive(t, "description");
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(t, "inputSchema");
	const cJSON *outs = cJSON_GetObjectItemCaseSensitive(t, "outputSchema");
	char full[MCPX_UPSTREAM_NAME_MAX + 131];
	cJSON *e;

	snprintf(full, sizeof(full), "%s.%s", up->name, name);
	if (mcp_form) {
		/* The upstream's Tool as it is, renamed. */
		e = cJSON_Duplicate(t, true);
		if (e)
			cJSON_ReplaceItemInObjectCaseSensitive(e, "name", cJSON_CreateString(full));
		return e;
	}
	e = cJSON_CreateObject();
	if (!e)
		return NULL;
	cJSON_AddStringToObject(e, "name", full);
	cJSON_AddStringToObject(e, "description", cJSON_IsString(desc) ? desc->valuestring : "");
	cJSON_AddItemToObject(e, "input_schema",
	                      in ? cJSON_Duplicate(in, true) : cJSON_CreateObject());
	cJSON_AddItemToObject(e, "output_schema",
	                      outs ? cJSON_Duplicate(outs, true) : cJSON_CreateNull());
	return e;
}

cJSON *mcpx_upstreams_tools(struct mcpx_upstreams *u, const struct mcpx_policy *policy,
                            const struct mcpx_egress_grant *grant, bool mcp_form)
{
	cJSON *list = cJSON_CreateArray();

	for (size_t i = 0; list && policy && i < policy->n_upstreams; i++) {
		const struct mcpx_upstream_conf *conf = &policy->upstreams[i];
		const struct upstream *up = find_up(u, conf->name);
		const cJSON *t;

		if (grant ? !mcpx_egress_grant_has_upstream(grant, conf) : !conf->expose)
			continue;
		if (!up || !up->tools || strcmp(up->conf->url, conf->url) != 0)
			continue;
		cJSON_ArrayForEach(t, up->tools)
		{
			const char *name = cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring;
			cJSON *e;

			if (!mcpx_upstream_tool_allowed(conf, name))
				continue;
			e = entry_of(up, t, mcp_form);
			if (e)
				cJSON_AddItemToArray(list, e);
		}
	}
	return list;
}

char *mcpx_upstreams_summary(struct mcpx_upstreams *u, const struct mcpx_policy *policy,
                             const struct mcpx_egress_grant *grant)
{
	struct mcpx_buf b;

	mcpx_buf_init(&b, 64u * 1024u);
	for (size_t i = 0; policy && i < policy->n_upstreams; i++) {
		const struct mcpx_upstream_conf *conf = &policy->upstreams[i];
		const struct upstream *up = find_up(u, conf->name);
		const cJSON *tools = up ? up->tools : NULL, *t;
		size_t n = 0;

		if (grant && !mcpx_egress_grant_has_upstream(grant, conf))
			continue;
		cJSON_ArrayForEach(t, tools)
		{
			n += mcpx_upstream_tool_allowed(
			    conf, cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring);
		}
		if (!up || !up->tools)
			mcpx_buf_addf(&b, "- %s: not connected yet\n", conf->name);
		else
			mcpx_buf_addf(&b, "- %s: %zu tools%s%s%s\n", conf->name, n,
			              up->server_name[0] ? " (server " : "", up->server_name,
			              up->server_name[0] ? ")" : "");
	}
	if (b.len == 0) {
		mcpx_buf_free(&b);
		return NULL;
	}
	return mcpx_buf_take(&b, NULL);
}

/* ---- the module -------------------------------------------------------- */

int mcpx_upstreams_new(struct mcpx_loop *loop, struct mcpx_broker *broker,
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
	u->broker = broker;
	u->store = store;
	u->next_id = 1;
	mcpx_upstreams_reload(u);
	*out = u;
	return 0;
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
		call_free(c);
	}
	while (u->ups) {
		struct upstream *up = u->ups;

		while (up->waiting)
			call_free(up->waiting);
		u->ups = up->next;
		up->gone = true;
		up_unref(up);
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
