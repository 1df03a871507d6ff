/*
 * curl_lib.h - libcurl, loaded the first time something needs it.
 *
 * libcurl (with Debian's build: GnuTLS, Kerberos, LDAP, libssh2, RTMP,
 * p11-kit, ... about thirty libraries) cost the server about 4 MiB of
 * resident memory at start-up when it was linked, although most servers
 * never make an HTTP request: only the egress broker (a run's granted
 * fetches), upstream MCP servers (code mode) and the Kubernetes TokenReview
 * client do. So the server is not linked against libcurl; the first call of
 * any function here dlopen()s libcurl.so.4 (and calls curl_global_init) and
 * the rest go through the symbol table it filled.
 *
 * Every user of libcurl in the server goes through these functions: they
 * have libcurl's names with an mcpx_ prefix and libcurl's signatures and
 * types (<curl/curl.h> is included for those). When libcurl cannot be
 * loaded, each says so the way libcurl says it failed: NULL handles,
 * CURLE_FAILED_INIT, CURLM_INTERNAL_ERROR, CURLUE_OUT_OF_MEMORY, and a
 * warning in the log once. Ownership is libcurl's: what its function
 * returns is freed with its counterpart here (mcpx_curl_easy_cleanup,
 * mcpx_curl_free, ...).
 *
 * The library stays loaded once loaded (nothing dlclose()s it): handles
 * may be freed at any time before exit. Loading is thread-safe
 * (pthread_once); the functions are as thread-safe as libcurl's.
 */
#ifndef MCPX_CURL_LIB_H
#define MCPX_CURL_LIB_H

#include <curl/curl.h>
#include <stdbool.h>

/* Loads libcurl now if it is not yet; true when it is available. */
bool mcpx_curl_available(void);
/* libcurl's version string ("8.x.y"), or NULL when it cannot be loaded. */
const char *mcpx_curl_version(void);
/* Whether libcurl has been loaded (no attempt is made): for tests. */
bool mcpx_curl_loaded(void);

CURL *mcpx_curl_easy_init(void);
void mcpx_curl_easy_cleanup(CURL *h);
/* As curl_easy_setopt: one argument whose type the option's number says
 * (long, pointer, function pointer or curl_off_t). */
CURLcode mcpx_curl_easy_setopt(CURL *h, CURLoption opt, ...);
/* As curl_easy_getinfo: one pointer argument. */
CURLcode mcpx_curl_easy_getinfo(CURL *h, CURLINFO info, ...);
const char *mcpx_curl_easy_strerror(CURLcode c);
struct curl_slist *mcpx_curl_slist_append(struct curl_slist *l, const char *s);
void mcpx_curl_slist_free_all(struct curl_slist *l);
void mcpx_curl_free(void *p);

CURLM *mcpx_curl_multi_init(void);
CURLMcode mcpx_curl_multi_cleanup(CURLM *m);
/* As curl_multi_setopt: one argument typed as for mcpx_curl_easy_setopt. */
CURLMcode mcpx_curl_multi_setopt(CURLM *m, CURLMoption opt, ...);
CURLMcode mcpx_curl_multi_add_handle(CURLM *m, CURL *h);
CURLMcode mcpx_curl_multi_remove_handle(CURLM *m, CURL *h);
CURLMcode mcpx_curl_multi_socket_action(CURLM *m, curl_socket_t s, int ev_bitmask, int *running);
CURLMcode mcpx_curl_multi_assign(CURLM *m, curl_socket_t s, void *p);
CURLMsg *mcpx_curl_multi_info_read(CURLM *m, int *left);

CURLU *mcpx_curl_url(void);
void mcpx_curl_url_cleanup(CURLU *u);
CURLUcode mcpx_curl_url_get(const CURLU *u, CURLUPart what, char **part, unsigned int flags);
CURLUcode mcpx_curl_url_set(CURLU *u, CURLUPart what, const char *part, unsigned int flags);
const char *mcpx_curl_url_strerror(CURLUcode c);

#endif
