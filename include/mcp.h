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
 */
#ifndef MCPX_MCP_H
#define MCPX_MCP_H

#include <stdbool.h>
#include <stddef.h>

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

/*
 * Where the core's outbound messages go. The transport embeds this struct in
 * its own per-connection (stdio) or per-request (HTTP POST) object.
 * `pending` counts requests received through this sink whose response has not
 * been sent yet; the core maintains it, the transport reads it to know when an
 * HTTP response is complete.
 */
struct mcpx_sink {
	/* One complete JSON-RPC message (no trailing newline). `response` is
	 * true for responses (results and errors), false for notifications. */
	void (*send)(struct mcpx_sink *sink, const char *json, size_t len, bool response);
	unsigned pending;
	bool gone; /* set by mcpx_core_sink_gone */
};

/* RFC 5424 levels as MCP names them; MCPX_LEVEL_OFF sends nothing. */
enum mcpx_level {
	MCPX_LEVEL_DEBUG, MCPX_LEVEL_INFO, MCPX_LEVEL_NOTICE, MCPX_LEVEL_WARNING,
	MCPX_LEVEL_ERROR, MCPX_LEVEL_CRITICAL, MCPX_LEVEL_ALERT, MCPX_LEVEL_EMERGENCY,
	MCPX_LEVEL_OFF
};

/*
 * Per-client protocol state. stdio has one for the process; HTTP transports
 * rebuild it per request from the session id and headers (any replica must
 * serve any request), so everything here is small and copyable.
 */
struct mcpx_session {
	char version[16];   /* negotiated (or per-request) protocol version; "" before initialize */
	bool initialized;   /* initialize answered (stdio); HTTP sets it from a valid session id */
	enum mcpx_level log_level; /* threshold for notifications/message */
	char key[160];      /* identifies the session for cancellation matching ("stdio", a session id) */
	char caller[160];   /* for the audit log: "stdio", a session id or a remote address */
	bool allow_stateless; /* accept 2026-07-28 requests without initialize (stdio and /mcp) */
};

/* What mcpx_core_handle saw, for the transport's status code decisions. */
struct mcpx_handle_info {
	bool parse_error;      /* not JSON: a -32700 response was sent */
	bool invalid;          /* not a JSON-RPC message: a -32600 response was sent */
	bool batch;
	unsigned requests;     /* requests in the message (each gets one response) */
	unsigned notifications;
	unsigned responses;    /* client responses (ignored) */
	bool initialized_now;  /* an initialize succeeded: session->version is set */
	bool stateless;        /* the message used 2026-07-28 */
	char method[64];       /* the (first) method, for metrics and headers checks */
};

struct mcpx_core_opts {
	const char *server_name;
	const char *server_version;
	const char *instructions; /* may be NULL */
	struct mcpx_tool *const *tools;
	size_t ntools;
};

struct mcpx_core *mcpx_core_new(const struct mcpx_core_opts *opts);
void mcpx_core_free(struct mcpx_core *core);

/* Handles one inbound message (len bytes, not NUL-terminated). Replies to
 * synchronous requests are sent through sink before this returns; replies to
 * tool calls may follow later. */
void mcpx_core_handle(struct mcpx_core *core, struct mcpx_session *session, struct mcpx_sink *sink,
		      const char *msg, size_t len, struct mcpx_handle_info *info);

/* The sink is going away (client disconnected, stream closed): its in-flight
 * calls are cancelled and nothing is sent to it again. */
void mcpx_core_sink_gone(struct mcpx_core *core, struct mcpx_sink *sink);

/* Number of tool calls in flight (queued or running), for drain. */
size_t mcpx_core_inflight(const struct mcpx_core *core);

#endif
