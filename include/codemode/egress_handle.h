/*
 * egress_handle.h - the one place an outgoing request made for the policy
 * (a run's fetch, broker.c; a request to an upstream MCP server,
 * upstream_client.c) gets its libcurl easy handle: locked down from (url,
 * allowed CIDRs, credential, caps), the same for both.
 *
 * What every handle holds, whatever its owner sets next:
 *   - only http and https, for the request and for any redirect, and no
 *     redirect is followed by curl (an owner that follows one does it
 *     itself, through its own checks);
 *   - no proxy from the environment (http_proxy, ALL_PROXY, ...): the
 *     operator's proxy when one is given, else none; no .netrc;
 *   - TLS verified (peer and host name, the proxy's too), against the
 *     system's CAs or the operator's CA file;
 *   - every address curl is about to connect to, after DNS, passes
 *     mcpx_addr_check with the allowed CIDRs (a name that resolves, or
 *     re-resolves, to a private address is refused where it matters), and
 *     a refusal is told apart from a failed connect (refused below);
 *   - a connection made under allowed CIDRs is closed after its request,
 *     so that a request not allowed to reach a private address can never
 *     reuse a connection to one from curl's connection cache;
 *   - the credential header exists only in the handle's header list, which
 *     is wiped before it is freed;
 *   - a total time, a connect time, and (when given) a response size cap.
 *
 * The owner gives its write and header callbacks in the spec, and sets
 * what belongs to its request on h->x.easy after mcpx_egress_handle_open:
 * the method and body. CURLOPT_PRIVATE belongs to the shared loop
 * (curl_loop.h).
 *
 * Ownership: the handle (easy, header list) is the owner's from open to
 * close; the spec's strings are copied by curl, except allow, which must
 * outlive the transfer.
 */
#ifndef MCPX_EGRESS_HANDLE_H
#define MCPX_EGRESS_HANDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "curl_loop.h"
#include "egress_check.h"

/* The connect time of a request, at most (its total time bounds it too). */
#define MCPX_EGRESS_CONNECT_TIMEOUT_MS 10000u

struct mcpx_egress_spec {
	const char *url;
	const struct mcpx_cidr *allow; /* private ranges it may reach */
	size_t n_allow;
	const char *cred_header; /* NULL: no credential */
	const char *cred_value;  /* "prefix + secret" */
	const char *proxy;       /* the operator's proxy, or NULL: none */
	const char *ca_file;     /* NULL: the system's CAs */
	uint64_t timeout_ms;     /* the whole transfer; 0: no end of its own */
	size_t max_bytes;        /* the response body's cap for curl; 0: the owner's */
	/* The owner's reading of the answer (curl's write and header
	 * callbacks), with arg. */
	size_t (*on_body)(char *p, size_t size, size_t n, void *arg);
	size_t (*on_header)(char *p, size_t size, size_t n, void *arg);
	void *arg;
};

struct mcpx_egress_handle {
	struct mcpx_curl_xfer x; /* x.easy: the handle; x.done: the owner's */
	struct curl_slist *hdrs;
	/* The connect check's verdict: MCPX_ADDR_PUBLIC unless curl was
	 * refused an address (refused_addr, as text). */
	enum mcpx_addr_class refused;
	char refused_addr[64];
	char errbuf[CURL_ERROR_SIZE];
	const struct mcpx_cidr *allow;
	size_t n_allow;
	bool check; /* no proxy: every connect is checked */
};

/* Appends "name: value" to *l (the credential, and the owner's headers).
 * Returns 0 or -ENOMEM (*l unchanged). */
int mcpx_egress_header(struct curl_slist **l, const char *name, const char *value);

/* Makes h's easy handle for s with the owner's headers (taken, also on
 * failure). h is zeroed first; its done is the owner's to set. Returns 0
 * or -ENOMEM (nothing to close). */
int mcpx_egress_handle_open(struct mcpx_egress_handle *h, const struct mcpx_egress_spec *s,
                            struct curl_slist *headers);

/* Stops h if it runs on cl, frees the easy handle and wipes and frees the
 * header list. h may be opened again. */
void mcpx_egress_handle_close(struct mcpx_egress_handle *h, struct mcpx_curl_loop *cl);

/* Whether a transfer that ended with rc failed because an address was
 * refused (rather than because the peer did not answer). */
bool mcpx_egress_refused(const struct mcpx_egress_handle *h, CURLcode rc);

#endif
