/*
 * egress_handle.c - the locked-down easy handle of every request made for
 * the policy (egress_handle.h).
 *
 * One table of fixed options, set in one place for the broker's fetches
 * and the upstream client's requests, so that a change to what holds (a
 * redirect followed, a connection reused) is a change here, and the tests
 * that guard it (test_egress_handle) guard both.
 *
 * What it does not do: decide whether a request may go (egress_check.c,
 * egress_addr.c, the broker's rules, the upstream's checks), choose a
 * method or read the answer (the owners), or run the transfer
 * (curl_loop.c).
 */
#include "egress_handle.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "config.h"
#include "crypto.h"

int mcpx_egress_header(struct curl_slist **l, const char *name, const char *value)
{
	char line[16600];
	struct curl_slist *n;

	snprintf(line, sizeof(line), "%s: %s", name, value);
	n = mcpx_curl_slist_append(*l, line);
	/* The line may be the credential. */
	mcpx_wipe(line, sizeof(line));
	if (!n)
		return -ENOMEM;
	*l = n;
	return 0;
}

/* Every address curl is about to connect to, after DNS. */
static curl_socket_t open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct mcpx_egress_handle *h = arg;
	enum mcpx_addr_class cls;

	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKET_BAD;
	/* Through a proxy, curl only ever connects to the proxy the operator
	 * configured; the target's address is the proxy's to police. */
	if (h->check) {
		cls = mcpx_addr_check(&a->addr, a->addrlen, h->allow, h->n_allow);
		if (cls != MCPX_ADDR_PUBLIC) {
			h->refused = cls;
			mcpx_addr_text(&a->addr, a->addrlen, h->refused_addr,
			               sizeof(h->refused_addr));
			return CURL_SOCKET_BAD;
		}
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static CURLcode set_fixed(struct mcpx_egress_handle *h, const struct mcpx_egress_spec *s)
{
	CURL *e = h->x.easy;
	long timeout_ms = (long)s->timeout_ms;
	long connect_ms = timeout_ms && timeout_ms < (long)MCPX_EGRESS_CONNECT_TIMEOUT_MS
	                      ? timeout_ms
	                      : (long)MCPX_EGRESS_CONNECT_TIMEOUT_MS;
	CURLcode rc = CURLE_OK;

#define SET(opt, val)                                                                              \
	do {                                                                                       \
		if (rc == CURLE_OK)                                                                \
			rc = mcpx_curl_easy_setopt(e, opt, val);                                   \
	} while (0)
	SET(CURLOPT_URL, s->url);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	/* A redirect is the owner's to follow, through its own checks. */
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_MAXREDIRS, 0L);
	/* "" disables a proxy even when the environment names one. */
	SET(CURLOPT_PROXY, s->proxy ? s->proxy : "");
	SET(CURLOPT_NOPROXY, "");
	SET(CURLOPT_SSL_VERIFYPEER, 1L);
	SET(CURLOPT_SSL_VERIFYHOST, 2L);
	SET(CURLOPT_PROXY_SSL_VERIFYPEER, 1L);
	SET(CURLOPT_PROXY_SSL_VERIFYHOST, 2L);
	if (s->ca_file) {
		SET(CURLOPT_CAINFO, s->ca_file);
		SET(CURLOPT_PROXY_CAINFO, s->ca_file);
	}
	SET(CURLOPT_NETRC, (long)CURL_NETRC_IGNORED);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_TIMEOUT_MS, timeout_ms);
	SET(CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	SET(CURLOPT_OPENSOCKETFUNCTION, open_socket);
	SET(CURLOPT_OPENSOCKETDATA, h);
	if (s->max_bytes)
		SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)s->max_bytes);
	SET(CURLOPT_WRITEFUNCTION, s->on_body);
	SET(CURLOPT_WRITEDATA, s->arg);
	SET(CURLOPT_HEADERFUNCTION, s->on_header);
	SET(CURLOPT_HEADERDATA, s->arg);
	SET(CURLOPT_ACCEPT_ENCODING, "");
	SET(CURLOPT_USERAGENT, MCPX_NAME "/" MCPX_VERSION);
	SET(CURLOPT_ERRORBUFFER, h->errbuf);
	/* A connection to a private address its CIDRs allowed is never left
	 * for a request that may not reach it. */
	SET(CURLOPT_FORBID_REUSE, s->n_allow ? 1L : 0L);
	SET(CURLOPT_HTTPHEADER, h->hdrs);
#undef SET
	return rc;
}

static void free_headers(struct mcpx_egress_handle *h)
{
	for (struct curl_slist *l = h->hdrs; l; l = l->next)
		mcpx_wipe(l->data, strlen(l->data));
	mcpx_curl_slist_free_all(h->hdrs);
	h->hdrs = NULL;
}

int mcpx_egress_handle_open(struct mcpx_egress_handle *h, const struct mcpx_egress_spec *s,
                            struct curl_slist *headers)
{
	memset(h, 0, sizeof(*h));
	h->hdrs = headers;
	h->allow = s->allow;
	h->n_allow = s->n_allow;
	h->check = !s->proxy;
	h->refused = MCPX_ADDR_PUBLIC;
	if ((s->cred_header && mcpx_egress_header(&h->hdrs, s->cred_header, s->cred_value) < 0) ||
	    !(h->x.easy = mcpx_curl_easy_init()) || set_fixed(h, s) != CURLE_OK) {
		mcpx_egress_handle_close(h, NULL);
		return -ENOMEM;
	}
	return 0;
}

void mcpx_egress_handle_close(struct mcpx_egress_handle *h, struct mcpx_curl_loop *cl)
{
	if (cl)
		mcpx_curl_loop_remove(cl, &h->x);
	if (h->x.easy)
		mcpx_curl_easy_cleanup(h->x.easy);
	h->x.easy = NULL;
	h->x.running = false;
	free_headers(h);
}

bool mcpx_egress_refused(const struct mcpx_egress_handle *h, CURLcode rc)
{
	return h->refused != MCPX_ADDR_PUBLIC && rc == CURLE_COULDNT_CONNECT;
}
