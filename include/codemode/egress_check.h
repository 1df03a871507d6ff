/*
 * egress_check.h - the egress broker's pure decisions: which addresses a
 * request may connect to, which URLs a rule's url_prefix covers, and which
 * request headers run code may set.
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

/* ---- addresses ---------------------------------------------------------- */

/* Why an address is refused unless a rule's allow_cidrs contains it. */
enum mcpx_addr_class {
	MCPX_ADDR_PUBLIC = 0,  /* anything else: allowed */
	MCPX_ADDR_LOOPBACK,    /* 127.0.0.0/8, ::1 */
	MCPX_ADDR_PRIVATE,     /* RFC 1918: 10/8, 172.16/12, 192.168/16; fec0::/10 */
	MCPX_ADDR_LINK_LOCAL,  /* 169.254.0.0/16 (cloud metadata), fe80::/10 */
	MCPX_ADDR_CGNAT,       /* 100.64.0.0/10 */
	MCPX_ADDR_ULA,         /* fc00::/7 */
	MCPX_ADDR_UNSPECIFIED, /* 0.0.0.0/8, :: */
	MCPX_ADDR_MULTICAST,   /* 224.0.0.0/4, ff00::/8 */
	MCPX_ADDR_RESERVED,    /* 192.0.0.0/24, 198.18.0.0/15, 240.0.0.0/4, 2001:db8::/32 */
	MCPX_ADDR_UNSUPPORTED, /* not IPv4 or IPv6 */
};

/* "loopback", "private", "link-local", ... ("public" for MCPX_ADDR_PUBLIC). */
const char *mcpx_addr_class_name(enum mcpx_addr_class c);

/* One range of allow_cidrs. IPv4 ranges are kept as IPv4; an IPv4-mapped
 * IPv6 address is compared as the IPv4 address it carries. */
struct mcpx_cidr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	unsigned bits;
};

/* Parses "a.b.c.d/n", "x:y::z/n", or an address alone (/32, /128). Host bits
 * beyond the prefix must be zero. Returns 0 or -EINVAL with why set. */
int mcpx_cidr_parse(const char *s, struct mcpx_cidr *out, char *why, size_t whylen);

/* The class of the address curl is about to connect to. IPv6 addresses that
 * carry an IPv4 address (v4-mapped ::ffff:0:0/96, v4-compatible ::/96, the
 * NAT64 prefixes 64:ff9b::/96 and 64:ff9b:1::/48) are classified as that
 * IPv4 address, so 64:ff9b::a9fe:a9fe is the metadata address it reaches. */
enum mcpx_addr_class mcpx_addr_classify(const struct sockaddr *sa, socklen_t len);

/* The connect decision: MCPX_ADDR_PUBLIC when the address may be used, else
 * the class that refuses it. Addresses inside one of allow[0..n) are
 * allowed whatever their class. */
enum mcpx_addr_class mcpx_addr_check(const struct sockaddr *sa, socklen_t len,
                                     const struct mcpx_cidr *allow, size_t n);

/* Renders the address (without port) for messages; buf of 64 bytes. */
void mcpx_addr_text(const struct sockaddr *sa, socklen_t len, char *buf, size_t cap);

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
