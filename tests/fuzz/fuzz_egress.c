/*
 * fuzz_egress.c - the egress checker's URL decisions (egress_check.h),
 * differential against curl's own URL API, which is what the transfer
 * uses: mcpx_url_parse, mcpx_url_prefix_parse and mcpx_url_prefix_match.
 *
 * Input: byte 0 picks the mode (bit 0: a second part is a base URL to
 * resolve against, as for a redirect; bit 1: the first part is a
 * url_prefix and the second a URL to match against it); the parts are
 * separated by the first NUL byte.
 *
 * Beyond the sanitizers it checks, for every URL the checker accepts:
 * - the URL it will request (u.full), parsed by curl_url() as the transfer
 *   parses it, has exactly the checker's host (CURLUPART_HOST), port and
 *   path: the host judged is the host connected to (issue 21: "0%2e0");
 * - without a base, curl_url() on the input itself gives the same host;
 * - ip_literal is true exactly when that host is an IPv4 address or in
 *   brackets, so the literal check cannot be skipped;
 * - the host holds no '%', no upper case, nothing outside ASCII;
 * - the path, percent-decoded until it no longer changes, has no segment
 *   that is "." or ".." (split at '/' and '\'), nor one that starts with
 *   ".." followed by ';' or a control character;
 * and for a match: same scheme and port, the host equal or under the
 * wildcard's domain, and the path starting with the prefix's path.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "egress_check.h"

static char *curl_host(const char *url, const char *base, long *port, char **path)
{
	CURLU *h = curl_url();
	char *host = NULL, *p = NULL, *ps = NULL;

	if (h && (!base || curl_url_set(h, CURLUPART_URL, base, 0) == CURLUE_OK) &&
	    curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
		if (port && curl_url_get(h, CURLUPART_PORT, &ps, CURLU_DEFAULT_PORT) == CURLUE_OK)
			*port = strtol(ps, NULL, 10);
		if (path && curl_url_get(h, CURLUPART_PATH, &p, 0) == CURLUE_OK)
			*path = p, p = NULL;
	}
	curl_free(ps);
	curl_free(p);
	curl_url_cleanup(h);
	return host;
}

static int hexval(unsigned char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* An independent, simpler statement of what the checker must refuse. */
static bool dot_segment(const char *path)
{
	size_t n = strlen(path), was;
	unsigned char *d = malloc(n + 1);
	bool bad = false;

	if (!d)
		return false;
	memcpy(d, path, n + 1);
	do {
		size_t o = 0;

		was = n;
		for (size_t i = 0; i < n; i++) {
			if (d[i] == '%' && i + 2 < n && hexval(d[i + 1]) >= 0 &&
			    hexval(d[i + 2]) >= 0) {
				d[o++] = (unsigned char)(hexval(d[i + 1]) << 4 | hexval(d[i + 2]));
				i += 2;
			} else {
				d[o++] = d[i];
			}
		}
		n = o;
	} while (n != was);
	for (size_t s = 0, i = 0; i <= n && !bad; i++) {
		if (i < n && d[i] != '/' && d[i] != '\\')
			continue;
		if ((i - s == 1 && d[s] == '.') || (i - s == 2 && d[s] == '.' && d[s + 1] == '.') ||
		    (i - s > 2 && d[s] == '.' && d[s + 1] == '.' &&
		     (d[s + 2] == ';' || d[s + 2] < 0x20)))
			bad = true;
		s = i + 1;
	}
	free(d);
	return bad;
}

static void check_url(const struct mcpx_url *u, const char *input, const char *base)
{
	struct in_addr a;
	char *host, *path = NULL;
	long port = -1;
	bool literal;

	host = curl_host(u->full, NULL, &port, &path);
	if (!host || strcmp(host, u->host) != 0 || port != (long)u->port || !path ||
	    strcmp(path, u->path) != 0)
		abort();
	curl_free(host);
	curl_free(path);
	if (!base) {
		host = curl_host(input, NULL, NULL, NULL);
		if (!host || strcasecmp(host, u->host) != 0)
			abort();
		curl_free(host);
	}
	literal = u->host[0] == '[' || inet_pton(AF_INET, u->host, &a) == 1;
	if (literal != u->ip_literal)
		abort();
	for (const char *c = u->host; *c; c++)
		if (*c == '%' || (*c >= 'A' && *c <= 'Z') || (unsigned char)*c >= 0x80)
			abort();
	if (strcmp(u->scheme, "http") != 0 && strcmp(u->scheme, "https") != 0)
		abort();
	if (dot_segment(u->path) || strchr(u->full, '#'))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *d = (const char *)data + 1, *sep;
	size_t n = size ? size - 1 : 0, first;
	char *a = NULL, *b = NULL, why[256];
	struct mcpx_url u;
	struct mcpx_url_prefix p;

	if (size < 2 || size > 8192)
		return 0;
	sep = memchr(d, '\0', n);
	first = sep ? (size_t)(sep - d) : n;
	a = strndup(d, first);
	if (sep)
		b = strndup(sep + 1, n - first - 1);
	if (!a || (sep && !b))
		goto out;
	if (data[0] & 2) {
		if (mcpx_url_prefix_parse(a, &p, why, sizeof(why)) < 0 || !b)
			goto out;
		if (mcpx_url_parse(b, strlen(b), NULL, &u, why, sizeof(why)) < 0)
			goto out;
		check_url(&u, b, NULL);
		if (mcpx_url_prefix_match(&p, &u)) {
			size_t hl = strlen(u.host), pl = strlen(p.host);

			if (strcmp(p.scheme, u.scheme) != 0 || p.port != u.port ||
			    strncmp(u.path, p.path, strlen(p.path)) != 0)
				abort();
			if (p.wildcard
			        ? (u.ip_literal || hl <= pl + 1 || u.host[hl - pl - 1] != '.' ||
			           strcmp(u.host + hl - pl, p.host) != 0)
			        : strcmp(u.host, p.host) != 0)
				abort();
		}
		mcpx_url_release(&u);
		goto out;
	}
	if (mcpx_url_parse(a, first, (data[0] & 1) ? b : NULL, &u, why, sizeof(why)) == 0) {
		check_url(&u, a, (data[0] & 1) ? b : NULL);
		mcpx_url_release(&u);
	} else if (!why[0]) {
		abort();
	}
out:
	free(a);
	free(b);
	return 0;
}
