/*
 * tokenreview.h - Kubernetes ServiceAccount tokens, checked with the API
 * server's TokenReview (authentication.k8s.io/v1), over libcurl on the
 * server's event loop.
 *
 * A review POSTs the presented token with spec.audiences [audience] to
 * <api>/apis/authentication.k8s.io/v1/tokenreviews, authenticated with
 * this pod's own ServiceAccount token (re-read for each review: kubelet
 * rotates it) and checked against the cluster CA. A token is admitted when
 * status.authenticated is true, status.audiences holds the audience, and
 * status.user.username is a ServiceAccount's
 * ("system:serviceaccount:<namespace>:<name>"), which becomes the caller.
 * Anything else is a refusal; an API server that cannot be reached, answers
 * other than 201/200, or takes longer than MCPX_TOKENREVIEW_TIMEOUT_MS is
 * "unavailable": never an admission.
 *
 * Verdicts are cached by the token's SHA-256 (never the token): an
 * admission for at most 60 s and never beyond the token's own expiry (the
 * JWT's exp claim, read only to shorten the cache), a refusal for
 * MCPX_TOKENREVIEW_NEGATIVE_S; unavailability is not cached. This module
 * never logs a token; the HTTP gate decides what to answer.
 *
 * Reviews are work an unauthenticated peer asks for: only JWT-shaped
 * values (mcpx_tokenreview_shaped) are sent, at most
 * MCPX_TOKENREVIEW_IN_FLIGHT_MAX at once, and new ones are metered per
 * client address and in total (review_limit.h). Each decision is counted
 * in /metrics (mcp_exec_tokenreviews_total by outcome).
 */
#ifndef MCPX_TOKENREVIEW_H
#define MCPX_TOKENREVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "caller.h"
#include "err.h"
#include "review_limit.h"

struct mcpx_loop;
struct mcpx_tokenreview;
struct mcpx_review;

#define MCPX_TOKENREVIEW_TTL_S 60
#define MCPX_TOKENREVIEW_NEGATIVE_S 10
#define MCPX_TOKENREVIEW_TIMEOUT_MS 5000
#define MCPX_TOKENREVIEW_CACHE_MAX 4096
/* The longest value reviewed: a projected ServiceAccount token is about
 * 1 KiB; the server reads no Authorization header past 4 KiB anyway. */
#define MCPX_TOKENREVIEW_TOKEN_MAX 4096
#define MCPX_TOKENREVIEW_IN_FLIGHT_MAX 16

struct mcpx_tokenreview_opts {
	const char *api;        /* https://host[:port], no trailing path */
	const char *token_file; /* this pod's own token */
	const char *ca_file;    /* PEM bundle the API server's certificate must chain to */
	const char *audience;
	struct mcpx_review_limit_opts limits; /* zeros: the defaults */
};

/* Checks that the files can be read (a missing pod token is a
 * misconfiguration, refused at start). Strings are copied. */
int mcpx_tokenreview_new(struct mcpx_tokenreview **out, struct mcpx_loop *loop,
                         const struct mcpx_tokenreview_opts *o, struct mcpx_err *err);
/* Ends the reviews in flight, each told -ECANCELED first. */
void mcpx_tokenreview_free(struct mcpx_tokenreview *tr);

/* The cached verdict for token (len bytes): 0 admitted (caller set),
 * -EACCES refused, -ENOENT not known (or expired). */
int mcpx_tokenreview_cached(struct mcpx_tokenreview *tr, const char *token, size_t len, time_t now,
                            char caller[MCPX_CALLER_MAX]);

/* The verdict of a review: 0 admitted with caller, -EACCES refused,
 * -EIO the API server was unreachable, failed or too slow, -ECANCELED the
 * module is being freed. */
typedef void (*mcpx_review_fn)(void *arg, int verdict, const char *caller);

/* True when token (len bytes) could be a JWT (RFC 7519, compact form): at
 * most MCPX_TOKENREVIEW_TOKEN_MAX bytes, three non-empty base64url parts,
 * the first two JSON objects. Nothing else is worth asking about. */
bool mcpx_tokenreview_shaped(const char *token, size_t len);

/* Starts a review of token (copied, and wiped when done) for a peer at
 * addr (its address as text; NULL for a token admitted before, which only
 * the total rate meters). 0 and *out: fn runs later, on the loop, exactly
 * once unless the review is cancelled. Otherwise nothing is called and:
 * -EAGAIN the address is past its rate, -EBUSY the total rate is spent,
 * -ENOBUFS MCPX_TOKENREVIEW_IN_FLIGHT_MAX reviews are in flight, -ENOMEM. */
int mcpx_tokenreview_start(struct mcpx_tokenreview *tr, const char *token, size_t len,
                           const char *addr, mcpx_review_fn fn, void *arg,
                           struct mcpx_review **out);
/* Cancels a review in flight: fn is not called. */
void mcpx_review_cancel(struct mcpx_review *r);

#endif
