/*
 * test_curl_lib.c - libcurl loaded on first use (curl_lib.h): not mapped
 * before, every kind of option argument passed through unchanged after.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "maps.h"
#include "curl_lib.h"

static size_t sink(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static void test_lazy(void)
{
	/* The binaries link the same library as this test: were libcurl (or
	 * libm) linked, it would be mapped before any call. */
	CHECK(mapped("libcurl") == 0);
#ifndef __SANITIZE_ADDRESS__ /* the sanitizers' runtime brings libm */
	CHECK(mapped("libm.so") == 0);
#endif
	CHECK(!mcpx_curl_loaded());
	/* Nothing to free: no call has loaded it. */
	mcpx_curl_easy_cleanup(NULL);
	CHECK(mapped("libcurl") == 0);
	REQUIRE(mcpx_curl_available());
	CHECK(mcpx_curl_loaded());
	CHECK(mapped("libcurl") == 1);
	CHECK(mcpx_curl_version() && strstr(mcpx_curl_version(), "libcurl/"));
}

static void test_calls(void)
{
	CURL *h = mcpx_curl_easy_init();
	CURLM *m = mcpx_curl_multi_init();
	CURLU *u = mcpx_curl_url();
	struct curl_slist *l = mcpx_curl_slist_append(NULL, "X-Test: 1");
	char *part = NULL;
	long code = -1;

	REQUIRE(h && m && u && l);
	/* One option of each argument type (long, pointer, function, off_t):
	 * libcurl checks them, so a wrongly passed one fails. */
	CHECK_INT(mcpx_curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L), CURLE_OK);
	CHECK_INT(mcpx_curl_easy_setopt(h, CURLOPT_URL, "http://127.0.0.1:1/x"), CURLE_OK);
	CHECK_INT(mcpx_curl_easy_setopt(h, CURLOPT_HTTPHEADER, l), CURLE_OK);
	CHECK_INT(mcpx_curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink), CURLE_OK);
	CHECK_INT(mcpx_curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)1 << 40),
	          CURLE_OK);
	/* A long option given an out-of-range long is refused: the value
	 * arrived as a long. */
	CHECK_INT(mcpx_curl_easy_setopt(h, CURLOPT_HTTP_VERSION, 1000L),
	          CURLE_UNSUPPORTED_PROTOCOL);
	CHECK_INT(mcpx_curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code), CURLE_OK);
	CHECK_INT(code, 0);
	CHECK(strcmp(mcpx_curl_easy_strerror(CURLE_OK), "No error") == 0);
	CHECK_INT(mcpx_curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, 4L), CURLM_OK);
	CHECK_INT(mcpx_curl_multi_add_handle(m, h), CURLM_OK);
	CHECK_INT(mcpx_curl_multi_remove_handle(m, h), CURLM_OK);
	CHECK_INT(mcpx_curl_url_set(u, CURLUPART_URL, "https://Example.com/a/../b?q=1", 0),
	          CURLUE_OK);
	CHECK_INT(mcpx_curl_url_get(u, CURLUPART_PATH, &part, 0), CURLUE_OK);
	CHECK(part && strcmp(part, "/b") == 0);
	mcpx_curl_free(part);
	CHECK(mcpx_curl_url_strerror(CURLUE_OK) != NULL);
	mcpx_curl_url_cleanup(u);
	mcpx_curl_easy_cleanup(h);
	mcpx_curl_slist_free_all(l);
	CHECK_INT(mcpx_curl_multi_cleanup(m), CURLM_OK);
}

int main(void)
{
	test_lazy();
	test_calls();
	CHECK_DONE();
}
