/*
 * egress_check.c - the broker's pure decisions (egress_check.h): URLs and
 * url_prefix matching, methods and headers. The address classes and CIDRs
 * (the SSRF table) are egress_addr.c's.
 *
 * URLs go through libcurl's URL API only, so the broker and the
 * transfer agree on what a URL means (curl also normalises dot segments and
 * numeric IPv4 forms such as "2130706433" before anything is compared).
 *
 * What it does not do: resolve names, connect, or know about runs. It keeps
 * no state and allocates only the URL strings curl hands back.
 */
#include "egress_check.h"

#include "curl_lib.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"

/* ---- URLs ---------------------------------------------------------------- */

static void lower(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

/* Copies one part of h into buf; -EINVAL when it is missing or too long. */
static int get_part(CURLU *h, CURLUPart part, unsigned flags, char *buf, size_t cap)
{
	char *v = NULL;
	int rc = -EINVAL;

	if (mcpx_curl_url_get(h, part, &v, flags) == CURLUE_OK && v && strlen(v) < cap) {
		strcpy(buf, v);
		rc = 0;
	}
	mcpx_curl_free(v);
	return rc;
}

static bool has_part(CURLU *h, CURLUPart part)
{
	char *v = NULL;
	bool has = mcpx_curl_url_get(h, part, &v, 0) == CURLUE_OK;

	mcpx_curl_free(v);
	return has;
}

/* Percent-decodes the n bytes at s in place (the result may hold NUL
 * bytes) and returns the new length. */
static size_t pct_decode(unsigned char *s, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int hi = i + 2 < n ? mcpx_hex_value(s[i + 1]) : -1,
		    lo = hi >= 0 ? mcpx_hex_value(s[i + 2]) : -1;

		if (s[i] == '%' && lo >= 0) {
			s[o++] = (unsigned char)(hi << 4 | lo);
			i += 2;
		} else {
			s[o++] = s[i];
		}
	}
	return o;
}

/* How many bytes at s (n left) spell a '.' or a '/' in a form some server
 * may read as one: the byte itself, the overlong UTF-8 forms Java and old
 * IIS decoders accepted (C0 AE, E0 80 AE, F0 80 80 AE) and the fullwidth
 * and one-dot-leader characters NFKC folds to '.' (U+FF0E, U+2024), the
 * fullwidth solidus (U+FF0F) and '\\'. *c gets '.', '/' or the byte. */
static size_t spelled(const unsigned char *s, size_t n, unsigned char *c)
{
	static const struct {
		const char *bytes;
		unsigned char as;
	} forms[] = {
	    {"\xc0\xae", '.'},     {"\xe0\x80\xae", '.'},     {"\xf0\x80\x80\xae", '.'},
	    {"\xef\xbc\x8e", '.'}, {"\xe2\x80\xa4", '.'},     {"\xc0\xaf", '/'},
	    {"\xe0\x80\xaf", '/'}, {"\xf0\x80\x80\xaf", '/'}, {"\xef\xbc\x8f", '/'},
	    {"\xc1\x9c", '/'},
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		size_t l = strlen(forms[i].bytes);

		if (l <= n && memcmp(s, forms[i].bytes, l) == 0) {
			*c = forms[i].as;
			return l;
		}
	}
	*c = s[0] == '\\' ? '/' : s[0];
	return 1;
}

/* A dot segment that curl could not remove because it is disguised may
 * still be obeyed by the server behind the prefix: "/%2e%2e/", "/.%2E/",
 * "/x%2f..%2fy", "/..;/" and "/%2e%2e%3b/" (Tomcat and Spring drop what
 * follows ';' in a segment), "/..%00/" and "/..%09/" (servers that stop at
 * NUL or trim control characters and spaces), overlong UTF-8 dots
 * ("%c0%ae%c0%ae") and fullwidth ones. The path is decoded until it no
 * longer changes; each segment (split at '/', '\\' and their disguises) is
 * cut at its first ';' or control character (a server may stop reading
 * there: "..%00x" is ".." to C code), and refused when what is left is only
 * dots and spaces, with at least one dot. Refused outright, so a prefix can
 * never be escaped that way. */
static bool hidden_dot_segment(const char *path)
{
	unsigned char dec[MCPX_PATH_MAX];
	size_t n = strlen(path), was;
	bool dots = false, only = true, cut = false;

	/* Decoded until nothing changes (a proxy and the server behind it may
	 * each decode once: "%252e" is "%2e" to the second). */
	memcpy(dec, path, n < sizeof(dec) ? n : sizeof(dec) - 1);
	n = n < sizeof(dec) ? n : sizeof(dec) - 1;
	do {
		was = n;
		n = pct_decode(dec, n);
	} while (n != was);

	for (size_t i = 0;;) {
		unsigned char c = '/';
		size_t step = i < n ? spelled(dec + i, n - i, &c) : 1;

		if (c == '/' || i >= n) {
			if (dots && only)
				return true;
			dots = false, only = true, cut = false;
			if (i >= n)
				return false;
		} else if (!cut) {
			if (c == ';' || c < 0x20 || c == 0x7f)
				cut = true;
			else if (c == '.')
				dots = true;
			else if (c != ' ')
				only = false;
		}
		i += step;
	}
}

static bool is_ip_literal(const char *host)
{
	struct in_addr a;

	return host[0] == '[' || inet_pton(AF_INET, host, &a) == 1;
}

/* Whether the authority of url as written (after "scheme:" and the
 * slashes, up to the path, query or fragment) holds a '%'. curl decodes the
 * host after it normalised IPv4 forms, so "0%2e0" is the name "0.0" to the
 * URL API but 0.0.0.0 once the rendered URL is parsed again for the
 * transfer: a host that changes under decoding is refused. */
static bool authority_has_pct(const char *url)
{
	const char *p = url, *q;

	for (q = p; (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
	            (q > p && ((*q >= '0' && *q <= '9') || *q == '+' || *q == '-' || *q == '.'));
	     q++)
		;
	if (q > p && *q == ':')
		p = q + 1;
	else if (!((p[0] == '/' || p[0] == '\\') && (p[1] == '/' || p[1] == '\\')))
		return false;
	while (*p == '/' || *p == '\\')
		p++;
	for (; *p && !strchr("/\\?#", *p); p++)
		if (*p == '%')
			return true;
	return false;
}

/* Whether the host curl connects to is the host the checker judges: the
 * URL as it will be requested, parsed again, must give the same host (an
 * IPv4 form that only appears after decoding would not). */
static bool host_is_stable(CURLU *h, const char *host)
{
	CURLU *again = mcpx_curl_url();
	char *full = NULL, *h2 = NULL;
	bool same = false;

	if (again && mcpx_curl_url_get(h, CURLUPART_URL, &full, 0) == CURLUE_OK &&
	    mcpx_curl_url_set(again, CURLUPART_URL, full, 0) == CURLUE_OK &&
	    mcpx_curl_url_get(again, CURLUPART_HOST, &h2, 0) == CURLUE_OK)
		same = strcasecmp(h2, host) == 0;
	mcpx_curl_free(h2);
	mcpx_curl_free(full);
	mcpx_curl_url_cleanup(again);
	return same;
}

/* Loads url (resolved against base when given) into h and checks what every
 * URL the broker handles must satisfy. */
static int load_url(CURLU *h, const char *url, const char *base, char *why, size_t whylen)
{
	CURLUcode uc;
	char scheme[16];

	if (base && mcpx_curl_url_set(h, CURLUPART_URL, base, 0) != CURLUE_OK) {
		snprintf(why, whylen, "the base URL is not valid");
		return -EINVAL;
	}
	if (authority_has_pct(url)) {
		snprintf(why, whylen, "percent-encoding is not allowed in the host name");
		return -EINVAL;
	}
	uc = mcpx_curl_url_set(h, CURLUPART_URL, url, CURLU_DISALLOW_USER);
	if (uc != CURLUE_OK) {
		snprintf(why, whylen, "not a valid URL (%s)",
		         uc == CURLUE_USER_NOT_ALLOWED ? "user names and passwords are not allowed"
		                                       : mcpx_curl_url_strerror(uc));
		return -EINVAL;
	}
	if (get_part(h, CURLUPART_SCHEME, 0, scheme, sizeof(scheme)) < 0 ||
	    (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
		snprintf(why, whylen, "only http and https URLs are allowed");
		return -EINVAL;
	}
	if (has_part(h, CURLUPART_ZONEID)) {
		snprintf(why, whylen, "IPv6 zone ids are not allowed");
		return -EINVAL;
	}
	return 0;
}

/* The parts every parsed URL has: scheme, host, port and path. */
static int fill_parts(CURLU *h, char *scheme, char *host, unsigned *port, char *path, char *why,
                      size_t whylen)
{
	char portbuf[8];

	if (get_part(h, CURLUPART_SCHEME, 0, scheme, 8) < 0 ||
	    get_part(h, CURLUPART_HOST, 0, host, MCPX_HOST_MAX) < 0 || !host[0]) {
		snprintf(why, whylen, "the URL has no usable host name");
		return -EINVAL;
	}
	/* Debian's curl 7.88 cannot hand back punycode (CURLU_PUNYCODE fails),
	 * and a rule must compare names the way DNS sees them. */
	for (const char *c = host; *c; c++) {
		if ((unsigned char)*c >= 0x80) {
			snprintf(why, whylen,
			         "write international host names in their "
			         "punycode form (xn--...)");
			return -EINVAL;
		}
	}
	lower(host);
	/* A '%' curl kept (not a valid escape, or from a base URL) is not a
	 * host name DNS knows either. */
	if (strchr(host, '%')) {
		snprintf(why, whylen, "percent-encoding is not allowed in the host name");
		return -EINVAL;
	}
	if (!host_is_stable(h, host)) {
		snprintf(why, whylen, "the host name changes when the URL is parsed again");
		return -EINVAL;
	}
	if (get_part(h, CURLUPART_PORT, CURLU_DEFAULT_PORT, portbuf, sizeof(portbuf)) < 0) {
		snprintf(why, whylen, "the URL has no port");
		return -EINVAL;
	}
	*port = (unsigned)strtoul(portbuf, NULL, 10);
	/* curl takes ":0", which nothing listens on and no rule should name. */
	if (*port == 0 || *port > 65535) {
		snprintf(why, whylen, "the URL's port must be 1..65535");
		return -EINVAL;
	}
	if (get_part(h, CURLUPART_PATH, 0, path, MCPX_PATH_MAX) < 0) {
		snprintf(why, whylen, "the URL's path is longer than %d bytes", MCPX_PATH_MAX - 1);
		return -EINVAL;
	}
	if (hidden_dot_segment(path)) {
		snprintf(why, whylen, "the path hides a dot segment behind percent-encoding");
		return -EINVAL;
	}
	return 0;
}

int mcpx_url_parse(const char *url, size_t len, const char *base, struct mcpx_url *out, char *why,
                   size_t whylen)
{
	CURLU *h = NULL;
	char *copy = NULL;
	int rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (len == 0 || len >= MCPX_URL_MAX || memchr(url, '\0', len)) {
		snprintf(why, whylen, "the URL must be 1..%d bytes without NUL", MCPX_URL_MAX - 1);
		return -EINVAL;
	}
	copy = malloc(len + 1);
	h = mcpx_curl_url();
	if (!copy || !h) {
		snprintf(why, whylen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	memcpy(copy, url, len);
	copy[len] = '\0';
	if (load_url(h, copy, base, why, whylen) < 0 ||
	    fill_parts(h, out->scheme, out->host, &out->port, out->path, why, whylen) < 0)
		goto out;
	out->ip_literal = is_ip_literal(out->host);
	/* What is requested is exactly what was matched: the host as compared
	 * (lower case), and no fragment (it is never sent). */
	if (mcpx_curl_url_set(h, CURLUPART_HOST, out->host, 0) != CURLUE_OK ||
	    mcpx_curl_url_set(h, CURLUPART_FRAGMENT, NULL, 0) != CURLUE_OK ||
	    mcpx_curl_url_get(h, CURLUPART_URL, &out->full, 0) != CURLUE_OK ||
	    strlen(out->full) >= MCPX_URL_MAX) {
		snprintf(why, whylen, "the URL cannot be rendered within %d bytes",
		         MCPX_URL_MAX - 1);
		mcpx_url_release(out);
		goto out;
	}
	rc = 0;
out:
	mcpx_curl_url_cleanup(h);
	free(copy);
	return rc;
}

void mcpx_url_release(struct mcpx_url *u)
{
	mcpx_curl_free(u->full);
	u->full = NULL;
}

int mcpx_url_prefix_parse(const char *s, struct mcpx_url_prefix *out, char *why, size_t whylen)
{
	const char *sep = strstr(s, "://");
	char buf[MCPX_URL_MAX];
	CURLU *h = NULL;
	int rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (strlen(s) >= sizeof(buf)) {
		snprintf(why, whylen, "longer than %zu bytes", sizeof(buf) - 1);
		return -EINVAL;
	}
	strcpy(buf, s);
	/* curl's host syntax has no wildcard: "*." stands in as a label that
	 * is stripped again after parsing. */
	if (sep && sep[3] == '*' && sep[4] == '.') {
		out->wildcard = true;
		buf[sep - s + 3] = 'x';
	}
	if (!(h = mcpx_curl_url())) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (load_url(h, buf, NULL, why, whylen) < 0 ||
	    fill_parts(h, out->scheme, out->host, &out->port, out->path, why, whylen) < 0)
		goto out;
	if (has_part(h, CURLUPART_QUERY) || has_part(h, CURLUPART_FRAGMENT) ||
	    strchr(out->host, '*')) {
		snprintf(why, whylen,
		         "a url_prefix has no query, fragment, or '*' but a leading \"*.\"");
		goto out;
	}
	if (out->wildcard) {
		memmove(out->host, out->host + 2, strlen(out->host + 2) + 1);
		if (!strpbrk(out->host, "abcdefghijklmnopqrstuvwxyz") || is_ip_literal(out->host)) {
			snprintf(why, whylen, "a wildcard must stand before a domain name");
			goto out;
		}
	}
	rc = 0;
out:
	mcpx_curl_url_cleanup(h);
	return rc;
}

bool mcpx_url_prefix_match(const struct mcpx_url_prefix *p, const struct mcpx_url *u)
{
	size_t hl = strlen(u->host), sl = strlen(p->host), pl = strlen(p->path);

	if (strcmp(p->scheme, u->scheme) != 0 || p->port != u->port)
		return false;
	if (p->wildcard) {
		if (u->ip_literal || hl <= sl + 1 || u->host[hl - sl - 1] != '.' ||
		    strcmp(u->host + hl - sl, p->host) != 0)
			return false;
	} else if (strcmp(p->host, u->host) != 0) {
		return false;
	}
	if (strncmp(u->path, p->path, pl) != 0)
		return false;
	return p->path[pl - 1] == '/' || u->path[pl] == '\0' || u->path[pl] == '/';
}

/* ---- methods and headers ----------------------------------------------- */

bool mcpx_method_valid(const char *m, size_t len)
{
	if (len == 0 || len > 16)
		return false;
	for (size_t i = 0; i < len; i++)
		if (m[i] < 'A' || m[i] > 'Z')
			return false;
	return true;
}

/* RFC 9110 token characters. */
static bool tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool name_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

/* Headers the broker owns, and why run code may not set them. */
static const struct {
	const char *name;
	const char *why;
} owned_headers[] = {
    {"host", "Host is set from the URL"},
    {"content-length", "Content-Length is set by the broker"},
    {"transfer-encoding", "Transfer-Encoding is set by the broker"},
    {"expect", "Expect is set by the broker"},
    {"accept-encoding", "Accept-Encoding is set by the broker, which decodes the response"},
    {"connection", "Connection is a hop-by-hop header"},
    {"keep-alive", "Keep-Alive is a hop-by-hop header"},
    {"te", "TE is a hop-by-hop header"},
    {"trailer", "Trailer is a hop-by-hop header"},
    {"upgrade", "Upgrade is a hop-by-hop header"},
};

const char *mcpx_shown_name(const char *s, size_t max)
{
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e)
			return "(unprintable)";
	return strlen(s) > max ? "(a long name)" : s;
}

const char *mcpx_header_refusal(const char *name, size_t name_len, const char *value,
                                size_t value_len, const char *cred_header)
{
	if (name_len == 0 || name_len > 128)
		return "a header name must be 1..128 characters";
	for (size_t i = 0; i < name_len; i++)
		if (!tchar((unsigned char)name[i]))
			return "a header name may only contain HTTP token characters (no CR, LF, "
			       "spaces or colons)";
	if (value_len > 16384)
		return "a header value may be at most 16384 bytes";
	for (size_t i = 0; i < value_len; i++) {
		unsigned char c = (unsigned char)value[i];

		if (c == '\r' || c == '\n' || c == '\0')
			return "a header value may not contain CR, LF or NUL";
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return "a header value may not contain control characters";
	}
	for (size_t i = 0; i < sizeof(owned_headers) / sizeof(owned_headers[0]); i++)
		if (name_is(name, name_len, owned_headers[i].name))
			return owned_headers[i].why;
	if (name_len >= 6 && strncasecmp(name, "proxy-", 6) == 0)
		return "Proxy-* headers are not allowed";
	if (cred_header && name_is(name, name_len, cred_header))
		return "this header carries the rule's credential, which the broker sets";
	return NULL;
}
