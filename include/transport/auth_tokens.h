/*
 * auth_tokens.h - the named tokens file (MCP_EXEC_AUTH_TOKENS_FILE): which
 * caller each token belongs to.
 *
 * The file is a JSON list, at most MCPX_AUTH_TOKENS_MAX_BYTES:
 *
 *   [{"caller": "billing-agent", "token_sha256": "<64 hex digits>"}, ...]
 *
 * It holds hashes only, so the file itself opens no door. Parsing is
 * strict: unknown or repeated keys, a caller name outside
 * MCPX_CALLER_NAME_CHARS, a hash that is not 64 hex digits and a hash listed
 * twice are errors naming the entry. One caller may own several tokens (a
 * rotation: the new one is added, clients move, the old one is removed).
 * Names beginning with "system:" are refused: they are Kubernetes' (a
 * named token must not pass for a ServiceAccount). This module neither
 * reads files nor compares tokens (auth.c does both).
 */
#ifndef MCPX_AUTH_TOKENS_H
#define MCPX_AUTH_TOKENS_H

#include <stddef.h>
#include <stdint.h>

#include "caller.h"
#include "crypto.h"
#include "err.h"

#define MCPX_AUTH_TOKENS_MAX_BYTES (1u << 20)
#define MCPX_AUTH_TOKENS_MAX 4096
/* A named token's caller: 1..128 bytes of MCPX_CALLER_NAME_CHARS. */
#define MCPX_CALLER_NAME_MAX 128
#define MCPX_CALLER_NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-@:"

struct mcpx_auth_token {
	char caller[MCPX_CALLER_NAME_MAX + 1];
	uint8_t digest[MCPX_SHA256_LEN];
	/* Which credential this is, for the requests it let in (auth.h,
	 * mcpx_auth_cred_live); 0 from the parser, set by auth.c. */
	unsigned long cred;
};

/* One version of the file, owned by whoever parsed it: free with
 * mcpx_auth_tokens_free (which wipes the digests). */
struct mcpx_auth_tokens {
	struct mcpx_auth_token *v;
	size_t n;
};

/* Parses len bytes of JSON into *out (a new list). 0, or -EINVAL / -E2BIG /
 * -ENOMEM with err saying which entry and why (never a hash). */
int mcpx_auth_tokens_parse(const char *json, size_t len, struct mcpx_auth_tokens **out,
                           struct mcpx_err *err);
void mcpx_auth_tokens_free(struct mcpx_auth_tokens *t);

#endif
