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

#include "mcp_types.h"

struct mcpx_tool;
struct mcpx_core;
struct mcpx_task_hooks;

/* Returns true for a version string this server speaks. */
bool mcpx_version_supported(const char *v);
bool mcpx_version_stateless(const char *v); /* 2026-07-28 and later */
/* Every version this server speaks, newest first (the "supported" list of
 * UnsupportedProtocolVersionError). Returns the count; *list is static. */
size_t mcpx_versions(const char *const **list);

/* Tools that come and go while the server runs (tool_function.c). */
struct mcpx_tool_provider {
	/* Appends the current tools' Tool objects to arr: 0 or -ENOMEM. */
	int (*list)(void *ctx, cJSON *arr);
	/* The tool that serves name now, or NULL. It must stay valid while
	 * any call it started is in flight. */
	const struct mcpx_tool *(*find)(void *ctx, const char *name);
	/* Optional: false while the list is still being made (an upstream of
	 * the gateway has not answered yet): tools/list then waits, and the
	 * provider's owner calls mcpx_core_tools_ready once it may be. */
	bool (*ready)(void *ctx);
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
	/* MCP tasks (task_hooks.h; copied), or NULL: none. */
	const struct mcpx_task_hooks *tasks;
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
/* The same for a stream of a session initialized already, named by its key
 * (a Streamable HTTP GET stream): it also takes the notifications meant for
 * that session alone (notifications/tasks/status). */
int mcpx_core_listen_key(struct mcpx_core *core, struct mcpx_sink *sink, const char *key);

/* Whether the tool list can change (opts.tools_list_changed). */
bool mcpx_core_tools_can_change(const struct mcpx_core *core);

/* The tool list changed: every listener is told. */
void mcpx_core_tools_changed(struct mcpx_core *core);

/* The provider may be ready now: the tools/list requests that waited for
 * it are answered (when it is). */
void mcpx_core_tools_ready(struct mcpx_core *core);

/* Draining: each subscriptions/listen ends with its completion result, so
 * its stream ends. */
void mcpx_core_end_subscriptions(struct mcpx_core *core);

#endif
