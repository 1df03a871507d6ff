/*
 * mcp.h - the transport-agnostic MCP protocol core.
 *
 * The core takes one inbound message at a time (a stdio line, an HTTP POST
 * body) and produces outbound JSON-RPC messages through a sink the transport
 * provides. It implements JSON-RPC 2.0, the lifecycle and version negotiation
 * (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25 and the stateless
 * 2026-07-28), ping, tools/list, tools/call, logging/setLevel,
 * notifications/cancelled and progress. It never includes libwebsockets and
 * never touches a file descriptor: transports own the bytes, tools (tool.h)
 * own the work.
 *
 * Tools are the fixed ones (exec) and those of a provider whose list can
 * change while the server runs (the policy's functions). When it changes,
 * notifications/tools/list_changed goes to every listener: a session-wide
 * stream a transport registered (stdio, a legacy SSE stream, a Streamable
 * HTTP GET stream) once its session is initialized, and every 2026-07-28
 * subscriptions/listen request that asked for toolsListChanged.
 */
#ifndef MCPX_MCP_H
#define MCPX_MCP_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "caller.h"

struct mcpx_tool;
struct mcpx_core;

/* Protocol versions, oldest first. */
#define MCPX_PV_2024_11_05 "2024-11-05"
#define MCPX_PV_2025_03_26 "2025-03-26"
#define MCPX_PV_2025_06_18 "2025-06-18"
#define MCPX_PV_2025_11_25 "2025-11-25"
#define MCPX_PV_2026_07_28 "2026-07-28"
#define MCPX_PV_LATEST_STATEFUL MCPX_PV_2025_11_25

/* Returns true for a version string this server speaks. */
bool mcpx_version_supported(const char *v);
bool mcpx_version_stateless(const char *v); /* 2026-07-28 and later */
/* Every version this server speaks, newest first (the "supported" list of
 * UnsupportedProtocolVersionError). Returns the count; *list is static. */
size_t mcpx_versions(const char *const **list);

/*
 * Where the core's outbound messages go. The transport embeds this struct in
 * its own per-connection (stdio) or per-request (HTTP POST) object.
 * `pending` counts requests received through this sink whose response has not
 * been sent yet (a batch awaiting its array counts as one); the core
 * maintains it, the transport reads it to know when an HTTP response is
 * complete.
 */
struct mcpx_sink {
	/* One complete JSON-RPC message (no trailing newline). `response` is
	 * true for responses (results and errors), false for notifications.
	 * A batch's responses come as one message, the JSON array, once the
	 * last of its requests is answered; a batch of only notifications
	 * gets nothing, as JSON-RPC 2.0 requires.
	 * `pending` is already decremented when a response is sent, so
	 * pending == 0 inside send means "this was the last one". send must not
	 * call back into the core (e.g. mcpx_core_sink_gone on a write error):
	 * note the failure and act on it after the core returns. */
	void (*send)(struct mcpx_sink *sink, const char *json, size_t len, bool response);
	/* Optional (may be NULL): a request received through this sink was
	 * cancelled by notifications/cancelled and will never get a response;
	 * pending is already decremented. An HTTP transport uses it to end a
	 * POST stream that would otherwise wait forever. Same no-re-entry rule
	 * as send. */
	void (*unanswered)(struct mcpx_sink *sink);
	unsigned pending;
	bool gone; /* set by mcpx_core_sink_gone */
};

/* RFC 5424 levels as MCP names them; MCPX_LEVEL_OFF sends nothing. */
enum mcpx_level {
	MCPX_LEVEL_DEBUG,
	MCPX_LEVEL_INFO,
	MCPX_LEVEL_NOTICE,
	MCPX_LEVEL_WARNING,
	MCPX_LEVEL_ERROR,
	MCPX_LEVEL_CRITICAL,
	MCPX_LEVEL_ALERT,
	MCPX_LEVEL_EMERGENCY,
	MCPX_LEVEL_OFF
};

/*
 * Per-client protocol state. stdio has one for the process; HTTP transports
 * rebuild it per request from the session id and headers (any replica must
 * serve any request), so everything here is small and copyable.
 */
struct mcpx_session {
	char version[16]; /* negotiated (or per-request) protocol version; "" before initialize */
	bool initialized; /* initialize answered (stdio); HTTP sets it from a valid session id */
	enum mcpx_level log_level; /* threshold for notifications/message */
	char
	    key[160]; /* identifies the session for cancellation matching ("stdio", a session id) */
	/* Who (caller.h): the audit line's caller, and what selects the
	 * caller's profile (tool access below). */
	char caller[MCPX_CALLER_MAX];
	char client[160];     /* for the audit log: "stdio", a session's hash and remote address */
	bool allow_stateless; /* accept 2026-07-28 requests without initialize (stdio and /mcp) */
};

/* What mcpx_core_handle saw, for the transport's status code decisions. */
struct mcpx_handle_info {
	bool parse_error; /* not JSON: a -32700 response was sent */
	bool invalid;     /* not a JSON-RPC message: a -32600 response was sent */
	bool batch;
	unsigned requests; /* requests in the message (each gets one response) */
	unsigned notifications;
	unsigned responses;   /* client responses (ignored) */
	bool initialized_now; /* an initialize succeeded: session->version is set */
	bool stateless;       /* the message used 2026-07-28 */
	char method[64];      /* the (first) method, for metrics and headers checks */
	/* For a single (non-batch) message answered synchronously with an
	 * error: its JSON-RPC code; 0 otherwise. */
	int error_code;
	/* The HTTP status the 2026-07-28 spec mandates for this message, or 0
	 * when the transport's usual rules apply: 400 for
	 * UnsupportedProtocolVersion (-32022), HeaderMismatch (-32020) and
	 * missing/invalid _meta fields (-32602); 404 for an unknown method
	 * (-32601) in a 2026-07-28 request (transports/streamable-http,
	 * "Protocol Version Header"). */
	unsigned http_status;
};

/*
 * Streamable HTTP request headers a 2026-07-28 body must agree with
 * ("Server Validation" in basic/transports/streamable-http). NULL members
 * mean the header was absent; values are as received. The transport fills
 * it (streamable_headers.h) and checks it: the core calls mismatch where
 * that error comes among a request's others.
 */
struct mcpx_req_headers {
	const char *protocol_version; /* MCP-Protocol-Version */
	const char *method;           /* Mcp-Method */
	const char *name;             /* Mcp-Name */
	/* The HeaderMismatch message (static) when the headers disagree with
	 * the body's _meta version, method and params, else NULL. NULL: not
	 * checked. */
	const char *(*mismatch)(const struct mcpx_req_headers *h, const char *body_version,
	                        const char *method, const cJSON *params);
	/* MCP-Protocol-Version holds characters a header may not: never
	 * echoed in an error. */
	bool protocol_version_invalid;
};

/* Tools that come and go while the server runs (tool_function.c). */
struct mcpx_tool_provider {
	/* Appends the current tools' Tool objects to arr: 0 or -ENOMEM. */
	int (*list)(void *ctx, cJSON *arr);
	/* The tool that serves name now, or NULL. It must stay valid while
	 * any call it started is in flight. */
	const struct mcpx_tool *(*find)(void *ctx, const char *name);
	void *ctx;
};

/* Which tools a caller may see and call (the policy's profiles). */
struct mcpx_tool_access {
	/* True when caller may see name in tools/list and call it; a tool it
	 * may not is answered exactly as an unknown one. */
	bool (*allowed)(void *ctx, const char *caller, const char *name);
	/* True while the answer can differ between callers: tools/list is
	 * then marked cacheScope "private" (2026-07-28). May be NULL. */
	bool (*per_caller)(void *ctx);
	void *ctx;
};

struct mcpx_resource_provider;

struct mcpx_core_opts {
	const char *server_name;
	const char *server_version;
	const char *instructions; /* may be NULL */
	struct mcpx_tool *const *tools;
	size_t ntools;
	const struct mcpx_tool_provider *provider; /* may be NULL; copied */
	const struct mcpx_tool_access *access;     /* may be NULL (all tools); copied */
	/* The tool list can change (declared as tools.listChanged). */
	bool tools_list_changed;
	/* Resources (resource.h; copied): NULL or a NULL list, none, and no
	 * resources capability. */
	const struct mcpx_resource_provider *resources;
};

struct mcpx_core *mcpx_core_new(const struct mcpx_core_opts *opts);
void mcpx_core_free(struct mcpx_core *core);

/* Handles one inbound message (len bytes, not NUL-terminated). Replies to
 * synchronous requests are sent through sink before this returns; replies to
 * tool calls may follow later. */
void mcpx_core_handle(struct mcpx_core *core, struct mcpx_session *session, struct mcpx_sink *sink,
                      const char *msg, size_t len, struct mcpx_handle_info *info);

/* The same, for Streamable HTTP POSTs: hdr (may be NULL, which means "no
 * headers", as on stdio) is checked against the body. For a 2026-07-28
 * request, MCP-Protocol-Version and Mcp-Method must be present and equal to
 * the body's _meta version and method, and Mcp-Name to params.name for
 * tools/call; otherwise the reply is HeaderMismatch (-32020) with
 * info->http_status 400. For any request, an MCP-Protocol-Version the server
 * does not support gets UnsupportedProtocolVersion (-32022), 400. Checking
 * the header against a legacy session's negotiated version stays with the
 * transport. */
void mcpx_core_handle_http(struct mcpx_core *core, struct mcpx_session *session,
                           struct mcpx_sink *sink, const char *msg, size_t len,
                           const struct mcpx_req_headers *hdr, struct mcpx_handle_info *info);

/* The sink is going away (client disconnected, stream closed): its in-flight
 * calls are cancelled and nothing is sent to it again. mcpx_core_free also
 * cancels what is still in flight, so free the core before the tools. */
void mcpx_core_sink_gone(struct mcpx_core *core, struct mcpx_sink *sink);

/* Shutdown: every tool call in flight is cancelled (the tools stop their
 * work) and nothing is sent for them. The core stays usable, so sinks that
 * report their end later (mcpx_core_sink_gone) still find it. */
void mcpx_core_cancel_all(struct mcpx_core *core);

/* Number of tool calls in flight (queued or running), for drain. */
size_t mcpx_core_inflight(const struct mcpx_core *core);

/* A session-wide stream that takes server-initiated notifications: sink
 * gets notifications/tools/list_changed once session (NULL: one that is
 * initialized already) is initialized. Until mcpx_core_sink_gone. */
int mcpx_core_listen(struct mcpx_core *core, struct mcpx_sink *sink,
                     const struct mcpx_session *session);

/* Whether the tool list can change (opts.tools_list_changed). */
bool mcpx_core_tools_can_change(const struct mcpx_core *core);

/* The tool list changed: every listener is told. */
void mcpx_core_tools_changed(struct mcpx_core *core);

/* Draining: each subscriptions/listen ends with its completion result, so
 * its stream ends. */
void mcpx_core_end_subscriptions(struct mcpx_core *core);

#endif
