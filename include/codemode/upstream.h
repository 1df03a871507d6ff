/*
 * upstream.h - the server as an MCP client of the upstream servers its
 * policy names ("upstreams", policy.h): their connections, their tool
 * lists kept warm, and calls of their tools on behalf of a run's code
 * (upstream_ops.c, mcpx.call) or of an MCP client of this server (the
 * gateway, tool_upstream.c).
 *
 * Each upstream is connected at start-up and when a policy reload adds or
 * changes it: initialize (protocol version negotiation, the session id the
 * upstream hands out), notifications/initialized, then tools/list page by
 * page. The list is kept until the upstream says it changed
 * (notifications/tools/list_changed, seen in any answer) or its session
 * ends, so a call costs one request. An upstream that does not answer is
 * "down": logged once, its up gauge 0 in /metrics, calls refused at once
 * with the reason, and reconnected with a backoff (1 s doubling to 60 s).
 * A call made while it connects waits for the connection.
 *
 * A call is checked before anything is sent: the upstream must be in the
 * caller's grant (or exposed, for the gateway), the tool allowed by the
 * upstream's globs and, when the list is known, listed by the upstream. It
 * is bounded by the upstream's timeout_s and by the caller's own deadline;
 * its answer by max_response_bytes. A call that times out or is cancelled
 * is followed by notifications/cancelled to the upstream. Each call, denied
 * or not, writes one audit line (never its arguments or result) and counts
 * in /metrics.
 *
 * Everything runs on the server's loop, on the egress transfers' shared
 * transport (curl_loop.h).
 */
#ifndef MCPX_UPSTREAM_H
#define MCPX_UPSTREAM_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mcpx_loop;
struct mcpx_curl_loop;
struct mcpx_policy;
struct mcpx_policy_store;
struct mcpx_egress_grant;
struct mcpx_upstream_conf;
struct mcpx_upstreams;
struct mcpx_upstream_call;

/* Starts the client of every upstream of store's current policy, on loop
 * and on the shared transport http (both must outlive it). ca_file: NULL
 * or "" for the system's CAs. Returns 0 with *out, or -ENOMEM. */
int mcpx_upstreams_new(struct mcpx_loop *loop, struct mcpx_curl_loop *http,
                       struct mcpx_policy_store *store, const char *ca_file,
                       struct mcpx_upstreams **out);
/* Cancels every call (no callbacks) and connection and frees u. NULL is fine. */
void mcpx_upstreams_free(struct mcpx_upstreams *u);

/* The policy changed: upstreams added, changed (URL, allowed ranges or
 * credential: a new connection) or removed. */
void mcpx_upstreams_reload(struct mcpx_upstreams *u);

/* Whether every upstream of policy that is exposed (the gateway) has
 * answered or failed once since it was added, or its timeout_s passed:
 * what the first tools/list and /readyz wait for. When not, why names one
 * (why may be NULL). */
bool mcpx_upstreams_settled(struct mcpx_upstreams *u, const struct mcpx_policy *policy, char *why,
                            size_t len);

/* fn(arg) runs when an upstream's tool list was (re)loaded, or an upstream
 * answered or failed for the first time. */
void mcpx_upstreams_on_list_changed(struct mcpx_upstreams *u, void (*fn)(void *arg), void *arg);

/* Who calls, and under what. Strings are copied. */
struct mcpx_upstream_caller {
	const char *run_id; /* NULL: a gateway call */
	const char *request_id;
	const char *caller;
	struct mcpx_policy *policy;            /* the version the call is judged under */
	const struct mcpx_egress_grant *grant; /* NULL: the gateway (exposed upstreams) */
	uint64_t deadline_us;                  /* 0: none beyond timeout_s */
	/* Non-NULL: the caller wants the upstream's progress of the call
	 * (notifications/progress, asked for with a progressToken of the
	 * request's own); called with each, from inside the transfer (the
	 * call must not be cancelled there). */
	void (*progress)(void *arg, double progress, const char *message);
	void *progress_arg;
};

enum mcpx_upstream_kind {
	MCPX_UPSTREAM_RESULT,     /* result: the CallToolResult (isError included) */
	MCPX_UPSTREAM_TOOL_ERROR, /* a JSON-RPC error, a timeout, a bad answer */
	MCPX_UPSTREAM_DENIED,     /* refused: reason and message */
};

struct mcpx_upstream_answer {
	enum mcpx_upstream_kind kind;
	cJSON *result;      /* MCPX_UPSTREAM_RESULT: the receiver may take it (set NULL) */
	const char *reason; /* MCPX_UPSTREAM_DENIED: "upstream_down", "too_large", ... */
	const char *message;
};

/* Called once, unless the call is cancelled first; a is valid during it. */
typedef void (*mcpx_upstream_done_fn)(void *arg, struct mcpx_upstream_answer *a);

/* Room for a refusal's message. */
#define MCPX_UPSTREAM_MSG_MAX 512

/* The upstream a "<upstream>.<tool>" name names in policy, with *tool
 * pointing at the tool's part; NULL when the name names none. */
const struct mcpx_upstream_conf *mcpx_upstream_of(const struct mcpx_policy *policy,
                                                  const char *name, const char **tool);

/* Calls name ("<upstream>.<tool>") with args (an object; NULL reads as {}).
 * Returns 0 with *out (done follows, or mcpx_upstream_call_cancel), or
 * -ENOENT (the name names no upstream of the caller's policy: nothing
 * audited), or -EACCES with *reason and msg (refused, audited), or -ENOMEM. */
int mcpx_upstream_call_start(struct mcpx_upstreams *u, const struct mcpx_upstream_caller *c,
                             const char *name, const cJSON *args, mcpx_upstream_done_fn done,
                             void *arg, struct mcpx_upstream_call **out, const char **reason,
                             char *msg, size_t msglen);

/* The caller went away: the call ends (audited "cancelled", and the
 * upstream told with notifications/cancelled when it had been sent). */
void mcpx_upstream_call_cancel(struct mcpx_upstream_call *call);

/* A refusal decided by the caller (a budget): one audit line and a count. */
void mcpx_upstream_audit_denied(const struct mcpx_upstream_caller *c, const char *upstream,
                                const char *tool, const char *reason);

/* The exposed upstreams' allowed tools as MCP Tool objects named
 * "<upstream>.<tool>" (the gateway's tools/list): each member but the name
 * is the upstream's own JSON text, as a raw value. Upstreams not connected
 * contribute nothing. A new array, or NULL when out of memory. */
cJSON *mcpx_upstreams_gateway_tools(struct mcpx_upstreams *u, const struct mcpx_policy *policy);

/* Member key of the Tool the gateway lists as name ("<upstream>.<tool>"):
 * the upstream's own JSON text, malloc'd, or NULL when the tool is not
 * listed to this policy or has no such member (or out of memory). */
char *mcpx_upstreams_tool_member(struct mcpx_upstreams *u, const struct mcpx_policy *policy,
                                 const char *name, const char *key);

/* The tools grant may call now, for mcpx.tools(): appended to out as the
 * elements of a JSON array, {"name": "<upstream>.<tool>", "description",
 * "input_schema", "output_schema"} each, with a comma before each but the
 * first of the array (*first, which it clears). The kept text is copied,
 * not printed again. Returns 0, -ENOMEM or -E2BIG (out's cap). */
struct mcpx_buf;
int mcpx_upstreams_run_tools(struct mcpx_upstreams *u, const struct mcpx_policy *policy,
                             const struct mcpx_egress_grant *grant, struct mcpx_buf *out,
                             bool *first);

/* One line per upstream of grant (all when NULL): its name, tool count
 * and server name (or "not connected yet"), for the exec tool's
 * description. A malloc'd string, or NULL when there is none. */
char *mcpx_upstreams_summary(struct mcpx_upstreams *u, const struct mcpx_policy *policy,
                             const struct mcpx_egress_grant *grant);

#endif
