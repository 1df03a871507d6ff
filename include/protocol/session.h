/*
 * session.h - self-validating Streamable HTTP session ids.
 *
 * Any replica must accept any request, so a session id carries its own state:
 * the negotiated protocol version and an expiry, authenticated with
 * HMAC-SHA256 under a key every replica shares (MCP_EXEC_SESSION_KEY, or one
 * derived from the auth token). A forged, expired or foreign-key id fails
 * verification and the transport answers 404, so the client re-initializes.
 * DELETE revokes an id on the replica that received it (a bounded local set).
 *
 * Format (visible ASCII only): "m2." base64url(payload) "." base64url(mac),
 * payload = version(10 bytes) | expiry (8 bytes, big-endian unix seconds) |
 * nonce (12 random bytes) | caller tag (12 bytes). The caller tag binds an
 * id to the caller that created it (caller.h): another caller's token does
 * not continue it, and the id does not name the caller.
 */
#ifndef MCPX_SESSION_H
#define MCPX_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define MCPX_SESSION_ID_MAX 128

struct mcpx_sessions;

/* key (MCP_EXEC_SESSION_KEY) may be NULL or "": then the MAC key is derived
 * from the auth token when given, as
 * HMAC-SHA256(key="mcp-exec session key v1", data=SHA-256(token)), else it is
 * random for this process only (sessions then do not cross replicas; fine for
 * loopback use). A configured key is used as
 * HMAC-SHA256(key="mcp-exec session config key v1", data=key). ttl_s 0 means
 * one day. NULL when out of memory or randomness. The caller keeps its
 * strings. */
struct mcpx_sessions *mcpx_sessions_new(const char *key, const char *auth_token, unsigned ttl_s);
/* The same, from the token's SHA-256 (see mcpx_auth_digest(); may be NULL),
 * for callers that no longer hold the token. Both constructors derive the
 * same key from the same token, so replicas that share a token accept each
 * other's ids whichever one they use. */
struct mcpx_sessions *mcpx_sessions_new_digest(const char *key, const unsigned char *token_sha256,
                                               unsigned ttl_s);
void mcpx_sessions_free(struct mcpx_sessions *s);
/* Re-derives a token-derived key from the token's new SHA-256 (the token
 * file was rotated): ids minted under the old token stop verifying, and
 * every replica that reads the new token derives the same new key. A key
 * from MCP_EXEC_SESSION_KEY, or a process-local random one, stays. */
void mcpx_sessions_rekey(struct mcpx_sessions *s, const unsigned char *token_sha256);
/* True when the key came from configuration or the token (shared by replicas). */
bool mcpx_sessions_shared_key(const struct mcpx_sessions *s);

/* Mints an id for version into out (MCPX_SESSION_ID_MAX bytes). 0 or -errno;
 * -EINVAL for a version without sessions (the session-based revisions
 * 2024-11-05 to 2025-11-25 have them; 2026-07-28 is stateless). */
int mcpx_session_mint(struct mcpx_sessions *s, const char *version, time_t now, char *out);

/* The same, bound to caller (NUL-terminated; "" for an anonymous one). */
int mcpx_session_mint_for(struct mcpx_sessions *s, const char *version, const char *caller,
                          time_t now, char *out);

/* Verifies id; on success copies the version (16 bytes) and returns 0.
 * -EINVAL malformed, -EPERM bad MAC, -ETIMEDOUT expired, -ENOENT revoked. */
int mcpx_session_verify(struct mcpx_sessions *s, const char *id, size_t len, time_t now,
                        char version[16]);
/* The same for an id minted for caller; -EACCES: a genuine id, but of
 * another caller. mcpx_session_verify is this with caller "". */
int mcpx_session_verify_for(struct mcpx_sessions *s, const char *id, size_t len, const char *caller,
                            time_t now, char version[16]);

/* Revokes an id on this replica (DELETE) and forgets its notes. Ids that do
 * not verify are ignored. The set is bounded; the oldest entries are dropped
 * first, and expired ones are purged. */
void mcpx_session_revoke(struct mcpx_sessions *s, const char *id, size_t len, time_t now);

/* Per-replica notes about live sessions, keyed by id: the logging level a
 * client set, and when it was last seen (for the active-sessions gauge).
 * Bounded LRU; a miss just means defaults. */
int mcpx_session_get_level(struct mcpx_sessions *s, const char *id, int def);
void mcpx_session_set_level(struct mcpx_sessions *s, const char *id, int level);
void mcpx_session_touch(struct mcpx_sessions *s, const char *id, time_t now);
size_t mcpx_session_active(struct mcpx_sessions *s, time_t now, unsigned window_s);

#endif
