/*
 * test_egress_handle.c - what every outgoing request made for the policy
 * holds (egress_handle.h), on real transfers to a loopback server run on
 * the shared curl loop: a redirect is not followed, a connection made
 * under allowed CIDRs is not reused by a request that may not reach the
 * address (issue 34 item 10, the copy a mutation found unguarded), an
 * address outside the CIDRs is refused and told apart from a failed
 * connect, the environment's proxy is not used, only http and https go,
 * and the credential header is sent.
 */
#include "egress_handle.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "curl_loop.h"
#include "http_fixture.h"
#include "log.h"
#include "loop.h"

static struct mcpx_loop *loop;
static struct mcpx_curl_loop *http;

/* The fixture's answers, by path. */
static void respond(struct http_fixture *fx, const struct http_fixture_req *req,
                    struct http_fixture_resp *resp)
{
	static char redirect[128];

	if (strcmp(req->path, "/redirect") == 0) {
		snprintf(redirect, sizeof(redirect),
		         "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:%d/target\r\n"
		         "Content-Length: 0\r\n\r\n",
		         fx->port);
		resp->piece[0] = redirect;
		return;
	}
	if (strcmp(req->path, "/auth") == 0) {
		bool has = strstr(req->headers, "\r\nX-Key: s3cret\r\n") != NULL;

		resp->piece[0] = has ? "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nkey"
		                     : "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno";
		return;
	}
	resp->piece[0] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
}

struct result {
	bool done;
	CURLcode rc;
	long status;
	char body[256];
	size_t len;
	struct mcpx_egress_handle h;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct result *r = arg;
	size_t k = size * n;

	if (r->len + k < sizeof(r->body)) {
		memcpy(r->body + r->len, p, k);
		r->len += k;
	}
	return k;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	(void)p, (void)arg;
	return size * n;
}

static void done(struct mcpx_curl_xfer *x, CURLcode rc)
{
	struct result *r = (struct result *)((char *)x - offsetof(struct result, h.x));

	mcpx_curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &r->status);
	r->rc = rc;
	r->done = true;
}

/* One transfer of url under allow (n CIDRs), to its end. */
static void fetch(struct result *r, const char *url, const struct mcpx_cidr *allow, size_t n,
                  const char *cred)
{
	struct mcpx_egress_spec s = {.url = url,
	                             .allow = allow,
	                             .n_allow = n,
	                             .cred_header = cred ? "X-Key" : NULL,
	                             .cred_value = cred,
	                             .timeout_ms = 20000,
	                             .on_body = on_body,
	                             .on_header = on_header,
	                             .arg = r};

	memset(r, 0, sizeof(*r));
	REQUIRE_INT(mcpx_egress_handle_open(&r->h, &s, NULL), 0);
	r->h.x.done = done;
	REQUIRE_INT(mcpx_curl_loop_add(http, &r->h.x), 0);
	for (int i = 0; i < 200000 && !r->done; i++)
		mcpx_loop_turn(loop);
	CHECK(r->done);
	r->body[r->len] = '\0';
	mcpx_egress_handle_close(&r->h, http);
}

static struct mcpx_cidr loopback(void)
{
	struct mcpx_cidr c;
	char why[128];

	CHECK_INT(mcpx_cidr_parse("127.0.0.0/8", &c, why, sizeof(why)), 0);
	return c;
}

/* A redirect comes back to the owner as it is; curl asks for nothing
 * more. */
static void test_redirect_not_followed(struct http_fixture *fx)
{
	struct mcpx_cidr lo = loopback();
	struct result r;
	char url[96];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/redirect", fx->port);
	fetch(&r, url, &lo, 1, NULL);
	CHECK_INT(r.rc, CURLE_OK);
	CHECK_INT(r.status, 302);
	CHECK_INT(http_fixture_count(fx, "/target"), 0);
}

/* Under allowed CIDRs every request gets a connection of its own; a
 * request that may not reach the address is refused at its connect, not
 * handed the connection the first one left. */
static void test_private_connection_not_reused(struct http_fixture *fx)
{
	struct mcpx_cidr lo = loopback();
	struct result r;
	char url[96];
	int conns = http_fixture_conns(fx), reqs = http_fixture_count(fx, "/plain");

	snprintf(url, sizeof(url), "http://localhost:%d/plain", fx->port);
	fetch(&r, url, &lo, 1, NULL);
	CHECK_INT(r.rc, CURLE_OK);
	CHECK_STR(r.body, "ok");
	fetch(&r, url, &lo, 1, NULL);
	CHECK_INT(r.rc, CURLE_OK);
	CHECK_INT(http_fixture_conns(fx) - conns, 2);
	/* The same host and port, without the CIDRs. */
	fetch(&r, url, NULL, 0, NULL);
	CHECK_INT(r.rc, CURLE_COULDNT_CONNECT);
	CHECK(mcpx_egress_refused(&r.h, r.rc));
	CHECK_INT(r.h.refused, MCPX_ADDR_LOOPBACK);
	CHECK_INT(http_fixture_count(fx, "/plain") - reqs, 2);
}

static void test_refused_address(struct http_fixture *fx)
{
	struct result r;
	char url[96];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/plain", fx->port);
	fetch(&r, url, NULL, 0, NULL);
	CHECK_INT(r.rc, CURLE_COULDNT_CONNECT);
	CHECK(mcpx_egress_refused(&r.h, r.rc));
	CHECK_STR(r.h.refused_addr, "127.0.0.1");
	/* A connect that fails for another reason is not a refusal. */
	snprintf(url, sizeof(url), "http://127.0.0.1:1/plain");
	{
		struct mcpx_cidr lo = loopback();

		fetch(&r, url, &lo, 1, NULL);
		CHECK_INT(r.rc, CURLE_COULDNT_CONNECT);
		CHECK(!mcpx_egress_refused(&r.h, r.rc));
	}
}

/* The environment names a proxy (the fixture itself, which would answer
 * a proxied request for another host): the request goes direct. */
static void test_no_environment_proxy(struct http_fixture *fx)
{
	struct mcpx_cidr lo = loopback();
	struct result r;
	char proxy[64];

	snprintf(proxy, sizeof(proxy), "http://127.0.0.1:%d", fx->port);
	setenv("http_proxy", proxy, 1);
	setenv("ALL_PROXY", proxy, 1);
	fetch(&r, "http://127.0.0.2:9/direct", &lo, 1, NULL);
	CHECK_INT(r.rc, CURLE_COULDNT_CONNECT);
	CHECK_INT(http_fixture_count(fx, "http://127.0.0.2:9/direct"), 0);
	unsetenv("http_proxy");
	unsetenv("ALL_PROXY");
}

static void test_protocols_and_credential(struct http_fixture *fx)
{
	struct mcpx_cidr lo = loopback();
	struct result r;
	char url[96];

	snprintf(url, sizeof(url), "ftp://127.0.0.1:%d/x", fx->port);
	fetch(&r, url, &lo, 1, NULL);
	CHECK_INT(r.rc, CURLE_UNSUPPORTED_PROTOCOL);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/auth", fx->port);
	fetch(&r, url, &lo, 1, "s3cret");
	CHECK_STR(r.body, "key");
	fetch(&r, url, &lo, 1, NULL);
	CHECK_STR(r.body, "no");
}

int main(void)
{
	struct http_fixture fx;

	mcpx_log_setup(MCPX_LOG_TEXT, MCPX_LOG_ERROR);
	if (!mcpx_curl_available()) {
		fprintf(stderr, "libcurl cannot be loaded: skipped\n");
		return 77;
	}
	loop = mcpx_loop_new();
	http = mcpx_curl_loop_new(loop, "test");
	if (!loop || !http || !http_fixture_start(&fx, respond, NULL)) {
		fprintf(stderr, "set-up failed\n");
		return 1;
	}
	test_redirect_not_followed(&fx);
	test_private_connection_not_reused(&fx);
	test_refused_address(&fx);
	test_no_environment_proxy(&fx);
	test_protocols_and_credential(&fx);
	http_fixture_stop(&fx);
	mcpx_curl_loop_free(http);
	mcpx_loop_free(loop);
	CHECK_DONE();
}
