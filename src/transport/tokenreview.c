/*
 * tokenreview.c - Kubernetes TokenReview over libcurl on the event loop
 * (tokenreview.h).
 *
 * curl's multi interface is driven by the loop as the egress broker's is
 * (curl_loop.h). A review is one POST with a hard total timeout; its
 * verdict is decided from the response only when everything in it checks
 * out, so a half-answer, a redirect, a proxy or an unexpected status can
 * only ever refuse or fail.
 *
 * Threats handled here: a token for another service (the audience is
 * demanded in the request and checked in the response), a non-ServiceAccount
 * user passing as a caller (only system:serviceaccount:<ns>:<name> is
 * accepted, and only characters Kubernetes allows in those names), a
 * spoofed API server (the cluster CA, no proxy from the environment, no
 * redirects), and an unreachable API server turning into an admission (it
 * is a distinct verdict the gate answers with 503). Tokens live in memory
 * only for the review and are wiped; the cache keeps their SHA-256.
 *
 * Unauthenticated peers choose what is reviewed, so the work is bounded
 * before any is done: only JWT-shaped values are candidates
 * (mcpx_tokenreview_shaped), at most MCPX_TOKENREVIEW_IN_FLIGHT_MAX
 * reviews run at once, and new ones are metered per client address and in
 * total (review_limit.h). A response whose strings hold U+0000 is refused:
 * cJSON would hand out the username cut at the NUL.
 */
#include "tokenreview.h"

#include "curl_lib.h"
#include "curl_loop.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base64.h"
#include "buf.h"
#include "crypto.h"
#include "json_text.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "review_limit.h"

#define RESPONSE_MAX (64u << 10)
#define POD_TOKEN_MAX 16384
#define SA_PREFIX "system:serviceaccount:"
/* Refusals past the limits are logged as one line per this many seconds. */
#define LIMITED_LOG_S 10

struct entry {
	uint8_t digest[MCPX_SHA256_LEN];
	bool used;
	bool admitted;
	time_t until;
	char caller[MCPX_CALLER_MAX];
};

struct mcpx_review {
	struct mcpx_tokenreview *tr;
	struct mcpx_review *next;
	CURL *easy;
	struct curl_slist *hdrs;
	char *body; /* holds the token: wiped */
	size_t body_len;
	struct mcpx_buf resp;
	uint8_t digest[MCPX_SHA256_LEN];
	time_t token_exp; /* 0: unknown */
	mcpx_review_fn fn;
	void *arg;
	char errbuf[CURL_ERROR_SIZE];
};

struct mcpx_tokenreview {
	struct mcpx_curl_loop curl;
	char url[600];
	char *token_file, *ca_file, *audience;
	struct mcpx_review *reviews;
	unsigned in_flight; /* the reviews on the list */
	struct mcpx_review_limit limit;
	unsigned long limited;   /* refusals not logged yet */
	uint64_t limited_log_us; /* when the last were */
	struct entry cache[MCPX_TOKENREVIEW_CACHE_MAX];
};

/* ---- the cache ---------------------------------------------------------- */

static struct entry *cache_find(struct mcpx_tokenreview *tr, const uint8_t d[MCPX_SHA256_LEN])
{
	for (size_t i = 0; i < MCPX_TOKENREVIEW_CACHE_MAX; i++)
		if (tr->cache[i].used && memcmp(tr->cache[i].digest, d, MCPX_SHA256_LEN) == 0)
			return &tr->cache[i];
	return NULL;
}

static void cache_put(struct mcpx_tokenreview *tr, const uint8_t d[MCPX_SHA256_LEN], bool admitted,
                      time_t until, const char *caller)
{
	struct entry *e = cache_find(tr, d);
	time_t now = time(NULL);

	/* A slot: the same token's, a free or expired one, else the one
	 * that expires first. */
	for (size_t i = 0; !e && i < MCPX_TOKENREVIEW_CACHE_MAX; i++)
		if (!tr->cache[i].used || tr->cache[i].until <= now)
			e = &tr->cache[i];
	if (!e) {
		e = &tr->cache[0];
		for (size_t i = 1; i < MCPX_TOKENREVIEW_CACHE_MAX; i++)
			if (tr->cache[i].until < e->until)
				e = &tr->cache[i];
	}
	memcpy(e->digest, d, MCPX_SHA256_LEN);
	e->used = true;
	e->admitted = admitted;
	e->until = until;
	snprintf(e->caller, sizeof(e->caller), "%s", caller ? caller : "");
}

int mcpx_tokenreview_cached(struct mcpx_tokenreview *tr, const char *token, size_t len, time_t now,
                            char caller[MCPX_CALLER_MAX])
{
	uint8_t d[MCPX_SHA256_LEN];
	struct entry *e;

	mcpx_sha256(token, len, d);
	e = cache_find(tr, d);
	if (!e || e->until <= now)
		return -ENOENT;
	if (!e->admitted)
		return -EACCES;
	snprintf(caller, MCPX_CALLER_MAX, "%s", e->caller);
	return 0;
}

/* ---- what may be reviewed ------------------------------------------------ */

/* A base64url part (unpadded) that decodes; a JSON object when json. */
static bool jwt_part(const char *p, size_t n, bool json)
{
	char buf[MCPX_TOKENREVIEW_TOKEN_MAX];
	ssize_t m;
	cJSON *j;
	bool ok;

	if (n == 0 || (m = mcpx_base64url_decode(p, n, buf, sizeof(buf))) <= 0)
		return false;
	if (!json)
		return true;
	j = cJSON_ParseWithLength(buf, (size_t)m);
	ok = cJSON_IsObject(j);
	cJSON_Delete(j);
	return ok;
}

bool mcpx_tokenreview_shaped(const char *tok, size_t len)
{
	const char *a, *b, *end = tok + len;

	if (len == 0 || len > MCPX_TOKENREVIEW_TOKEN_MAX || !(a = memchr(tok, '.', len)) ||
	    !(b = memchr(a + 1, '.', (size_t)(end - a - 1))) ||
	    memchr(b + 1, '.', (size_t)(end - b - 1)))
		return false;
	return jwt_part(tok, (size_t)(a - tok), true) &&
	       jwt_part(a + 1, (size_t)(b - a - 1), true) &&
	       jwt_part(b + 1, (size_t)(end - b - 1), false);
}

/* Counts a refusal past the limits, and logs them at most once per
 * LIMITED_LOG_S: a flood must not become a flood of log lines. */
static void limited(struct mcpx_tokenreview *tr, const char *outcome, uint64_t now_us)
{
	mcpx_metrics_tokenreview(outcome);
	tr->limited++;
	if (tr->limited_log_us && now_us - tr->limited_log_us < LIMITED_LOG_S * 1000000ull)
		return;
	mcpx_warn("TokenReview: %lu requests answered 429 (past %u reviews/s per client address, "
	          "%u/s in total, or %u in flight)",
	          tr->limited, tr->limit.o.addr_rate, tr->limit.o.total_rate,
	          MCPX_TOKENREVIEW_IN_FLIGHT_MAX);
	tr->limited = 0;
	tr->limited_log_us = now_us;
}

/* ---- one review ------------------------------------------------------------ */

/* The JWT's exp claim, without verifying anything: it can only shorten how
 * long an admission is cached. 0 when it cannot be read. */
static time_t jwt_exp(const char *tok, size_t len)
{
	const char *a = memchr(tok, '.', len), *b;
	char payload[4096];
	ssize_t n;
	cJSON *j, *exp;
	time_t t = 0;

	if (!a || !(b = memchr(a + 1, '.', len - (size_t)(a + 1 - tok))))
		return 0;
	n = mcpx_base64url_decode(a + 1, (size_t)(b - a - 1), payload, sizeof(payload) - 1);
	if (n <= 0)
		return 0;
	j = cJSON_ParseWithLength(payload, (size_t)n);
	exp = cJSON_GetObjectItemCaseSensitive(j, "exp");
	if (cJSON_IsNumber(exp) && exp->valuedouble > 0 && exp->valuedouble < 1e12)
		t = (time_t)exp->valuedouble;
	cJSON_Delete(j);
	return t;
}

/* DNS-1123 label (namespace) or subdomain (name) characters. */
static bool k8s_name_ok(const char *s, size_t n, size_t max)
{
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      (max > 63 && s[i] == '.')))
			return false;
	return true;
}

/* The username, when it is a ServiceAccount's. */
static bool sa_username_ok(const char *u)
{
	const char *ns, *colon;

	if (strncmp(u, SA_PREFIX, strlen(SA_PREFIX)) != 0)
		return false;
	ns = u + strlen(SA_PREFIX);
	colon = strchr(ns, ':');
	return colon && k8s_name_ok(ns, (size_t)(colon - ns), 63) &&
	       k8s_name_ok(colon + 1, strlen(colon + 1), 253);
}

/* The verdict of a 200/201 response body; caller filled when admitted. */
static int judge(const struct mcpx_tokenreview *tr, const char *body, size_t len,
                 char caller[MCPX_CALLER_MAX])
{
	cJSON *j = cJSON_ParseWithLength(body, len);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status");
	const cJSON *auth = cJSON_GetObjectItemCaseSensitive(st, "authenticated");
	const cJSON *aud = cJSON_GetObjectItemCaseSensitive(st, "audiences");
	const cJSON *user = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(st, "user"), "username");
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
	struct mcpx_json_text_flaw flaw;
	bool aud_ok = false;
	int rc = -EACCES;

	if (mcpx_json_text_check(body, len, &flaw) < 0) {
		mcpx_warn("TokenReview at %s answered with %s at byte %zu: refused", tr->url,
		          flaw.why, flaw.at);
		goto out;
	}
	if (!j || !cJSON_IsString(kind) || strcmp(kind->valuestring, "TokenReview") != 0) {
		rc = -EIO; /* not an answer to the question asked */
		goto out;
	}
	for (const cJSON *a = cJSON_IsArray(aud) ? aud->child : NULL; a; a = a->next)
		aud_ok |= cJSON_IsString(a) && strcmp(a->valuestring, tr->audience) == 0;
	if (cJSON_IsTrue(auth) && aud_ok && cJSON_IsString(user) &&
	    strlen(user->valuestring) < MCPX_CALLER_MAX && sa_username_ok(user->valuestring)) {
		snprintf(caller, MCPX_CALLER_MAX, "%s", user->valuestring);
		rc = 0;
	}
out:
	cJSON_Delete(j);
	return rc;
}

static void review_free(struct mcpx_review *r)
{
	if (r->easy) {
		mcpx_curl_multi_remove_handle(r->tr->curl.multi, r->easy);
		mcpx_curl_easy_cleanup(r->easy);
	}
	for (struct curl_slist *l = r->hdrs; l; l = l->next)
		mcpx_wipe(l->data, strlen(l->data)); /* the pod's own token */
	mcpx_curl_slist_free_all(r->hdrs);
	if (r->body) {
		mcpx_wipe(r->body, r->body_len);
		free(r->body);
	}
	mcpx_buf_free(&r->resp);
	for (struct mcpx_review **pp = &r->tr->reviews; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			r->tr->in_flight--;
			break;
		}
	free(r);
}

static void review_done(struct mcpx_review *r, CURLcode cc)
{
	struct mcpx_tokenreview *tr = r->tr;
	char caller[MCPX_CALLER_MAX] = "";
	long status = 0;
	time_t now = time(NULL), until;
	int verdict;

	mcpx_curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK) {
		mcpx_warn("TokenReview at %s failed: %s", tr->url,
		          r->errbuf[0] ? r->errbuf : mcpx_curl_easy_strerror(cc));
		verdict = -EIO;
	} else if (status != 200 && status != 201) {
		mcpx_warn("TokenReview at %s answered HTTP %ld", tr->url, status);
		verdict = -EIO;
	} else {
		verdict = judge(tr, r->resp.data, r->resp.len, caller);
		if (verdict == -EIO)
			mcpx_warn("TokenReview at %s answered something other than a TokenReview",
			          tr->url);
	}
	mcpx_metrics_tokenreview(verdict == 0         ? "admitted"
	                         : verdict == -EACCES ? "refused"
	                                              : "unavailable");
	if (verdict == 0) {
		until = now + MCPX_TOKENREVIEW_TTL_S;
		if (r->token_exp && r->token_exp < until)
			until = r->token_exp;
		cache_put(tr, r->digest, true, until, caller);
	} else if (verdict == -EACCES) {
		cache_put(tr, r->digest, false, now + MCPX_TOKENREVIEW_NEGATIVE_S, NULL);
	}
	r->fn(r->arg, verdict, verdict == 0 ? caller : NULL);
	review_free(r);
}

/* A review's transfer ended (curl_loop.h). */
static void curl_done(void *arg, CURL *easy, CURLcode cc)
{
	struct mcpx_review *r = NULL;

	(void)arg;
	mcpx_curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&r);
	if (r)
		review_done(r, cc);
}

static size_t write_cb(char *p, size_t size, size_t n, void *arg)
{
	struct mcpx_review *r = arg;

	if (mcpx_buf_add(&r->resp, p, size * n) < 0)
		return 0; /* larger than any TokenReview: the transfer fails */
	return size * n;
}

/* "Authorization: Bearer <pod token>", read now: kubelet rotates it. */
static struct curl_slist *auth_header(const struct mcpx_tokenreview *tr)
{
	char buf[POD_TOKEN_MAX + 32];
	struct curl_slist *l = NULL;
	size_t n = 0;
	ssize_t got;
	int fd = open(tr->token_file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	n = (size_t)snprintf(buf, sizeof(buf), "Authorization: Bearer ");
	while ((got = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)got;
	close(fd);
	while (n > 22 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	if (n > 22 && n < sizeof(buf) - 1)
		l = mcpx_curl_slist_append(NULL, buf);
	mcpx_wipe(buf, sizeof(buf));
	return l;
}

static char *request_body(const struct mcpx_tokenreview *tr, const char *token, size_t len)
{
	cJSON *o = cJSON_CreateObject(), *spec, *aud;
	char *tok = malloc(len + 1), *out = NULL;

	if (o && tok) {
		memcpy(tok, token, len);
		tok[len] = '\0';
		cJSON_AddStringToObject(o, "apiVersion", "authentication.k8s.io/v1");
		cJSON_AddStringToObject(o, "kind", "TokenReview");
		spec = cJSON_AddObjectToObject(o, "spec");
		cJSON_AddStringToObject(spec, "token", tok);
		aud = cJSON_AddArrayToObject(spec, "audiences");
		cJSON_AddItemToArray(aud, cJSON_CreateString(tr->audience));
		out = cJSON_PrintUnformatted(o);
		/* cJSON's copy of the token goes with the tree: wipe it first. */
		{
			cJSON *t = cJSON_GetObjectItemCaseSensitive(spec, "token");
			if (t && t->valuestring)
				mcpx_wipe(t->valuestring, strlen(t->valuestring));
		}
	}
	if (tok) {
		mcpx_wipe(tok, len);
		free(tok);
	}
	cJSON_Delete(o);
	return out;
}

/* May a review start now (review_limit.h)? 0, or the refusal, counted. */
static int admit_review(struct mcpx_tokenreview *tr, const char *addr)
{
	uint64_t now = mcpx_now_us();
	int rc;

	if (tr->in_flight >= MCPX_TOKENREVIEW_IN_FLIGHT_MAX) {
		limited(tr, "limited_in_flight", now);
		return -ENOBUFS;
	}
	rc = mcpx_review_limit_take(&tr->limit, addr, now);
	if (rc < 0)
		limited(tr, rc == -EAGAIN ? "limited_address" : "limited_total", now);
	return rc;
}

int mcpx_tokenreview_start(struct mcpx_tokenreview *tr, const char *token, size_t len,
                           const char *addr, mcpx_review_fn fn, void *arg, struct mcpx_review **out)
{
	struct mcpx_review *r;
	struct curl_slist *h;
	int rc;

	*out = NULL;
	if ((rc = admit_review(tr, addr)) < 0)
		return rc;
	if (!(r = calloc(1, sizeof(*r))))
		return -ENOMEM;
	r->tr = tr;
	r->fn = fn;
	r->arg = arg;
	mcpx_sha256(token, len, r->digest);
	r->token_exp = jwt_exp(token, len);
	mcpx_buf_init(&r->resp, RESPONSE_MAX);
	r->next = tr->reviews;
	tr->reviews = r;
	tr->in_flight++;
	r->body = request_body(tr, token, len);
	r->hdrs = auth_header(tr);
	if (!r->hdrs)
		mcpx_warn("TokenReview: cannot read this pod's token %s", tr->token_file);
	h = r->hdrs ? mcpx_curl_slist_append(r->hdrs, "Content-Type: application/json") : NULL;
	if (h)
		h = mcpx_curl_slist_append(h, "Accept: application/json");
	r->easy = mcpx_curl_easy_init();
	if (!r->easy) {
		review_free(r);
		return -ENOMEM;
	}
	/* Without a body or the pod's token there is no review to ask for:
	 * the transfer is left to fail (an empty URL), so the verdict is
	 * "unavailable", told on a later loop turn like any other. */
	r->body_len = r->body ? strlen(r->body) : 0;
	mcpx_curl_easy_setopt(r->easy, CURLOPT_URL, r->body && h ? tr->url : "");
	mcpx_curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	mcpx_curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->hdrs);
	mcpx_curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body ? r->body : "");
	mcpx_curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE, (long)r->body_len);
	mcpx_curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, write_cb);
	mcpx_curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	mcpx_curl_easy_setopt(r->easy, CURLOPT_ERRORBUFFER, r->errbuf);
	mcpx_curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, (long)MCPX_TOKENREVIEW_TIMEOUT_MS);
	mcpx_curl_easy_setopt(r->easy, CURLOPT_CAINFO, tr->ca_file);
	mcpx_curl_easy_setopt(r->easy, CURLOPT_SSL_VERIFYPEER, 1L);
	mcpx_curl_easy_setopt(r->easy, CURLOPT_SSL_VERIFYHOST, 2L);
	mcpx_curl_easy_setopt(r->easy, CURLOPT_PROXY, ""); /* never from the environment */
	mcpx_curl_easy_setopt(r->easy, CURLOPT_FOLLOWLOCATION, 0L);
	mcpx_curl_easy_setopt(r->easy, CURLOPT_PROTOCOLS_STR, "https");
	mcpx_curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
	if (mcpx_curl_multi_add_handle(tr->curl.multi, r->easy) != CURLM_OK) {
		review_free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

void mcpx_review_cancel(struct mcpx_review *r)
{
	if (r)
		review_free(r);
}

int mcpx_tokenreview_new(struct mcpx_tokenreview **out, struct mcpx_loop *loop,
                         const struct mcpx_tokenreview_opts *o, struct mcpx_err *err)
{
	struct mcpx_tokenreview *tr;

	*out = NULL;
	if (access(o->token_file, R_OK) < 0)
		return mcpx_err_set(err, errno,
		                    "MCP_EXEC_AUTH_KUBERNETES: cannot read this pod's token %s: %s "
		                    "(automountServiceAccountToken, or "
		                    "MCP_EXEC_AUTH_KUBERNETES_TOKEN_FILE)",
		                    o->token_file, strerror(errno));
	if (access(o->ca_file, R_OK) < 0)
		return mcpx_err_set(err, errno,
		                    "MCP_EXEC_AUTH_KUBERNETES: cannot read the cluster CA %s: %s",
		                    o->ca_file, strerror(errno));
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	mcpx_curl_loop_init(&tr->curl, loop, "TokenReview", curl_done, tr);
	mcpx_review_limit_init(&tr->limit, &o->limits, mcpx_now_us());
	snprintf(tr->url, sizeof(tr->url), "%s/apis/authentication.k8s.io/v1/tokenreviews", o->api);
	tr->token_file = strdup(o->token_file);
	tr->ca_file = strdup(o->ca_file);
	tr->audience = strdup(o->audience);
	/* The multi handle is made now, not with the first review: a server
	 * told to ask Kubernetes fails at start-up when libcurl cannot be
	 * loaded, not at its first caller. */
	if (!tr->token_file || !tr->ca_file || !tr->audience || !mcpx_curl_loop_multi(&tr->curl)) {
		mcpx_tokenreview_free(tr);
		return mcpx_err_set(err, ENOMEM, "out of memory");
	}
	*out = tr;
	return 0;
}

void mcpx_tokenreview_free(struct mcpx_tokenreview *tr)
{
	if (!tr)
		return;
	/* Whoever waits is told, so nothing keeps a pointer to a review
	 * that is gone. */
	while (tr->reviews) {
		struct mcpx_review *r = tr->reviews;

		r->fn(r->arg, -ECANCELED, NULL);
		review_free(r);
	}
	mcpx_curl_loop_fini(&tr->curl);
	free(tr->token_file);
	free(tr->ca_file);
	free(tr->audience);
	mcpx_wipe(tr->cache, sizeof(tr->cache));
	free(tr);
}
