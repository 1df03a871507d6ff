/*
 * mcp_types.h - what the MCP core shares with its transports and its tools
 * as plain types: the protocol versions, the sink a transport gives the
 * core, the log levels, a client's session, what the core saw of a message,
 * and the request headers a 2026-07-28 body must agree with.
 *
 * Types only: the core's functions are mcp.h's, the tool interface tool.h's.
 * It includes nothing of a module, so any layer above the core may use it.
 */
#ifndef MCPX_MCP_TYPES_H
#define MCPX_MCP_TYPES_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "caller.h"

/* Protocol versions, oldest first. */
#define MCPX_PV_2024_11_05 "2024-11-05"
#define MCPX_PV_2025_03_26 "2025-03-26"
#define MCPX_PV_2025_06_18 "2025-06-18"
#define MCPX_PV_2025_11_25 "2025-11-25"
#define MCPX_PV_2026_07_28 "2026-07-28"
#define MCPX_PV_LATEST_STATEFUL MCPX_PV_2025_11_25

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

#endif
