/*
 * origin.c - DNS-rebinding protection: the Origin and Host header checks.
 *
 * A page on a foreign site can make a victim's browser send requests to a
 * server on the victim's loopback interface; the browser labels them with the
 * page's Origin. DNS rebinding goes further: the foreign name resolves to
 * 127.0.0.1, so only the Host header still names the attacker's domain. This
 * module answers two yes/no questions from those header values. Parsing is
 * strict and whole-string: a value is loopback only if it is nothing but a
 * loopback host (and port), so prefixes such as "http://localhost.evil.com"
 * never pass. It does not know about CORS responses, auth or listeners.
 */
#include "origin.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* True when [p, p+len) is a dotted-quad IPv4 address in 127.0.0.0/8. */
static bool is_loopback_ipv4(const char *p, size_t len)
{
	size_t i = 0;

	for (int octet = 0; octet < 4; octet++) {
		unsigned v = 0, digits = 0;
		if (octet > 0) {
			if (i >= len || p[i] != '.')
				return false;
			i++;
		}
		while (i < len && is_digit(p[i]) && digits < 3) {
			v = v * 10 + (unsigned)(p[i] - '0');
			digits++;
			i++;
		}
		if (digits == 0 || v > 255 || (octet == 0 && v != 127))
			return false;
	}
	return i == len;
}

/* True when [p, p+len) names a loopback host: localhost, 127.x.x.x or [::1]. */
static bool is_loopback_host(const char *p, size_t len)
{
	if (len == 9 && strncasecmp(p, "localhost", 9) == 0)
		return true;
	if (len == 5 && memcmp(p, "[::1]", 5) == 0)
		return true;
	return is_loopback_ipv4(p, len);
}

/* True when s is empty or ":" followed by 1 to 5 digits up to 65535. */
static bool is_port_or_empty(const char *s, size_t len)
{
	unsigned long v = 0;

	if (len == 0)
		return true;
	if (s[0] != ':' || len < 2 || len > 6)
		return false;
	for (size_t i = 1; i < len; i++) {
		if (!is_digit(s[i]))
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	return v <= 65535;
}

/* Splits "host[:port]" into the host part; IPv6 literals keep their
 * brackets. Returns the host's length, or (size_t)-1 when malformed. */
static size_t host_part(const char *s, size_t len)
{
	if (len > 0 && s[0] == '[') {
		const char *end = memchr(s, ']', len);
		return end ? (size_t)(end - s) + 1 : (size_t)-1;
	}
	const char *colon = memchr(s, ':', len);
	return colon ? (size_t)(colon - s) : len;
}

/* True when "host[:port]" is a loopback host with an optional valid port. */
static bool is_loopback_authority(const char *s, size_t len)
{
	size_t h = host_part(s, len);

	return h != (size_t)-1 && is_loopback_host(s, h) && is_port_or_empty(s + h, len - h);
}

/* True when origin is http(s)://<loopback>[:port][/]. */
static bool is_loopback_origin(const char *origin)
{
	size_t len = strlen(origin);
	const char *rest;

	if (strncasecmp(origin, "http://", 7) == 0)
		rest = origin + 7;
	else if (strncasecmp(origin, "https://", 8) == 0)
		rest = origin + 8;
	else
		return false;
	len -= (size_t)(rest - origin);
	/* An Origin has no path; a lone trailing slash is tolerated because
	 * some clients send one, anything more is not an origin. */
	if (len > 0 && rest[len - 1] == '/')
		len--;
	return is_loopback_authority(rest, len);
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Case-insensitive equality after dropping one trailing slash from each.
 * Origins carry only scheme, host and port, all case-insensitive (ports are
 * digits), so comparing the whole string without case is exact matching. */
static bool origin_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	if (alen > 0 && a[alen - 1] == '/')
		alen--;
	if (blen > 0 && b[blen - 1] == '/')
		blen--;
	return alen > 0 && alen == blen && strncasecmp(a, b, alen) == 0;
}

bool mcpx_origin_allowed(const char *origin, const char *allowed_csv)
{
	size_t olen;

	/* Non-browser clients send no Origin; they are not the threat here. */
	if (!origin || !origin[0])
		return true;
	/* "null" is what sandboxed iframes and file:// pages send: it names no
	 * site, so it can never be trusted, even if someone listed it. */
	if (strcasecmp(origin, "null") == 0)
		return false;
	if (is_loopback_origin(origin))
		return true;

	olen = strlen(origin);
	for (const char *p = allowed_csv; p && *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		const char *e = p;
		size_t elen = n;

		while (elen > 0 && is_space(e[0])) {
			e++;
			elen--;
		}
		while (elen > 0 && is_space(e[elen - 1]))
			elen--;
		if (origin_equal(origin, olen, e, elen))
			return true;
		p = end ? end + 1 : p + n;
	}
	return false;
}

bool mcpx_host_allowed(const char *host, bool loopback_listener)
{
	/* A public listener is reached by names we cannot predict (Services,
	 * Ingresses); auth protects it instead. */
	if (!loopback_listener)
		return true;
	/* HTTP/1.1 requires Host; a request without one is not a browser's and
	 * gets no benefit of the doubt on a loopback listener. */
	if (!host || !host[0])
		return false;
	return is_loopback_authority(host, strlen(host));
}
