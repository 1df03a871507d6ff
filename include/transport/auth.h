/*
 * auth.h - the shared-secret check for the HTTP transports.
 *
 * The token comes from MCP_EXEC_AUTH_TOKEN or MCP_EXEC_AUTH_TOKEN_FILE (a
 * mounted Secret). Only its SHA-256 is kept; the plaintext is wiped as soon as
 * it is hashed. A presented value (X-MCP-AUTH, or Authorization: Bearer) is
 * hashed and compared in constant time, so neither the comparison time nor the
 * length leaks. A token file is re-read when its mtime or size changes
 * (checked at most once a second), so a rotated Secret takes effect without a
 * restart. Surrounding whitespace is not part of a token; a token that is
 * only whitespace, or holds a control character, is refused.
 */
#ifndef MCPX_AUTH_H
#define MCPX_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "auth_tokens.h"
#include "err.h"

struct mcpx_auth;

/* token (heap string, may be NULL) is taken over: wiped and freed here.
 * token_file may be "" (none). With neither, auth is disabled. Fails when
 * the file cannot be read, or when either source holds nothing but
 * whitespace or a control character. */
int mcpx_auth_new(struct mcpx_auth **out, char **token, const char *token_file,
		  struct mcpx_err *err);
void mcpx_auth_free(struct mcpx_auth *a);

bool mcpx_auth_enabled(const struct mcpx_auth *a);

/* Checks the two header values, each (pointer, length) and either may be
 * NULL/0. The values are compared whole, as given: the caller trims the
 * surrounding whitespace HTTP allows. Returns true when auth is disabled or
 * one of them carries the token ("Bearer <token>" for Authorization,
 * case-insensitive scheme). May re-read the token file (at most once a
 * second of now). */
bool mcpx_auth_check(struct mcpx_auth *a, const char *x_mcp_auth, size_t x_len,
		     const char *authorization, size_t authz_len, time_t now);

/* Adds the named tokens file (auth_tokens.h) at path ("" or NULL: none)
 * and enables auth. run_may_read (may be NULL) says whether a run could
 * read a path: such a tokens file is refused, now and at every reload.
 * Fails when the file cannot be read or parsed. */
int mcpx_auth_set_tokens_file(struct mcpx_auth *a, const char *path,
                              bool (*run_may_read)(void *ctx, const char *path), void *ctx,
                              struct mcpx_err *err);
/* Entries of the tokens file in force (0 without one). */
size_t mcpx_auth_tokens_count(const struct mcpx_auth *a);

/* Who presents these headers: 0 with caller set to the name (the single
 * token's is "default", a named token's its entry's caller, a
 * ServiceAccount's its username), -EACCES when no token matches, or, with
 * Kubernetes tokens on, -EINPROGRESS: a JWT-shaped Bearer token
 * (mcpx_tokenreview_shaped) none of ours matches and no cached TokenReview
 * verdict covers, to be reviewed (mcpx_auth_review); any other value is
 * -EACCES at once. With auth disabled, 0 and caller "". Each value
 * is hashed once and compared with every known token, whatever matched, so
 * the time does not tell which one. May re-read the token files (each at
 * most once a second of now). cred (may be NULL) receives which of our
 * tokens matched (mcpx_auth_cred_live), 0 for none of ours (auth
 * disabled, a ServiceAccount). */
int mcpx_auth_identify(struct mcpx_auth *a, const char *x_mcp_auth, size_t x_len,
                       const char *authorization, size_t authz_len, time_t now,
                       char caller[MCPX_CALLER_MAX], unsigned long *cred);

/* Revocation. Each token (the single one, each entry of the tokens file)
 * is a credential with a number that stays the same while a reload keeps
 * that token for that caller. Whoever holds something a request opened
 * (a stream, a run) keeps the number identify gave, and ends it when the
 * number is no longer live: the token was removed, re-assigned to another
 * caller, or (the single token) replaced. */

/* Re-reads the token files if due (each at most once a second of now);
 * to be called about every second, so a removal takes effect without a
 * request presenting a token. */
void mcpx_auth_poll(struct mcpx_auth *a, time_t now);
/* Bumped each time a reload takes a credential away. */
unsigned long mcpx_auth_revocations(const struct mcpx_auth *a);
/* Whether credential cred still lets its caller in; 0 (none of ours) is
 * always live. */
bool mcpx_auth_cred_live(const struct mcpx_auth *a, unsigned long cred);

struct mcpx_tokenreview;
struct mcpx_review;

/* Accepts Kubernetes ServiceAccount tokens checked by tr (tokenreview.h;
 * not taken: the caller frees it after a) and enables auth. */
void mcpx_auth_set_kubernetes(struct mcpx_auth *a, struct mcpx_tokenreview *tr);
/* Starts the TokenReview of the Bearer token in authorization (after
 * mcpx_auth_identify said -EINPROGRESS) for a peer at addr (NULL: a token
 * admitted before); 0 and *out, then fn(arg, verdict, caller) follows on
 * the loop: 0 admitted, -EACCES refused, -EIO unavailable. Otherwise fn is
 * not called: -EINVAL nothing to review, or mcpx_tokenreview_start's
 * refusals (-EAGAIN, -EBUSY, -ENOBUFS: past a limit; -ENOMEM). Cancel
 * with mcpx_review_cancel (tokenreview.h). */
int mcpx_auth_review(struct mcpx_auth *a, const char *authorization, size_t authz_len,
                     const char *addr, void (*fn)(void *arg, int verdict, const char *caller),
                     void *arg, struct mcpx_review **out);

/* The single token's SHA-256 (for deriving the session key); NULL when
 * there is none (auth disabled, or named tokens only). */
const unsigned char *mcpx_auth_digest(const struct mcpx_auth *a);

/* Bumped each time a re-read token file changes the token, so whoever
 * derived something from mcpx_auth_digest() knows to derive it again. */
unsigned long mcpx_auth_generation(const struct mcpx_auth *a);

#endif
