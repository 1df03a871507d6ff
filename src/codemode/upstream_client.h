/*
 * upstream_client.h - one JSON-RPC message POSTed to an upstream MCP
 * server's Streamable HTTP endpoint, and its answer, on the shared curl
 * loop the broker's fetches run on (curl_loop.h). Private to
 * src/codemode/upstream*.c.
 *
 * It knows the transport, not the protocol's meaning: the headers
 * (Accept, Content-Type, MCP-Protocol-Version, Mcp-Session-Id, the
 * credential), the two kinds of answer (one JSON body, or an event stream
 * whose events carry the response and, before it, notifications), the
 * session id the upstream hands out, and the same limits as a fetch, from
 * the same locked-down handle (egress_handle.h): every address curl
 * connects to is checked against allow_cidrs, redirects are not followed,
 * the answer is capped, the request is bounded in time, and no proxy is
 * taken from the environment.
 */
#ifndef MCPX_UPSTREAM_CLIENT_H
#define MCPX_UPSTREAM_CLIENT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress_check.h"

struct mcpx_curl_loop;
struct mcpx_upc_req;

#define MCPX_UPC_SESSION_MAX 256

/* Where and how to send: all borrowed until mcpx_upc_post returns (curl
 * keeps copies). */
struct mcpx_upc_target {
	const char *url;
	const struct mcpx_cidr *allow;
	size_t n_allow;
	const char *cred_header;      /* NULL: no credential */
	const char *cred_value;       /* "prefix + secret" */
	const char *session_id;       /* NULL or "": none yet */
	const char *protocol_version; /* NULL before initialize */
	const char *ca_file;          /* NULL: the system's CAs */
	size_t max_bytes;             /* the answer's cap */
	uint64_t timeout_ms;
	/* A request's messages of the upstream before its response
	 * (notifications/progress, ...), called from inside the transfer
	 * (nothing may be cancelled or freed there); NULL: skipped. */
	void (*on_message)(void *arg, const cJSON *msg);
	void *message_arg;
};

enum mcpx_upc_kind {
	MCPX_UPC_OK,           /* response (or, for a notification, a 2xx) */
	MCPX_UPC_DOWN,         /* no answer: connect, reset, TLS, DNS */
	MCPX_UPC_TIMEOUT,      /* timeout_ms passed */
	MCPX_UPC_TOO_LARGE,    /* the answer passed max_bytes */
	MCPX_UPC_ADDRESS,      /* the address is not allowed (SSRF rules) */
	MCPX_UPC_HTTP,         /* an HTTP status other than 2xx (status) */
	MCPX_UPC_SESSION_GONE, /* 404 to a request with a session id */
	MCPX_UPC_PROTOCOL,     /* a 2xx without a valid response to our id */
};

struct mcpx_upc_result {
	enum mcpx_upc_kind kind;
	long status;
	cJSON *response; /* MCPX_UPC_OK for a request: the receiver may take it (set NULL) */
	char session_id[MCPX_UPC_SESSION_MAX]; /* the answer's Mcp-Session-Id, or "" */
	bool list_changed; /* notifications/tools/list_changed came with the answer */
	char msg[256];     /* what went wrong, for logs and the caller */
	uint64_t bytes_in, bytes_out;
};

/* Called once, unless cancelled first; res is valid during the call. */
typedef void (*mcpx_upc_done_fn)(void *arg, struct mcpx_upc_result *res);

/* POSTs body (a JSON-RPC message; id is its id, or -1 for a notification,
 * whose answer is only a status). Returns 0 with *out (until done or
 * cancel), or -errno. */
int mcpx_upc_post(struct mcpx_curl_loop *http, const struct mcpx_upc_target *t, const char *body,
                  double id, mcpx_upc_done_fn done, void *arg, struct mcpx_upc_req **out);

/* A message of the upstream on a listening stream (borrowed for the call). */
typedef void (*mcpx_upc_message_fn)(void *arg, const cJSON *msg);

/* Opens the GET event stream on which the upstream sends what is not an
 * answer (notifications such as tools/list_changed): each message goes to
 * on_message; max_bytes caps each event; timeout_ms is ignored (the stream
 * lasts until the upstream ends it, then done). Returns 0 with *out, or
 * -errno. */
int mcpx_upc_listen(struct mcpx_curl_loop *http, const struct mcpx_upc_target *t,
                    mcpx_upc_message_fn on_message, mcpx_upc_done_fn done, void *arg,
                    struct mcpx_upc_req **out);

/* Stops r; done is not called. NULL is fine. */
void mcpx_upc_cancel(struct mcpx_upc_req *r);

#endif
