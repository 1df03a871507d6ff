/*
 * mcp_core.h - what the MCP core's files share: the core, a call, a
 * listener, a batch and the request being answered, and the steps each
 * file holds. The files call one another one way only, top to bottom:
 *
 * mcp.c           the core's life, the method table and dispatch (messages,
 *                 batches, notifications), the session-based lifecycle
 *                 (initialize, ping, logging/setLevel)
 * mcp_tasks.c     MCP tasks: the requests that go to the tasks module
 *                 (task_hooks.h), the tasks capability, a task's run
 * mcp_stateless.c the 2026-07-28 generation: a request's _meta and headers
 *                 checked, server/discover, subscriptions/listen
 * mcp_resources.c resources/list, resources/read, resources/templates/list
 *                 through the resource provider (resource.h)
 * mcp_tools.c     tools/list and tools/call, and each call in flight (tool.h)
 * mcp_listeners.c the list_changed listeners: session-wide streams and
 *                 2026-07-28 subscriptions
 * mcp_send.c      sending: responses, errors, batches' arrays, what every
 *                 2026-07-28 result carries
 * mcp_core.c      versions, log levels, params' members, capabilities
 *
 * Not for use outside src/protocol/mcp*.c; everyone else has mcp.h and
 * tool.h.
 */
#ifndef MCPX_MCP_CORE_H
#define MCPX_MCP_CORE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "mcp.h"
#include "resource.h"
#include "task_hooks.h"
#include "tool.h"

/* 2026-07-28 reserved _meta keys (basic/index, "Per-request protocol fields"). */
#define META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CLIENT_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define META_SUBSCRIPTION_ID "io.modelcontextprotocol/subscriptionId"

/* Cache hints for tools/list and server/discover (2026-07-28
 * server/utilities/caching: "Servers MUST include caching hints"). The tool
 * list is the same for every caller, hence public; it changes with a
 * restart or a new policy file (which listeners hear of at once: the hint
 * and notifications/tools/list_changed are "complementary"); five minutes
 * bounds how long a client that does not listen keeps an old one. */
#define CACHE_TTL_MS 300000

struct listener;

struct mcpx_core {
	char *server_name;
	char *server_version;
	char *instructions; /* NULL when none */
	struct mcpx_tool **tools;
	size_t ntools;
	struct mcpx_tool_provider provider; /* list == NULL: none */
	struct mcpx_tool_access access;     /* allowed == NULL: every tool */
	/* list == NULL: no resources; resources_tool carries its calls'
	 * cancellation to it. */
	struct mcpx_resource_provider resources;
	struct mcpx_tool resources_tool;
	bool tools_list_changed;
	struct mcpx_task_hooks tasks; /* call == NULL: no tasks */
	struct mcpx_call *calls; /* in flight, newest first */
	size_t ncalls;
	struct listener *listeners;
};

/*
 * A stream that takes notifications/tools/list_changed. A session-wide one
 * (sub_id NULL) belongs to its transport and is told once its session is
 * initialized. A subscription is a 2026-07-28 subscriptions/listen request:
 * it stays unanswered (holding one unit of its sink's pending count, so an
 * HTTP response stream stays open) until the client cancels it, its sink
 * goes, or the server ends it with its completion result.
 */
struct listener {
	struct listener *next;
	struct mcpx_sink *sink;
	const struct mcpx_session *session; /* NULL: initialized from the start */
	cJSON *sub_id;                      /* the request id, or NULL */
	char key[160];                      /* the session key, for cancellation */
	bool tools;                         /* subscribed to toolsListChanged */
};

enum call_state { CALL_RUNNING, CALL_CANCELLING };

struct mcpx_call {
	struct mcpx_core *core;
	struct mcpx_call *prev, *next;
	struct mcpx_sink *sink;
	struct batch *batch; /* the batch the request came in, or NULL */
	const struct mcpx_tool *tool;
	enum call_state state;
	cJSON *id;             /* copy of the request id */
	cJSON *progress_token; /* copy of _meta.progressToken, or NULL */
	double last_progress;
	bool progress_sent;
	enum mcpx_level log_level; /* MCPX_LEVEL_OFF: no notifications/message */
	bool stateless;            /* results carry resultType and _meta */
	char version[16];
	/* Copied from the session: an HTTP session struct lives only as long as
	 * the POST that carried the request, the call may outlive it. */
	char key[160];
	char caller[MCPX_CALLER_MAX];
	char client[160];
	char id_text[128];
	char name[129]; /* the tool name called */
	/* A request the tasks module answers (tool is NULL): cancelling it
	 * tells the module (abandon). */
	bool tasks;
	char task_id[40]; /* a task's run (mcpx_core_task_call): the task, else "" */
	void *data;
};

/*
 * A JSON-RPC batch being answered (only 2025-03-26 has them). Its responses
 * are collected into one array, sent when the last request in it is
 * answered, tool calls included: "the Server should respond with an Array
 * containing the corresponding Response objects" and none for notifications
 * (JSON-RPC 2.0, section 6). While requests are owed it holds one unit of
 * the sink's pending count, so an HTTP POST stays open exactly as for a
 * single request. Notifications the calls send (progress, log messages) go
 * to the sink at once. Freed once every element has been handled and
 * nothing is owed; a call in flight keeps it alive.
 */
struct batch {
	struct mcpx_sink *sink;
	struct mcpx_buf out; /* "[" and the responses so far, comma-separated */
	unsigned owed;       /* requests of the batch not answered yet */
	bool holds_pending;  /* counted once in sink->pending */
	bool sealed;         /* every element has been handled */
	bool failed;         /* a response could not be added: one error instead */
	bool silent;         /* shutting down: settle without sending anything */
};

/* Everything about the message being handled. */
struct ctx {
	struct mcpx_core *core;
	struct mcpx_session *session;
	struct mcpx_sink *sink;
	const struct mcpx_req_headers *hdr;
	struct mcpx_handle_info *info;
	struct batch *batch; /* NULL unless the message is a batch */
};

/* One request being answered. */
struct req {
	struct ctx *c;
	const cJSON *id;
	const char *method;
	const cJSON *params; /* object or NULL */
	const cJSON *meta;   /* params._meta object or NULL */
	bool stateless;
	const char *version;       /* the version this request is served under */
	enum mcpx_level log_level; /* for a tools/call: the session's, or its _meta's */
};

/* ---- mcp_core.c ---- */

/* obj's member name, or NULL (also when obj is not an object). */
const cJSON *mcpx_mcp_member(const cJSON *obj, const char *name);
/* Versions negotiated with initialize. */
bool mcpx_mcp_version_stateful(const char *v);
int mcpx_mcp_parse_level(const cJSON *item, enum mcpx_level *out);
const char *mcpx_mcp_level_name(enum mcpx_level l);
/* The capabilities object of initialize and server/discover. */
cJSON *mcpx_mcp_capabilities(const struct mcpx_core *core);
/* Adds the tasks extension to server/discover's capabilities (when the
 * core has tasks); false when out of memory. */
bool mcpx_mcp_tasks_extension(const struct mcpx_core *core, cJSON *caps);

/* ---- mcp_send.c ---- */

/* Prints and sends one message; takes ownership of msg. */
void mcpx_mcp_emit(struct mcpx_sink *sink, cJSON *msg, bool response);
struct batch *mcpx_mcp_batch_new(struct mcpx_sink *sink);
/* A request of the batch is now owed a response. */
void mcpx_mcp_batch_owe(struct batch *b);
/* Sends the array once nothing is owed any more, then frees the batch. */
void mcpx_mcp_batch_settle(struct batch *b);
/* Sends a response to a request counted in sink->pending (or its batch). */
void mcpx_mcp_emit_response(struct mcpx_sink *sink, struct batch *b, cJSON *msg);
/* An error for a message that is not a request we counted. */
void mcpx_mcp_emit_invalid(struct ctx *c, const cJSON *id, int code, const char *msg);
void mcpx_mcp_reply_error_data(struct req *r, int code, const char *msg, cJSON *data,
                               unsigned http_status);
void mcpx_mcp_reply_error(struct req *r, int code, const char *msg);
/* Sends a result (ownership passes); NULL means we ran out of memory. */
void mcpx_mcp_reply_result(struct req *r, cJSON *result);
cJSON *mcpx_mcp_server_info(const struct mcpx_core *core);
/* Adds resultType and _meta serverInfo; false when out of memory. */
bool mcpx_mcp_decorate_stateless(const struct mcpx_core *core, cJSON *result);

/* ---- mcp_tools.c ---- */

void mcpx_mcp_tools_list(struct req *r);
void mcpx_mcp_tools_call(struct req *r);
/* A new call for request r, linked into the core's list; NULL when out of
 * memory. tool's cancel is what cancelling it calls (tool may be NULL for
 * the tasks module's calls). */
struct mcpx_call *mcpx_mcp_call_new(struct req *r, const struct mcpx_tool *tool,
                                    const char *name, enum mcpx_level log_level);
/* Links a call made elsewhere (a task's run) into the core's list. */
void mcpx_mcp_call_link(struct mcpx_call *call);
/* The tool serving name (before the caller's filter), or NULL. */
const struct mcpx_tool *mcpx_mcp_find_tool(const struct mcpx_core *core, const char *name);
/* Whether caller's profile lets it see and call name. */
bool mcpx_mcp_tool_allowed(const struct mcpx_core *core, const char *caller, const char *name);
/* Refuses r (and returns true) when its id is still in flight. */
bool mcpx_mcp_id_in_use(struct req *r);
struct mcpx_call *mcpx_mcp_call_find(struct mcpx_core *core, const char *key, const cJSON *id);
/* Cancels a call in flight (its tool's cancel); the sink hears that it
 * stays unanswered when tell_sink. */
void mcpx_mcp_call_cancel(struct mcpx_call *call, bool tell_sink);

/* ---- mcp_resources.c ---- */

void mcpx_mcp_resources_list(struct req *r);
void mcpx_mcp_resources_read(struct req *r);
void mcpx_mcp_resources_templates(struct req *r);

/* ---- mcp_listeners.c ---- */

struct listener *mcpx_mcp_listener_add(struct mcpx_core *core, struct mcpx_sink *sink);
void mcpx_mcp_listener_unlink(struct mcpx_core *core, struct listener *l);
void mcpx_mcp_listener_free(struct listener *l);
/* _meta naming a subscription, as every message on its stream carries. */
cJSON *mcpx_mcp_subscription_meta(const struct listener *l);
struct listener *mcpx_mcp_subscription_find(struct mcpx_core *core, const char *key,
                                            const cJSON *id);
void mcpx_mcp_subscription_end(struct mcpx_core *core, struct listener *l, bool graceful,
                               bool tell_sink);
/* Drops sink's listeners (all of them when sink is NULL), answering
 * nothing. */
void mcpx_mcp_drop_listeners(struct mcpx_core *core, const struct mcpx_sink *sink);

/* ---- mcp_stateless.c ---- */

enum mcpx_mcp_verdict {
	MCPX_MCP_SERVE,    /* checked: serve it statelessly */
	MCPX_MCP_ANSWERED, /* refused: the error is sent */
	MCPX_MCP_LEGACY,   /* a session-based request after all */
};
enum mcpx_mcp_verdict mcpx_mcp_stateless_check(struct req *r);
void mcpx_mcp_discover(struct req *r);
void mcpx_mcp_listen(struct req *r);
void mcpx_mcp_reply_unsupported_version(struct req *r, const char *requested);

/* ---- mcp_tasks.c ---- */

/* Adds the "tasks" capability to caps for a session initialized at
 * version; false when out of memory. */
bool mcpx_mcp_tasks_capability(const struct req *r, const char *version, cJSON *caps);
/* tools/call: a task's (2025-11-25 "task", a 2026-07-28 request with the
 * extension) goes to the tasks module, or is refused as the tasks rules
 * say; any other to mcpx_mcp_tools_call. */
void mcpx_mcp_tasks_tools_call(struct req *r);
/* tasks/get, tasks/result, tasks/list, tasks/cancel, tasks/update. */
void mcpx_mcp_tasks_method(struct req *r);

#endif
