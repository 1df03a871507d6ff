/*
 * test_egress_check.c - the broker's pure decisions: the SSRF address
 * classifier (v4, v6, and IPv6 forms that carry an IPv4 address), CIDRs and
 * allow_cidrs, URL parsing through curl's URL API, url_prefix matching, and
 * the request header filter.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "egress_check.h"

static socklen_t make_addr(const char *text, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(text, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		CHECK(inet_pton(AF_INET6, text, &s6->sin6_addr) == 1);
		return sizeof(*s6);
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	s4->sin_family = AF_INET;
	CHECK(inet_pton(AF_INET, text, &s4->sin_addr) == 1);
	return sizeof(*s4);
}

static enum mcpx_addr_class cls(const char *text)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(text, &ss);

	return mcpx_addr_classify((struct sockaddr *)&ss, len);
}

#define CHECK_CLASS(text, want)                                                                    \
	do {                                                                                       \
		enum mcpx_addr_class got_ = cls(text);                                             \
		if (got_ != (want)) {                                                              \
			fprintf(stderr, "%s:%d: %s is %s, expected %s\n", __FILE__, __LINE__,      \
			        text, mcpx_addr_class_name(got_), mcpx_addr_class_name(want));     \
			check_failures++;                                                          \
		}                                                                                  \
	} while (0)

static void test_classify(void)
{
	CHECK_CLASS("8.8.8.8", MCPX_ADDR_PUBLIC);
	CHECK_CLASS("127.0.0.1", MCPX_ADDR_LOOPBACK);
	CHECK_CLASS("127.255.0.7", MCPX_ADDR_LOOPBACK);
	CHECK_CLASS("10.1.2.3", MCPX_ADDR_PRIVATE);
	CHECK_CLASS("172.16.0.1", MCPX_ADDR_PRIVATE);
	CHECK_CLASS("172.31.255.255", MCPX_ADDR_PRIVATE);
	CHECK_CLASS("172.32.0.1", MCPX_ADDR_PUBLIC);
	CHECK_CLASS("192.168.1.1", MCPX_ADDR_PRIVATE);
	CHECK_CLASS("169.254.169.254", MCPX_ADDR_LINK_LOCAL);
	CHECK_CLASS("100.64.0.1", MCPX_ADDR_CGNAT);
	CHECK_CLASS("100.127.255.255", MCPX_ADDR_CGNAT);
	CHECK_CLASS("100.128.0.1", MCPX_ADDR_PUBLIC);
	CHECK_CLASS("0.0.0.0", MCPX_ADDR_UNSPECIFIED);
	CHECK_CLASS("0.1.2.3", MCPX_ADDR_UNSPECIFIED);
	CHECK_CLASS("224.0.0.1", MCPX_ADDR_MULTICAST);
	CHECK_CLASS("239.255.255.250", MCPX_ADDR_MULTICAST);
	CHECK_CLASS("255.255.255.255", MCPX_ADDR_RESERVED);
	CHECK_CLASS("198.19.0.1", MCPX_ADDR_RESERVED);
	CHECK_CLASS("::1", MCPX_ADDR_LOOPBACK);
	CHECK_CLASS("::", MCPX_ADDR_UNSPECIFIED);
	CHECK_CLASS("fe80::1", MCPX_ADDR_LINK_LOCAL);
	CHECK_CLASS("febf::1", MCPX_ADDR_LINK_LOCAL);
	CHECK_CLASS("fec0::1", MCPX_ADDR_PRIVATE);
	CHECK_CLASS("fd00::1", MCPX_ADDR_ULA);
	CHECK_CLASS("fc12::1", MCPX_ADDR_ULA);
	CHECK_CLASS("ff02::1", MCPX_ADDR_MULTICAST);
	CHECK_CLASS("2001:db8::1", MCPX_ADDR_RESERVED);
	CHECK_CLASS("2606:4700::1111", MCPX_ADDR_PUBLIC);
	/* IPv6 forms that reach an IPv4 address are judged by that address. */
	CHECK_CLASS("::ffff:127.0.0.1", MCPX_ADDR_LOOPBACK);
	CHECK_CLASS("::ffff:169.254.169.254", MCPX_ADDR_LINK_LOCAL);
	CHECK_CLASS("::ffff:10.0.0.1", MCPX_ADDR_PRIVATE);
	CHECK_CLASS("::ffff:8.8.8.8", MCPX_ADDR_PUBLIC);
	CHECK_CLASS("::127.0.0.1", MCPX_ADDR_LOOPBACK);
	CHECK_CLASS("64:ff9b::a9fe:a9fe", MCPX_ADDR_LINK_LOCAL);
	CHECK_CLASS("64:ff9b:1::10.0.0.1", MCPX_ADDR_PRIVATE);
	CHECK_CLASS("64:ff9b::8.8.8.8", MCPX_ADDR_PUBLIC);
	{
		struct sockaddr sa = {.sa_family = AF_UNIX};
		CHECK(mcpx_addr_classify(&sa, sizeof(sa)) == MCPX_ADDR_UNSUPPORTED);
	}
	CHECK_STR(mcpx_addr_class_name(MCPX_ADDR_LINK_LOCAL), "link-local");
}

static enum mcpx_addr_class check_with(const char *text, const char *const *cidrs, size_t n)
{
	struct mcpx_cidr allow[8];
	struct sockaddr_storage ss;
	socklen_t len = make_addr(text, &ss);
	char why[128];

	for (size_t i = 0; i < n; i++)
		CHECK_INT(mcpx_cidr_parse(cidrs[i], &allow[i], why, sizeof(why)), 0);
	return mcpx_addr_check((struct sockaddr *)&ss, len, allow, n);
}

static void test_allow_cidrs(void)
{
	static const char *const lo[] = {"127.0.0.1/32"};
	static const char *const ten[] = {"10.0.0.0/8", "fd00::/8"};
	static const char *const mapped[] = {"::ffff:10.0.0.0/104"};
	static const char *const single[] = {"169.254.169.254"};
	struct mcpx_cidr c;
	char why[128];

	CHECK(check_with("127.0.0.1", lo, 1) == MCPX_ADDR_PUBLIC);
	CHECK(check_with("127.0.0.2", lo, 1) == MCPX_ADDR_LOOPBACK);
	CHECK(check_with("::ffff:127.0.0.1", lo, 1) == MCPX_ADDR_PUBLIC);
	CHECK(check_with("::1", lo, 1) == MCPX_ADDR_LOOPBACK);
	CHECK(check_with("127.0.0.1", NULL, 0) == MCPX_ADDR_LOOPBACK);
	CHECK(check_with("10.9.8.7", ten, 2) == MCPX_ADDR_PUBLIC);
	CHECK(check_with("fd12::1", ten, 2) == MCPX_ADDR_PUBLIC);
	CHECK(check_with("192.168.0.1", ten, 2) == MCPX_ADDR_PRIVATE);
	CHECK(check_with("10.1.1.1", mapped, 1) == MCPX_ADDR_PUBLIC);
	CHECK(check_with("169.254.169.254", single, 1) == MCPX_ADDR_PUBLIC);
	CHECK(check_with("169.254.169.253", single, 1) == MCPX_ADDR_LINK_LOCAL);
	/* Public addresses never need an allowance. */
	CHECK(check_with("1.1.1.1", NULL, 0) == MCPX_ADDR_PUBLIC);

	CHECK_INT(mcpx_cidr_parse("10.0.0.1/8", &c, why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "host bits") != NULL);
	CHECK_INT(mcpx_cidr_parse("10.0.0.0/33", &c, why, sizeof(why)), -EINVAL);
	CHECK_INT(mcpx_cidr_parse("10.0.0.0/", &c, why, sizeof(why)), -EINVAL);
	CHECK_INT(mcpx_cidr_parse("/8", &c, why, sizeof(why)), -EINVAL);
	CHECK_INT(mcpx_cidr_parse("example.com", &c, why, sizeof(why)), -EINVAL);
	CHECK_INT(mcpx_cidr_parse("10.0.0.0/8x", &c, why, sizeof(why)), -EINVAL);
	CHECK_INT(mcpx_cidr_parse("fd00::/129", &c, why, sizeof(why)), -EINVAL);
	CHECK_INT(mcpx_cidr_parse("0.0.0.0/0", &c, why, sizeof(why)), 0);
}

static void test_urls(void)
{
	struct mcpx_url u;
	char why[160];

#define PARSE(s) mcpx_url_parse((s), strlen(s), NULL, &u, why, sizeof(why))
	CHECK_INT(PARSE("https://API.Example.com/v1/a/../b?x=1#frag"), 0);
	CHECK_STR(u.scheme, "https");
	CHECK_STR(u.host, "api.example.com");
	CHECK_INT(u.port, 443);
	CHECK_STR(u.path, "/v1/b");
	CHECK(!u.ip_literal);
	CHECK_STR(u.full, "https://api.example.com/v1/b?x=1");
	mcpx_url_release(&u);

	CHECK_INT(PARSE("http://127.0.0.1:8080"), 0);
	CHECK_INT(u.port, 8080);
	CHECK_STR(u.path, "/");
	CHECK(u.ip_literal);
	mcpx_url_release(&u);

	/* Numeric IPv4 forms are normalised before anything is compared. */
	CHECK_INT(PARSE("http://2130706433/"), 0);
	CHECK_STR(u.host, "127.0.0.1");
	CHECK(u.ip_literal);
	mcpx_url_release(&u);

	/* Names are compared as DNS sees them: international ones in punycode. */
	CHECK_INT(PARSE("https://b\xc3\xbc"
	                "cher.example/"),
	          -EINVAL);
	CHECK(strstr(why, "punycode") != NULL);
	CHECK_INT(PARSE("https://xn--bcher-kva.example/"), 0);
	mcpx_url_release(&u);

	CHECK_INT(PARSE("http://[::1]:81/x"), 0);
	CHECK_STR(u.host, "[::1]");
	CHECK(u.ip_literal);
	mcpx_url_release(&u);

	CHECK_INT(PARSE("ftp://example.com/"), -EINVAL);
	CHECK(strstr(why, "http") != NULL);
	CHECK_INT(PARSE("file:///etc/passwd"), -EINVAL);
	CHECK_INT(PARSE("https://user:pw@example.com/"), -EINVAL);
	CHECK(strstr(why, "user") != NULL);
	CHECK_INT(PARSE("https://example.com/a/%2e%2e/admin"), -EINVAL);
	CHECK(strstr(why, "dot segment") != NULL);
	CHECK_INT(PARSE("https://example.com/a/.%2E/admin"), -EINVAL);
	CHECK_INT(PARSE("https://example.com/a%2f..%2fadmin"), -EINVAL);
	CHECK_INT(PARSE("http://[fe80::1%25eth0]/"), -EINVAL);
	CHECK_INT(PARSE("https://example.com/a\r\nHost: evil"), -EINVAL);
	CHECK_INT(PARSE("example.com/path"), -EINVAL);
	CHECK_INT(mcpx_url_parse("http://a/\0x", 10, NULL, &u, why, sizeof(why)), -EINVAL);
	/* Disguised dot segments that servers behind a prefix may obey. */
	{
		static const char *const disguised[] = {
		    "https://example.com/api/..;/admin",
		    "https://example.com/api/..;jsessionid=1/admin",
		    "https://example.com/api/%2e%2e%3b/admin",
		    "https://example.com/api/..%00/admin",
		    "https://example.com/api/..%09/admin",
		    "https://example.com/api/..%00.jpg/admin",
		    "https://example.com/api/..%0d%0aX/admin",
		    "https://example.com/api/..%20/admin",
		    "https://example.com/api/%c0%ae%c0%ae/admin",
		    "https://example.com/api/%C0%AE./admin",
		    "https://example.com/api/%e0%80%ae%e0%80%ae/admin",
		    "https://example.com/api/%ef%bc%8e%ef%bc%8e/admin",
		    "https://example.com/api/..%c0%afadmin",
		    "https://example.com/api/%252e%252e/admin",
		    "https://example.com/api/.;/admin",
		};

		for (size_t i = 0; i < sizeof(disguised) / sizeof(disguised[0]); i++) {
			if (PARSE(disguised[i]) == 0) {
				fprintf(stderr, "accepted: %s (path %s)\n", disguised[i], u.path);
				mcpx_url_release(&u);
				CHECK(0);
			}
		}
	}
	/* A segment of dots alone is refused, "..." too (Windows servers trim
	 * trailing dots); dots inside a name and ';' after a name are ordinary. */
	CHECK_INT(PARSE("https://example.com/api/v1.2/a..b/x;y/.well-known/..."), -EINVAL);
	CHECK_INT(PARSE("https://example.com/api/v1.2/a..b/x;y/.well-known/f.txt"), 0);
	mcpx_url_release(&u);
	CHECK_INT(PARSE("https://example.com/api/a;..;b/%2e.x"), 0);
	mcpx_url_release(&u);

	/* The host judged is the host curl connects to: one that only becomes
	 * an IPv4 address after percent-decoding is refused, not judged as a
	 * name ("0%2e0" is 0.0.0.0 to the transfer). */
	CHECK_INT(PARSE("http://0%2e0/"), -EINVAL);
	CHECK(strstr(why, "host") != NULL);
	CHECK_INT(PARSE("http://127%2e1/"), -EINVAL);
	CHECK_INT(PARSE("http://%31%30.1/"), -EINVAL);
	CHECK_INT(PARSE("http://exa%6dple.com/"), -EINVAL);
	CHECK_INT(mcpx_url_parse("//0%2e0/x", 9, "https://example.com/", &u, why, sizeof(why)),
	          -EINVAL);
	/* Nor from a base (curl keeps a '%' that starts no valid escape). */
	CHECK_INT(mcpx_url_parse("../?q=1", 7, "https://exampot%h", &u, why, sizeof(why)), -EINVAL);
	/* Numeric forms curl normalises itself are judged as the address. */
	CHECK_INT(PARSE("http://127.1/"), 0);
	CHECK_STR(u.host, "127.0.0.1");
	CHECK(u.ip_literal);
	mcpx_url_release(&u);
	CHECK_INT(PARSE("http://0x7f.1/"), 0);
	CHECK_STR(u.host, "127.0.0.1");
	CHECK(u.ip_literal);
	mcpx_url_release(&u);
	CHECK_INT(PARSE("http://example.com:0/"), -EINVAL);
	CHECK(strstr(why, "port") != NULL);
	/* '%' in the path or query is not in the host. */
	CHECK_INT(PARSE("https://example.com/a%20b?q=%41"), 0);
	mcpx_url_release(&u);

	/* An encoded slash alone is a legitimate name part (GitLab's ids). */
	CHECK_INT(PARSE("https://gitlab.example.com/api/v4/projects/group%2Fproject"), 0);
	mcpx_url_release(&u);

	/* Redirects resolve against the current URL. */
	CHECK_INT(
	    mcpx_url_parse("../other?q=1", 12, "https://example.com/a/b/c", &u, why, sizeof(why)),
	    0);
	CHECK_STR(u.full, "https://example.com/a/other?q=1");
	mcpx_url_release(&u);
	CHECK_INT(
	    mcpx_url_parse("//evil.example/x", 16, "https://example.com/", &u, why, sizeof(why)),
	    0);
	CHECK_STR(u.host, "evil.example");
	mcpx_url_release(&u);
#undef PARSE
}

static bool matches(const char *prefix, const char *url)
{
	struct mcpx_url_prefix p;
	struct mcpx_url u;
	char why[160];
	bool m;

	CHECK_INT(mcpx_url_prefix_parse(prefix, &p, why, sizeof(why)), 0);
	if (mcpx_url_parse(url, strlen(url), NULL, &u, why, sizeof(why)) < 0)
		return false;
	m = mcpx_url_prefix_match(&p, &u);
	mcpx_url_release(&u);
	return m;
}

static void test_prefixes(void)
{
	struct mcpx_url_prefix p;
	char why[160];

	CHECK(matches("https://api.example.com/", "https://api.example.com/x?y=1"));
	CHECK(matches("https://api.example.com", "https://API.EXAMPLE.COM:443/"));
	CHECK(!matches("https://api.example.com/", "http://api.example.com/"));
	CHECK(!matches("https://api.example.com/", "https://api.example.com:8443/"));
	CHECK(!matches("https://api.example.com/", "https://api.example.com.evil.net/"));
	CHECK(matches("https://api.example.com/v1", "https://api.example.com/v1"));
	CHECK(matches("https://api.example.com/v1", "https://api.example.com/v1/users"));
	CHECK(!matches("https://api.example.com/v1", "https://api.example.com/v1beta"));
	CHECK(matches("https://api.example.com/v1/", "https://api.example.com/v1/users"));
	CHECK(!matches("https://api.example.com/v1/", "https://api.example.com/v1"));
	CHECK(!matches("https://api.example.com/v1/", "https://api.example.com/v1/../admin"));
	CHECK(matches("https://*.example.com/", "https://a.b.example.com/"));
	CHECK(!matches("https://*.example.com/", "https://example.com/"));
	CHECK(!matches("https://*.example.com/", "https://badexample.com/"));
	CHECK(matches("http://127.0.0.1:8080/", "http://127.0.0.1:8080/p"));
	CHECK(!matches("http://127.0.0.1:8080/", "http://127.0.0.2:8080/p"));

	CHECK_INT(mcpx_url_prefix_parse("https://example.com/?q=1", &p, why, sizeof(why)), -EINVAL);
	CHECK_INT(mcpx_url_prefix_parse("https://example.com/#f", &p, why, sizeof(why)), -EINVAL);
	CHECK_INT(mcpx_url_prefix_parse("https://a.*.example.com/", &p, why, sizeof(why)), -EINVAL);
	CHECK_INT(mcpx_url_prefix_parse("https://*.10.0.0.1/", &p, why, sizeof(why)), -EINVAL);
	CHECK_INT(mcpx_url_prefix_parse("gopher://example.com/", &p, why, sizeof(why)), -EINVAL);
	CHECK_INT(mcpx_url_prefix_parse("https://u@example.com/", &p, why, sizeof(why)), -EINVAL);
	CHECK_INT(mcpx_url_prefix_parse("https://api.example.com/v1/..;/", &p, why, sizeof(why)),
	          -EINVAL);
	CHECK_INT(mcpx_url_prefix_parse("http://127%2e1/", &p, why, sizeof(why)), -EINVAL);
	CHECK(!matches("https://api.example.com/api/", "https://api.example.com/api/..;/admin"));
	CHECK(!matches("https://api.example.com/api/",
	               "https://api.example.com/api/%2e%2e%3b/admin"));
	CHECK_INT(mcpx_url_prefix_parse("https://*.example.com:8443/api", &p, why, sizeof(why)), 0);
	CHECK(p.wildcard);
	CHECK_STR(p.host, "example.com");
	CHECK_INT(p.port, 8443);
	CHECK_STR(p.path, "/api");
}

#define REFUSED(n, v, cred) (mcpx_header_refusal((n), strlen(n), (v), strlen(v), (cred)) != NULL)

static void test_headers(void)
{
	CHECK(!REFUSED("X-Request-Id", "abc", NULL));
	CHECK(!REFUSED("Content-Type", "application/json", "Authorization"));
	CHECK(!REFUSED("Authorization", "Bearer mine", NULL));
	CHECK(REFUSED("Authorization", "Bearer mine", "authorization"));
	CHECK(REFUSED("X-Api-Key", "k", "x-api-key"));
	CHECK(REFUSED("Host", "evil.example", NULL));
	CHECK(REFUSED("hOsT", "evil.example", NULL));
	CHECK(REFUSED("Content-Length", "5", NULL));
	CHECK(REFUSED("Transfer-Encoding", "chunked", NULL));
	CHECK(REFUSED("Connection", "close", NULL));
	CHECK(REFUSED("Keep-Alive", "1", NULL));
	CHECK(REFUSED("TE", "trailers", NULL));
	CHECK(REFUSED("Upgrade", "h2c", NULL));
	CHECK(REFUSED("Proxy-Authorization", "Basic x", NULL));
	CHECK(REFUSED("proxy-connection", "x", NULL));
	CHECK(REFUSED("Accept-Encoding", "gzip", NULL));
	CHECK(REFUSED("X-A", "v\r\nHost: evil", NULL));
	CHECK(REFUSED("X-A", "v\nx", NULL));
	CHECK(REFUSED("X-A", "v\x01", NULL));
	CHECK(!REFUSED("X-A", "v\tw", NULL));
	CHECK(REFUSED("X A", "v", NULL));
	CHECK(REFUSED("X-A:", "v", NULL));
	CHECK(REFUSED("X-A\r\n", "v", NULL));
	CHECK(REFUSED("", "v", NULL));
	CHECK(mcpx_header_refusal("X-A", 3, "a\0b", 3, NULL) != NULL);

	CHECK(mcpx_method_valid("GET", 3));
	CHECK(mcpx_method_valid("PATCH", 5));
	CHECK(!mcpx_method_valid("get", 3));
	CHECK(!mcpx_method_valid("GET /", 5));
	CHECK(!mcpx_method_valid("", 0));
	CHECK(!mcpx_method_valid("GETGETGETGETGETGET", 18));
}

int main(void)
{
	test_classify();
	test_allow_cidrs();
	test_urls();
	test_prefixes();
	test_headers();
	CHECK_DONE();
}
