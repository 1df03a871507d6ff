/*
 * test_origin.c - the Origin and Host checks, including the prefix and
 * suffix tricks a rebinding attacker would try.
 */
#include <stdbool.h>

#include "check.h"
#include "origin.h"

static void test_origin(void)
{
	const char *list =
	    " https://app.example.com , http://Tools.Example.org:8443/,https://x.test";

	/* No Origin: a non-browser client. */
	CHECK(mcpx_origin_allowed(NULL, NULL));
	CHECK(mcpx_origin_allowed("", list));

	/* Loopback origins, with and without ports, in either scheme. */
	static const char *const loopback[] = {
	    "http://localhost",      "http://localhost:8080",  "https://localhost:443/",
	    "HTTP://LOCALHOST:3000", "http://127.0.0.1",       "http://127.0.0.1:8080",
	    "https://127.1.2.3:9",   "http://[::1]",           "http://[::1]:8080",
	    "https://[::1]:65535/",  "http://127.255.255.255",
	};
	for (size_t i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++) {
		CHECK(mcpx_origin_allowed(loopback[i], NULL));
		if (!mcpx_origin_allowed(loopback[i], NULL))
			fprintf(stderr, "  rejected %s\n", loopback[i]);
	}

	/* Exact matches against the list: trimmed, case-insensitive scheme and
	 * host, a trailing slash on either side ignored. */
	CHECK(mcpx_origin_allowed("https://app.example.com", list));
	CHECK(mcpx_origin_allowed("HTTPS://APP.EXAMPLE.COM/", list));
	CHECK(mcpx_origin_allowed("http://tools.example.org:8443", list));
	CHECK(mcpx_origin_allowed("https://x.test", list));
	CHECK(mcpx_origin_allowed("https://x.test", "https://x.test"));

	/* Near misses: scheme, port, subdomain, suffix, prefix. */
	static const char *const foreign[] = {
	    "http://app.example.com",
	    "https://app.example.com:8443",
	    "https://evil.app.example.com",
	    "https://app.example.com.evil.com",
	    "https://app.example.co",
	    "https://app.example.com/path",
	    "http://tools.example.org",
	    "https://x.test.",
	    "null",
	    "NULL",
	    "http://localhost.evil.com",
	    "http://localhost.",
	    "http://127.0.0.1.evil.com",
	    "http://127.0.0.1.nip.io",
	    "http://evil.com/http://localhost",
	    "http://evil.com#http://localhost",
	    "http://localhost@evil.com",
	    "http://evil.com@localhost",
	    "http://localhost:80@evil.com",
	    "http://localhost:8080/evil",
	    "http://localhost//",
	    "http://localhost:",
	    "http://localhost:99999",
	    "http://localhost:80:80",
	    "http://localhost:8o",
	    "http://128.0.0.1",
	    "http://127.0.0",
	    "http://127.0.0.1.1",
	    "http://127.0.0.256",
	    "http://1127.0.0.1",
	    "http://[::1",
	    "http://[::1]x",
	    "http://[::2]",
	    "http://::1",
	    "ftp://localhost",
	    "ws://localhost",
	    "file://",
	    "localhost",
	    "//localhost",
	    "http://",
	    "https://",
	    " http://localhost",
	    "http://localhost ",
	};
	for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) {
		CHECK(!mcpx_origin_allowed(foreign[i], list));
		if (mcpx_origin_allowed(foreign[i], list))
			fprintf(stderr, "  accepted %s\n", foreign[i]);
	}

	/* "null" stays refused even when someone lists it. */
	CHECK(!mcpx_origin_allowed("null", "null,https://x.test"));
	/* Empty list entries match nothing. */
	CHECK(!mcpx_origin_allowed("https://a.test", ",, ,"));
	CHECK(!mcpx_origin_allowed("https://a.test", ""));
	CHECK(!mcpx_origin_allowed("https://a.test", NULL));
	/* A list entry is not a prefix pattern. */
	CHECK(!mcpx_origin_allowed("https://a.test", "https://a.tes"));
	CHECK(!mcpx_origin_allowed("https://a.tes", "https://a.test"));
	CHECK(mcpx_origin_allowed("https://a.test", "https://b.test,https://a.test"));
}

static void test_host(void)
{
	/* A public listener accepts any Host; auth guards it. */
	CHECK(mcpx_host_allowed("mcp.example.com", false));
	CHECK(mcpx_host_allowed(NULL, false));

	static const char *const ok[] = {
	    "localhost",      "localhost:8080", "LocalHost", "127.0.0.1",
	    "127.0.0.1:8080", "127.9.8.7",      "[::1]",     "[::1]:8080",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		CHECK(mcpx_host_allowed(ok[i], true));
		if (!mcpx_host_allowed(ok[i], true))
			fprintf(stderr, "  rejected %s\n", ok[i]);
	}

	static const char *const bad[] = {
	    "",
	    "evil.com",
	    "evil.com:8080",
	    "localhost.evil.com",
	    "127.0.0.1.evil.com",
	    "127.0.0.1.nip.io:8080",
	    "localhost:8080.evil.com",
	    "localhost:",
	    "localhost:abc",
	    "localhost:123456",
	    "10.0.0.1",
	    "0.0.0.0:8080",
	    "::1",
	    "[::1",
	    "[::1]:",
	    "[::1]evil",
	    "[::2]",
	    "localhost/",
	    "localhost@evil.com",
	    " localhost",
	    "localhost ",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(!mcpx_host_allowed(bad[i], true));
		if (mcpx_host_allowed(bad[i], true))
			fprintf(stderr, "  accepted %s\n", bad[i]);
	}
	CHECK(!mcpx_host_allowed(NULL, true));
}

int main(void)
{
	test_origin();
	test_host();
	CHECK_DONE();
}
