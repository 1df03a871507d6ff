/*
 * auth.h - the shared-secret check for the HTTP transports.
 *
 * The token comes from MCP_EXEC_AUTH_TOKEN or MCP_EXEC_AUTH_TOKEN_FILE (a
 * mounted Secret). Only its SHA-256 is kept; the plaintext is wiped as soon as
 * it is hashed. A presented value (X-MCP-AUTH, or Authorization: Bearer) is
 * hashed and compared in constant time, so neither the comparison time nor the
 * length leaks. A token file is re-read when its mtime or size changes
 * (checked at most once a second), so a rotated Secret takes effect without a
 * restart.
 */
#ifndef MCPX_AUTH_H
#define MCPX_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "err.h"

struct mcpx_auth;

/* token (heap string, may be NULL) is taken over: wiped and freed here.
 * token_file may be "" (none). With neither, auth is disabled. Fails when
 * the file cannot be read or holds an empty token. */
int mcpx_auth_new(struct mcpx_auth **out, char **token, const char *token_file,
		  struct mcpx_err *err);
void mcpx_auth_free(struct mcpx_auth *a);

bool mcpx_auth_enabled(const struct mcpx_auth *a);

/* Checks the two header values (either may be NULL). Returns true when auth
 * is disabled or one of them carries the token ("Bearer <token>" for
 * Authorization, case-insensitive scheme). */
bool mcpx_auth_check(struct mcpx_auth *a, const char *x_mcp_auth, const char *authorization,
		     time_t now);

/* The token's SHA-256 (for deriving the session key); NULL when disabled. */
const unsigned char *mcpx_auth_digest(const struct mcpx_auth *a);

#endif
