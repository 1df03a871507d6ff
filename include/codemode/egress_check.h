/*
 * egress_check.h - the egress broker's pure decisions: which addresses a
 * request may connect to (egress_addr.h, included), which URLs a rule's
 * url_prefix covers, and which request headers run code may set.
 *
 * Nothing here does I/O or keeps state; the policy module uses the URL and
 * CIDR parsers for the policy file, the broker uses all of it per request
 * (and per redirect hop, and per address curl is about to connect to). URLs
 * are parsed by libcurl's URL API (CURLU), never by hand.
 */
#ifndef MCPX_EGRESS_CHECK_H
#define MCPX_EGRESS_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Which addresses a request may connect to (egress_addr.c). */
#include "egress_addr.h"

/* ---- URLs ---------------------------------------------------------------- */

#define MCPX_URL_MAX 8192
#define MCPX_HOST_MAX 256
#define MCPX_PATH_MAX 4096

/* A request URL as the broker sees it, from curl's URL API. */
struct mcpx_url {
	char scheme[8];           /* "http" or "https" */
	char host[MCPX_HOST_MAX]; /* lower case ASCII; IPv6 in brackets */
	unsigned port;            /* explicit, or the scheme's default */
	char path[MCPX_PATH_MAX]; /* normalised by curl ("/a/../b" is "/b"), no query */
	bool ip_literal;          /* host is an address, not a name */
	char *full;               /* what is requested (with query, no fragment); curl_free */
};

/* Parses an absolute http(s) URL of len bytes (no NUL inside). Refuses other
 * schemes, user names and passwords, IPv6 zone ids, non-ASCII host names
 * (they must be given in punycode), host names written with '%' or that
 * change when the rendered URL is parsed again (so the host judged is the
 * host curl connects to), and paths with a disguised dot segment
 * ("/a/%2e%2e/b", "/a/..;/b", "/a/..%00/b", overlong UTF-8 dots: see
 * hidden_dot_segment in egress_check.c). base, when not NULL,
 * resolves url relative to it (a redirect's Location). On success fill
 * *out (release with mcpx_url_release). Returns 0 or -EINVAL with why. */
int mcpx_url_parse(const char *url, size_t len, const char *base, struct mcpx_url *out, char *why,
                   size_t whylen);
void mcpx_url_release(struct mcpx_url *u);

/* A rule's url_prefix: scheme://host[:port]/path-prefix, host either exact
 * or "*.suffix" (any name ending in ".suffix", not the suffix itself). */
struct mcpx_url_prefix {
	char scheme[8];
	char host[MCPX_HOST_MAX]; /* the suffix after "*." when wildcard */
	bool wildcard;
	unsigned port;
	char path[MCPX_PATH_MAX];
};

/* Parses a url_prefix; no query, fragment or credentials. Returns 0 or
 * -EINVAL with why. */
int mcpx_url_prefix_parse(const char *s, struct mcpx_url_prefix *out, char *why, size_t whylen);

/* True when u is covered: same scheme and port, the host equal (or under
 * the wildcard's suffix; an address never matches a wildcard), and the path
 * equal to the prefix's or below it at a segment boundary ("/v1" covers
 * "/v1" and "/v1/x", not "/v1beta"; "/v1/" covers "/v1/x"). */
bool mcpx_url_prefix_match(const struct mcpx_url_prefix *p, const struct mcpx_url *u);

/* ---- methods and headers ----------------------------------------------- */

/* An HTTP method as rules and requests spell it: 1..16 upper-case letters. */
bool mcpx_method_valid(const char *m, size_t len);

/* s when it is visible ASCII of at most max bytes, else "(unprintable)"
 * or "(a long name)": only names a caller could have meant are echoed back
 * in a refusal (a header's, a tool's). */
const char *mcpx_shown_name(const char *s, size_t max);

/* Why run code may not send this header, or NULL when it may. Refused:
 * names that are not HTTP tokens, values with CR, LF, NUL or other control
 * characters, Host, Content-Length, Transfer-Encoding, Expect,
 * Accept-Encoding (the broker sets and decodes it), hop-by-hop headers
 * (Connection, Keep-Alive, TE, Trailer, Upgrade), every Proxy-* header,
 * and the matched rule's credential header (cred_header, may be NULL). */
const char *mcpx_header_refusal(const char *name, size_t name_len, const char *value,
                                size_t value_len, const char *cred_header);

#endif
