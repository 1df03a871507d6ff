/*
 * curl_lib.c - libcurl loaded on first use, and the server's only door to
 * it (curl_lib.h).
 *
 * One pthread_once loads libcurl.so.4 and every function the server uses
 * into one table (dl_table.c: all or none, a libcurl missing one of them
 * counts as absent) and calls curl_global_init once.
 * Each wrapper then calls through the table, or returns libcurl's own
 * failure value when the library is absent.
 *
 * The variadic ones (easy_setopt, multi_setopt) take their one argument
 * by the type libcurl's option number encodes (CURLOPTTYPE_* ranges of
 * 10000): long, a data pointer, a function pointer or curl_off_t, so what
 * the caller passed is passed on unchanged. easy_getinfo always takes a
 * pointer.
 *
 * What it does not do: drive transfers (broker.c, upstream_client.c,
 * tokenreview.c), or unload libcurl.
 */
#include "curl_lib.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>

#include "dl_table.h"
#include "log.h"

/* The library's soname: the ABI the headers the server was built with
 * describe (Debian's libcurl4 package). */
#define CURL_SONAME "libcurl.so.4"

/* X(name, return type, parameters) for every function looked up. */
#define CURL_FUNCTIONS(X)                                                                          \
	X(curl_global_init, CURLcode, (long))                                                      \
	X(curl_version, char *, (void))                                                            \
	X(curl_easy_init, CURL *, (void))                                                          \
	X(curl_easy_cleanup, void, (CURL *))                                                       \
	X(curl_easy_setopt, CURLcode, (CURL *, CURLoption, ...))                                   \
	X(curl_easy_getinfo, CURLcode, (CURL *, CURLINFO, ...))                                    \
	X(curl_easy_strerror, const char *, (CURLcode))                                            \
	X(curl_slist_append, struct curl_slist *, (struct curl_slist *, const char *))             \
	X(curl_slist_free_all, void, (struct curl_slist *))                                        \
	X(curl_free, void, (void *))                                                               \
	X(curl_multi_init, CURLM *, (void))                                                        \
	X(curl_multi_cleanup, CURLMcode, (CURLM *))                                                \
	X(curl_multi_setopt, CURLMcode, (CURLM *, CURLMoption, ...))                               \
	X(curl_multi_add_handle, CURLMcode, (CURLM *, CURL *))                                     \
	X(curl_multi_remove_handle, CURLMcode, (CURLM *, CURL *))                                  \
	X(curl_multi_socket_action, CURLMcode, (CURLM *, curl_socket_t, int, int *))               \
	X(curl_multi_assign, CURLMcode, (CURLM *, curl_socket_t, void *))                          \
	X(curl_multi_info_read, CURLMsg *, (CURLM *, int *))                                       \
	X(curl_url, CURLU *, (void))                                                               \
	X(curl_url_cleanup, void, (CURLU *))                                                       \
	X(curl_url_get, CURLUcode, (const CURLU *, CURLUPart, char **, unsigned int))              \
	X(curl_url_set, CURLUcode, (CURLU *, CURLUPart, const char *, unsigned int))               \
	X(curl_url_strerror, const char *, (CURLUcode))

#define FIELD(name, ret, params) ret(*f_##name) params;
static struct {
	CURL_FUNCTIONS(FIELD)
} fn;
#undef FIELD

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;

static void load(void)
{
#define NAME(name, ret, params) #name,
#define SLOT(name, ret, params) (void **)&fn.f_##name,
	static const char *const names[] = {CURL_FUNCTIONS(NAME)};
	void **const slots[] = {CURL_FUNCTIONS(SLOT)};
#undef NAME
#undef SLOT

	if (!mcpx_dl_table_load(CURL_SONAME, names, slots, sizeof(names) / sizeof(names[0]),
	                        "outgoing HTTP requests (egress, upstream servers, TokenReview) "
	                        "fail"))
		return;
	if (fn.f_curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		mcpx_warn("libcurl did not initialise: outgoing HTTP requests fail");
		return; /* the library stays mapped: its own state says it failed */
	}
	loaded = true;
}

bool mcpx_curl_available(void)
{
	(void)pthread_once(&once, load);
	return loaded;
}

bool mcpx_curl_loaded(void)
{
	return loaded;
}

const char *mcpx_curl_version(void)
{
	return mcpx_curl_available() ? fn.f_curl_version() : NULL;
}

CURL *mcpx_curl_easy_init(void)
{
	return mcpx_curl_available() ? fn.f_curl_easy_init() : NULL;
}

void mcpx_curl_easy_cleanup(CURL *h)
{
	if (h && loaded)
		fn.f_curl_easy_cleanup(h);
}

/* The kind of argument an option number takes (curl.h, CURLOPTTYPE_*). */
enum arg_kind { ARG_LONG, ARG_POINTER, ARG_FUNCTION, ARG_OFF_T };

static enum arg_kind arg_kind(int opt)
{
	if (opt >= CURLOPTTYPE_BLOB)
		return ARG_POINTER;
	if (opt >= CURLOPTTYPE_OFF_T)
		return ARG_OFF_T;
	if (opt >= CURLOPTTYPE_FUNCTIONPOINT)
		return ARG_FUNCTION;
	if (opt >= CURLOPTTYPE_OBJECTPOINT)
		return ARG_POINTER;
	return ARG_LONG;
}

typedef void (*any_fn)(void);

CURLcode mcpx_curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
	CURLcode rc = CURLE_FAILED_INIT;
	va_list ap;

	if (!h || !loaded)
		return rc;
	va_start(ap, opt);
	switch (arg_kind((int)opt)) {
	case ARG_LONG:
		rc = fn.f_curl_easy_setopt(h, opt, va_arg(ap, long));
		break;
	case ARG_POINTER:
		rc = fn.f_curl_easy_setopt(h, opt, va_arg(ap, void *));
		break;
	case ARG_FUNCTION:
		rc = fn.f_curl_easy_setopt(h, opt, va_arg(ap, any_fn));
		break;
	case ARG_OFF_T:
		rc = fn.f_curl_easy_setopt(h, opt, va_arg(ap, curl_off_t));
		break;
	}
	va_end(ap);
	return rc;
}

CURLcode mcpx_curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
	CURLcode rc = CURLE_FAILED_INIT;
	va_list ap;

	if (!h || !loaded)
		return rc;
	va_start(ap, info);
	rc = fn.f_curl_easy_getinfo(h, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

const char *mcpx_curl_easy_strerror(CURLcode c)
{
	return loaded ? fn.f_curl_easy_strerror(c) : "libcurl is not available";
}

struct curl_slist *mcpx_curl_slist_append(struct curl_slist *l, const char *s)
{
	return mcpx_curl_available() ? fn.f_curl_slist_append(l, s) : NULL;
}

void mcpx_curl_slist_free_all(struct curl_slist *l)
{
	if (l && loaded)
		fn.f_curl_slist_free_all(l);
}

void mcpx_curl_free(void *p)
{
	if (p && loaded)
		fn.f_curl_free(p);
}

CURLM *mcpx_curl_multi_init(void)
{
	return mcpx_curl_available() ? fn.f_curl_multi_init() : NULL;
}

CURLMcode mcpx_curl_multi_cleanup(CURLM *m)
{
	return m && loaded ? fn.f_curl_multi_cleanup(m) : CURLM_BAD_HANDLE;
}

CURLMcode mcpx_curl_multi_setopt(CURLM *m, CURLMoption opt, ...)
{
	CURLMcode rc = CURLM_BAD_HANDLE;
	va_list ap;

	if (!m || !loaded)
		return rc;
	va_start(ap, opt);
	switch (arg_kind((int)opt)) {
	case ARG_LONG:
		rc = fn.f_curl_multi_setopt(m, opt, va_arg(ap, long));
		break;
	case ARG_POINTER:
		rc = fn.f_curl_multi_setopt(m, opt, va_arg(ap, void *));
		break;
	case ARG_FUNCTION:
		rc = fn.f_curl_multi_setopt(m, opt, va_arg(ap, any_fn));
		break;
	case ARG_OFF_T:
		rc = fn.f_curl_multi_setopt(m, opt, va_arg(ap, curl_off_t));
		break;
	}
	va_end(ap);
	return rc;
}

CURLMcode mcpx_curl_multi_add_handle(CURLM *m, CURL *h)
{
	return m && loaded ? fn.f_curl_multi_add_handle(m, h) : CURLM_BAD_HANDLE;
}

CURLMcode mcpx_curl_multi_remove_handle(CURLM *m, CURL *h)
{
	return m && loaded ? fn.f_curl_multi_remove_handle(m, h) : CURLM_BAD_HANDLE;
}

CURLMcode mcpx_curl_multi_socket_action(CURLM *m, curl_socket_t s, int ev_bitmask, int *running)
{
	if (!m || !loaded) {
		*running = 0;
		return CURLM_BAD_HANDLE;
	}
	return fn.f_curl_multi_socket_action(m, s, ev_bitmask, running);
}

CURLMcode mcpx_curl_multi_assign(CURLM *m, curl_socket_t s, void *p)
{
	return m && loaded ? fn.f_curl_multi_assign(m, s, p) : CURLM_BAD_HANDLE;
}

CURLMsg *mcpx_curl_multi_info_read(CURLM *m, int *left)
{
	if (!m || !loaded) {
		*left = 0;
		return NULL;
	}
	return fn.f_curl_multi_info_read(m, left);
}

CURLU *mcpx_curl_url(void)
{
	return mcpx_curl_available() ? fn.f_curl_url() : NULL;
}

void mcpx_curl_url_cleanup(CURLU *u)
{
	if (u && loaded)
		fn.f_curl_url_cleanup(u);
}

CURLUcode mcpx_curl_url_get(const CURLU *u, CURLUPart what, char **part, unsigned int flags)
{
	if (!u || !loaded) {
		*part = NULL;
		return CURLUE_BAD_HANDLE;
	}
	return fn.f_curl_url_get(u, what, part, flags);
}

CURLUcode mcpx_curl_url_set(CURLU *u, CURLUPart what, const char *part, unsigned int flags)
{
	return u && loaded ? fn.f_curl_url_set(u, what, part, flags) : CURLUE_BAD_HANDLE;
}

const char *mcpx_curl_url_strerror(CURLUcode c)
{
	return loaded ? fn.f_curl_url_strerror(c) : "libcurl is not available";
}
