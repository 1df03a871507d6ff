/*
 * upstream_internal.h - what the upstream client's files share: an
 * upstream's connection state, a call, the module, and the steps each file
 * holds. The files call one another one way only, top to bottom:
 *
 * upstreams.c        the module's life; whether the exposed upstreams have
 *                    answered once; it wires the connection's waiting calls
 *                    to the relay
 * upstream_catalog.c the tools of the upstreams a caller may reach, as a list
 *                    or a summary, from their kept lists
 * upstream_call.c    a call's relay: checks, the request, its answer or the
 *                    reason it has none, progress, cancellation, the audit line
 * upstream_conn.c    a connection's state machine: initialize, the tool list
 *                    page by page, the GET stream, down and the retry, reloads
 * upstream.c         the requests every part sends (a JSON-RPC message, its
 *                    target, notifications/cancelled)
 * upstream_list.c    an upstream's tool list kept as text within its caps
 *
 * Not for use outside src/codemode/upstream*.c; everyone else has
 * upstream.h.
 */
#ifndef MCPX_UPSTREAM_INTERNAL_H
#define MCPX_UPSTREAM_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "caller.h"
#include "loop.h"
#include "policy.h"
#include "upstream.h"
#include "upstream_client.h"

#define BACKOFF_MIN_S 1

enum up_state { UP_CONNECTING, UP_READY, UP_DOWN };
enum up_step { STEP_NONE, STEP_INITIALIZE, STEP_INITIALIZED, STEP_LIST };

struct notif;

/* One tool of an upstream's list, kept compactly: its name, and each other
 * member of its Tool object as JSON text (json.h, exact), in order. */
struct up_member {
	char *key;
	char *value;
};

struct up_tool {
	char *name;
	struct up_member *m;
	size_t n;
};

/* An upstream's tool list within its caps (max_tools, max_tools_bytes). */
struct up_catalog {
	struct up_tool *tools;
	size_t n, cap;
	size_t bytes;   /* the kept tools' text */
	bool truncated; /* the caps left tools out */
};

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
	struct up_catalog *tools;        /* what tools/list gave, or NULL before */
	struct up_catalog *listing;      /* pages gathered so far */
	unsigned pages;
	bool refresh; /* list again once the current listing ends */
	struct mcpx_timer retry;
	unsigned backoff_s;
	char down_why[256];
	bool down_logged;
	struct mcpx_upstream_call *waiting; /* calls waiting for UP_READY */
	/* Answered (its list in) or failed once since it was added, or its
	 * timeout_s passed: what the first tools/list and /readyz wait for. */
	bool settled;
	struct mcpx_timer settle_timer;
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
	/* The caller asked for progress: the upstream's progress of this call
	 * goes to it (upstream.h). */
	void (*progress)(void *arg, double progress, const char *message);
	void *progress_arg;
};

/* A notification sent and forgotten (notifications/cancelled). */
struct notif {
	struct notif *next;
	struct mcpx_upstreams *mod;
	struct mcpx_upc_req *req;
};

struct mcpx_upstreams {
	struct mcpx_loop *loop;
	struct mcpx_curl_loop *http; /* the shared transport (app.c's) */
	struct mcpx_policy_store *store;
	char *ca_file;
	struct upstream *ups;
	struct mcpx_upstream_call *sent; /* calls with a request in flight */
	struct notif *notifs;
	double next_id;
	void (*changed)(void *arg);
	void *changed_arg;
	/* What a connection does with the calls waiting for it (upstream_call.c's,
	 * wired by upstreams.c): one sent once it is ready, one refused with
	 * msg when it goes down or away. */
	void (*send_waiting)(struct mcpx_upstream_call *c);
	void (*refuse_waiting)(struct mcpx_upstream_call *c, const char *msg);
};

/* ---- upstream.c ---- */

/* Where a request to up goes under conf, within timeout_ms (0: none). */
void mcpx_up_target(const struct upstream *up, const struct mcpx_upstream_conf *conf,
                    uint64_t timeout_ms, struct mcpx_upc_target *t);
/* A JSON-RPC message (a notification when id < 0); params is taken. The
 * caller frees the text; NULL when out of memory. */
char *mcpx_up_message(double id, const char *method, cJSON *params);
/* Tells the upstream that request id is cancelled; nothing waits. */
void mcpx_up_send_cancelled(struct upstream *up, const struct mcpx_upstream_conf *conf, double id,
                            const char *why);

/* ---- upstream_conn.c ---- */

/* (Re)connects: a new session, a new tool list; calls wait meanwhile. */
void mcpx_up_connect(struct upstream *up);
/* The upstream did not answer: waiting calls refused, a retry scheduled. */
void mcpx_up_go_down(struct upstream *up, const char *why);
/* The upstream said its tools changed: list them again. */
void mcpx_up_tools_changed(struct upstream *up);
/* up answered or failed for the first time (or its wait ran out). */
void mcpx_up_settle(struct upstream *up);
struct upstream *mcpx_up_find(const struct mcpx_upstreams *u, const char *name);
void mcpx_up_unref(struct upstream *up);

/* ---- upstream_list.c ---- */

struct up_catalog *mcpx_up_catalog_new(void);
void mcpx_up_catalog_free(struct up_catalog *c);
/* Keeps tool (one element of a tools/list page) under conf's caps. Returns
 * 0 (kept), 1 (not a tool that can be called by "<upstream>.<tool>": left
 * out), -E2BIG (a cap is reached: left out, and c->truncated), -ENOMEM. */
int mcpx_up_catalog_add(struct up_catalog *c, const cJSON *tool,
                        const struct mcpx_upstream_conf *conf);
/* Whether the upstream lists a tool of that name. */
bool mcpx_up_catalog_has(const struct up_catalog *c, const char *name);

/* ---- upstream_call.c ---- */

/* Sends a call whose upstream is ready. */
void mcpx_up_call_send(struct mcpx_upstream_call *c);
/* Ends a call with an error answer (kind, reason and status as audited). */
void mcpx_up_call_fail(struct mcpx_upstream_call *c, enum mcpx_upstream_kind kind,
                       const char *reason, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Ends a waiting call: its upstream is down or gone (msg says so). */
void mcpx_up_call_refuse(struct mcpx_upstream_call *c, const char *msg);
/* Frees a call without an answer or callback. */
void mcpx_up_call_free(struct mcpx_upstream_call *c);

#endif
