/*
 * mcp_fixture.h - a small MCP server (Streamable HTTP, JSON answers) on
 * http_fixture.h, for the unit tests of the upstream client's modules
 * (test_upstream.c, test_upstream_ops.c, test_tool_upstream.c).
 *
 * initialize hands out a session id ("s<generation>") that every later
 * request must carry (404 otherwise: mcp_fixture_restart() forgets it, as a
 * restarted server would); notifications get 202; tools/list gives the
 * tools below two a page with nextCursor; the GET stream is refused (405).
 * Tools: echo {text}, add {a, b} (structuredContent), fail (isError),
 * rpc_error (a JSON-RPC error), hang (an answer that never completes),
 * progress (three notifications/progress with the request's progressToken
 * before its answer, as an event stream), secret_admin. What arrived is
 * counted: tools/call by name, notifications/cancelled, the progress tokens.
 */
#ifndef MCPX_MCP_FIXTURE_H
#define MCPX_MCP_FIXTURE_H

#include <cjson/cJSON.h>

#include "http_fixture.h"

#define MCP_FIXTURE_TOOLS                                                                          \
	"{\"name\":\"echo\",\"description\":\"Echoes.\",\"inputSchema\":{\"type\":\"object\","     \
	"\"properties\":{\"text\":{\"type\":\"string\"}}}}",                                       \
	    "{\"name\":\"add\",\"description\":\"Adds.\",\"inputSchema\":{\"type\":\"object\"},"   \
	    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"sum\":{\"maximum\":"          \
	    "1.7976931348623157e308}}}}",                                                          \
	    "{\"name\":\"fail\",\"inputSchema\":{\"type\":\"object\"}}",                           \
	    "{\"name\":\"rpc_error\",\"inputSchema\":{\"type\":\"object\"}}",                      \
	    "{\"name\":\"hang\",\"inputSchema\":{\"type\":\"object\"}}",                           \
	    "{\"name\":\"progress\",\"inputSchema\":{\"type\":\"object\"}}",                       \
	    "{\"name\":\"secret_admin\",\"inputSchema\":{\"type\":\"object\"}}"
#define MCP_FIXTURE_NTOOLS 7

struct mcp_fixture {
	struct http_fixture http;
	char url[64];
	/* Under http.lock: */
	int generation; /* of the session id */
	int calls[MCP_FIXTURE_NTOOLS];
	int cancelled;
	char last_token[64]; /* the last progress call's progressToken, "" for none */
	/* The thread's: answers being built. */
	char out[4][8192];
};

static inline int mcp_fixture_tool(const char *name)
{
	static const char *const names[] = {"echo", "add",      "fail",        "rpc_error",
	                                    "hang", "progress", "secret_admin"};

	for (int i = 0; i < MCP_FIXTURE_NTOOLS; i++)
		if (name && strcmp(names[i], name) == 0)
			return i;
	return -1;
}

/* "HTTP/1.1 200 OK" with a JSON body, into out[slot]. */
static inline const char *mcp_fixture_json(struct mcp_fixture *m, int slot, const char *extra,
                                           const char *body)
{
	snprintf(
	    m->out[slot], sizeof(m->out[slot]),
	    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n%s",
	    extra, strlen(body), body);
	return m->out[slot];
}

static inline void mcp_fixture_list(struct mcp_fixture *m, const cJSON *id, const cJSON *params,
                                    struct http_fixture_resp *resp)
{
	static const char *const tools[] = {MCP_FIXTURE_TOOLS};
	const cJSON *cursor = cJSON_GetObjectItemCaseSensitive(params, "cursor");
	int start = cJSON_IsString(cursor) ? atoi(cursor->valuestring) : 0;
	char body[4096];
	int n =
	    snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"tools\":[",
	             (int)id->valuedouble);

	for (int i = start; i < start + 2 && i < MCP_FIXTURE_NTOOLS; i++)
		n += snprintf(body + n, sizeof(body) - (size_t)n, "%s%s", i > start ? "," : "",
		              tools[i]);
	if (start + 2 < MCP_FIXTURE_NTOOLS)
		n += snprintf(body + n, sizeof(body) - (size_t)n, "],\"nextCursor\":\"%d\"}}",
		              start + 2);
	else
		snprintf(body + n, sizeof(body) - (size_t)n, "]}}");
	resp->piece[0] = mcp_fixture_json(m, 0, "", body);
}

static inline void mcp_fixture_call(struct mcp_fixture *m, const cJSON *id, const cJSON *params,
                                    struct http_fixture_resp *resp)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
	const cJSON *token = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
	const cJSON *text = cJSON_GetObjectItemCaseSensitive(args, "text");
	int k = mcp_fixture_tool(cJSON_IsString(name) ? name->valuestring : NULL),
	    rid = (int)id->valuedouble;
	char body[4096];

	pthread_mutex_lock(&m->http.lock);
	if (k >= 0)
		m->calls[k]++;
	if (k == 5)
		snprintf(m->last_token, sizeof(m->last_token), "%.0f",
		         cJSON_IsNumber(token) ? token->valuedouble : -1);
	pthread_mutex_unlock(&m->http.lock);
	if (k == 0)
		snprintf(
		    body, sizeof(body),
		    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[{\"type\":\"text\","
		    "\"text\":\"%s\"}]}}",
		    rid, cJSON_IsString(text) ? text->valuestring : "");
	else if (k == 1)
		snprintf(body, sizeof(body),
		         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[],"
		         "\"structuredContent\":{\"sum\":0.30000000000000004}}}",
		         rid);
	else if (k == 2)
		snprintf(
		    body, sizeof(body),
		    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[{\"type\":\"text\","
		    "\"text\":\"it broke\"}],\"isError\":true}}",
		    rid);
	else if (k == 4) {
		resp->piece[0] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		                 "Content-Length: 100\r\n\r\n{";
		return;
	} else if (k == 5) {
		int n = 0;

		for (int i = 1; cJSON_IsNumber(token) && i <= 3; i++)
			n += snprintf(
			    m->out[1] + n, sizeof(m->out[1]) - (size_t)n,
			    "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
			    "\"params\":{\"progressToken\":%.0f,\"progress\":%d,\"message\":"
			    "\"step %d\"}}\n\n",
			    token->valuedouble, i, i);
		snprintf(m->out[1] + n, sizeof(m->out[1]) - (size_t)n,
		         "data: {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[{\"type\":"
		         "\"text\",\"text\":\"done\"}]}}\n\n",
		         rid);
		resp->piece[0] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		                 "Connection: close\r\n\r\n";
		resp->piece[1] = m->out[1];
		resp->close = true;
		return;
	} else
		snprintf(body, sizeof(body),
		         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"error\":{\"code\":-32602,\"message\":"
		         "\"no such tool here\"}}",
		         rid);
	resp->piece[0] = mcp_fixture_json(m, 0, "", body);
}

static inline void mcp_fixture_respond(struct http_fixture *fx, const struct http_fixture_req *req,
                                       struct http_fixture_resp *resp)
{
	struct mcp_fixture *m = fx->arg;
	cJSON *msg = cJSON_ParseWithLength(req->body, req->body_len);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	const char *mname = cJSON_IsString(method) ? method->valuestring : "";
	char sid[64], want[96];
	int gen;

	pthread_mutex_lock(&fx->lock);
	gen = m->generation;
	pthread_mutex_unlock(&fx->lock);
	snprintf(sid, sizeof(sid), "s%d", gen);
	snprintf(want, sizeof(want), "\r\nMcp-Session-Id: %s\r\n", sid);
	if (strcmp(req->method, "GET") == 0) {
		resp->piece[0] = "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n";
	} else if (strcmp(mname, "initialize") == 0) {
		char extra[96], body[512];

		snprintf(extra, sizeof(extra), "Mcp-Session-Id: %s\r\n", sid);
		snprintf(body, sizeof(body),
		         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"protocolVersion\":"
		         "\"2025-06-18\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":"
		         "\"c-fixture\",\"version\":\"1\"}}}",
		         (int)id->valuedouble);
		resp->piece[0] = mcp_fixture_json(m, 2, extra, body);
	} else if (!strstr(req->headers, want)) {
		resp->piece[0] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
	} else if (!cJSON_IsNumber(id)) {
		if (strcmp(mname, "notifications/cancelled") == 0) {
			pthread_mutex_lock(&fx->lock);
			m->cancelled++;
			pthread_mutex_unlock(&fx->lock);
		}
		resp->piece[0] = "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
	} else if (strcmp(mname, "tools/list") == 0) {
		mcp_fixture_list(m, id, params, resp);
	} else {
		mcp_fixture_call(m, id, params, resp);
	}
	cJSON_Delete(msg);
}

static inline bool mcp_fixture_start(struct mcp_fixture *m)
{
	memset(m, 0, sizeof(*m));
	if (!http_fixture_start(&m->http, mcp_fixture_respond, m))
		return false;
	snprintf(m->url, sizeof(m->url), "http://127.0.0.1:%d/mcp", m->http.port);
	return true;
}

/* Forgets the session, as a restarted server would. */
static inline void mcp_fixture_restart(struct mcp_fixture *m)
{
	pthread_mutex_lock(&m->http.lock);
	m->generation++;
	pthread_mutex_unlock(&m->http.lock);
}

static inline int mcp_fixture_count(struct mcp_fixture *m, const char *tool)
{
	int n;

	pthread_mutex_lock(&m->http.lock);
	n = tool ? m->calls[mcp_fixture_tool(tool)] : m->cancelled;
	pthread_mutex_unlock(&m->http.lock);
	return n;
}

#endif
