/*
 * session.c - mints and verifies self-validating Streamable HTTP session ids.
 *
 * An id carries the negotiated protocol version and an expiry, sealed with
 * HMAC-SHA256 under a key every replica derives the same way, so any replica
 * can verify any id without shared storage or sticky routing. This module
 * also keeps two small, bounded, per-replica tables: the ids revoked by
 * DELETE, and per-session notes (logging level, last seen). It does not
 * parse HTTP, pick the protocol version, or decide what a failed check means
 * for the client; the transport maps the error codes to status codes.
 */
#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "crypto.h"

/* Wire format: "m2." b64url(42-byte payload) "." b64url(32-byte MAC). The
 * payload ends with the caller tag: the first CALLER_TAG_LEN bytes of
 * HMAC(key, CALLER_TAG_LABEL || caller), which binds the id to the caller
 * that created it without naming the caller in the id. */
#define ID_PREFIX "m2."
#define ID_PREFIX_LEN 3
#define VERSION_LEN 10
#define EXPIRY_LEN 8
#define NONCE_LEN 12
#define CALLER_TAG_LEN 12
#define CALLER_TAG_LABEL "mcp-exec session caller v1"
#define PAYLOAD_LEN (VERSION_LEN + EXPIRY_LEN + NONCE_LEN + CALLER_TAG_LEN)
#define B64_LEN(n) (((n)*4 + 2) / 3) /* unpadded base64 length of n bytes */
#define PAYLOAD_B64_LEN B64_LEN(PAYLOAD_LEN)
#define MAC_B64_LEN B64_LEN(MCPX_SHA256_LEN)
#define BODY_LEN (ID_PREFIX_LEN + PAYLOAD_B64_LEN) /* the MAC covers these bytes */
#define ID_LEN (BODY_LEN + 1 + MAC_B64_LEN)

_Static_assert(ID_LEN < MCPX_SESSION_ID_MAX, "a session id must fit MCPX_SESSION_ID_MAX");

/* Labels that separate the derived MAC key from any other use of the same
 * secret: the auth token also authenticates requests, and must not double as
 * a MAC key verbatim. */
#define TOKEN_KEY_LABEL "mcp-exec session key v1"
#define CONFIG_KEY_LABEL "mcp-exec session config key v1"

#define DEFAULT_TTL_S 86400u
#define REVOKED_MAX 4096
#define NOTES_MAX 1024

/* The protocol versions that have Streamable HTTP sessions. Older clients
 * use the legacy SSE transport; the stateless revision has no sessions. */
static const char *const session_versions[] = {"2024-11-05", "2025-03-26", "2025-06-18",
						     "2025-11-25"};

struct revoked {
	uint8_t digest[MCPX_SHA256_LEN]; /* SHA-256 of the id */
	uint64_t expiry;                 /* the entry is useless after this */
};

struct note {
	uint8_t digest[MCPX_SHA256_LEN]; /* SHA-256 of the id */
	uint64_t used;                   /* LRU clock; 0 marks a free slot */
	time_t last_seen;                /* 0 until touched */
	int level;
	bool has_level;
};

struct mcpx_sessions {
	uint8_t key[MCPX_SHA256_LEN];
	bool shared;
	bool from_token; /* the key follows the auth token (mcpx_sessions_rekey) */
	unsigned ttl_s;

	/* Kept in revocation order, so the oldest entry is always first. */
	struct revoked revoked[REVOKED_MAX];
	size_t n_revoked;

	struct note notes[NOTES_MAX];
	uint64_t clock;
};

/* Decodes exactly B64_LEN(n) characters into exactly n bytes. The decoder
 * is canonical (the unused low bits of the last character must be zero):
 * otherwise several strings would decode to the same id, and revoking one
 * spelling would leave the others alive. */
static int b64url_decode(const char *in, size_t n, uint8_t *out)
{
	ssize_t got = mcpx_base64url_decode(in, B64_LEN(n), out, n);

	return got == (ssize_t)n ? 0 : -EINVAL;
}

static bool version_known(const char *v, size_t len)
{
	for (size_t i = 0; i < sizeof(session_versions) / sizeof(session_versions[0]); i++)
		if (len == VERSION_LEN && memcmp(v, session_versions[i], VERSION_LEN) == 0)
			return true;
	return false;
}

static uint64_t read_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void write_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

static struct mcpx_sessions *sessions_alloc(unsigned ttl_s)
{
	struct mcpx_sessions *s = calloc(1, sizeof(*s));
	if (s)
		s->ttl_s = ttl_s ? ttl_s : DEFAULT_TTL_S;
	return s;
}

struct mcpx_sessions *mcpx_sessions_new_digest(const char *key, const unsigned char *token_sha256,
                                               unsigned ttl_s)
{
	struct mcpx_sessions *s = sessions_alloc(ttl_s);

	if (!s)
		return NULL;
	if (key && key[0]) {
		/* A configured key wins: it lets operators rotate sessions
		 * independently of the auth token. */
		mcpx_hmac_sha256(CONFIG_KEY_LABEL, strlen(CONFIG_KEY_LABEL), key, strlen(key),
		                 s->key);
		s->shared = true;
	} else if (token_sha256) {
		s->from_token = true;
		s->shared = true;
		mcpx_sessions_rekey(s, token_sha256);
	} else if (mcpx_random(s->key, sizeof(s->key)) < 0) {
		/* Without randomness a key would be guessable; refuse. */
		free(s);
		return NULL;
	}
	return s;
}

void mcpx_sessions_rekey(struct mcpx_sessions *s, const unsigned char *token_sha256)
{
	/* Every replica holds the same token, hence the same digest, so they
	 * all derive the same key without extra configuration; and when the
	 * token changes, ids sealed under the old key stop verifying. */
	if (s && token_sha256 && s->from_token)
		mcpx_hmac_sha256(TOKEN_KEY_LABEL, strlen(TOKEN_KEY_LABEL), token_sha256,
		                 MCPX_SHA256_LEN, s->key);
}

struct mcpx_sessions *mcpx_sessions_new(const char *key, const char *auth_token, unsigned ttl_s)
{
	uint8_t digest[MCPX_SHA256_LEN];
	struct mcpx_sessions *s;

	if (!auth_token || !auth_token[0])
		return mcpx_sessions_new_digest(key, NULL, ttl_s);
	/* Going through the digest makes this constructor and
	 * mcpx_sessions_new_digest() agree, whichever one a replica uses. */
	mcpx_sha256(auth_token, strlen(auth_token), digest);
	s = mcpx_sessions_new_digest(key, digest, ttl_s);
	mcpx_wipe(digest, sizeof(digest));
	return s;
}

void mcpx_sessions_free(struct mcpx_sessions *s)
{
	if (!s)
		return;
	mcpx_wipe(s->key, sizeof(s->key));
	free(s);
}

bool mcpx_sessions_shared_key(const struct mcpx_sessions *s)
{
	return s && s->shared;
}

/* The caller tag of caller under s's key. The label keeps the tag apart
 * from the id's MAC, which uses the same key. */
static void caller_tag(const struct mcpx_sessions *s, const char *caller,
                       uint8_t tag[CALLER_TAG_LEN])
{
	uint8_t full[MCPX_SHA256_LEN];
	char data[sizeof(CALLER_TAG_LABEL) + 512];
	int n =
	    snprintf(data, sizeof(data), "%s%c%.500s", CALLER_TAG_LABEL, 0, caller ? caller : "");

	mcpx_hmac_sha256(s->key, sizeof(s->key), data, (size_t)n, full);
	memcpy(tag, full, CALLER_TAG_LEN);
}

int mcpx_session_mint(struct mcpx_sessions *s, const char *version, time_t now, char *out)
{
	return mcpx_session_mint_for(s, version, "", now, out);
}

int mcpx_session_mint_for(struct mcpx_sessions *s, const char *version, const char *caller,
                          time_t now, char *out)
{
	uint8_t payload[PAYLOAD_LEN], mac[MCPX_SHA256_LEN];
	int rc;

	if (!s || !version || !out || !version_known(version, strlen(version)))
		return -EINVAL;
	caller_tag(s, caller, payload + VERSION_LEN + EXPIRY_LEN + NONCE_LEN);
	memcpy(payload, version, VERSION_LEN);
	write_be64(payload + VERSION_LEN, (uint64_t)now + s->ttl_s);
	/* The nonce makes ids minted in the same second distinct, so one
	 * client's DELETE cannot revoke another client's session. */
	rc = mcpx_random(payload + VERSION_LEN + EXPIRY_LEN, NONCE_LEN);
	if (rc < 0)
		return rc;

	memcpy(out, ID_PREFIX, ID_PREFIX_LEN);
	(void)mcpx_base64url_encode(payload, PAYLOAD_LEN, out + ID_PREFIX_LEN);
	mcpx_hmac_sha256(s->key, sizeof(s->key), out, BODY_LEN, mac);
	out[BODY_LEN] = '.';
	(void)mcpx_base64url_encode(mac, sizeof(mac), out + BODY_LEN + 1);
	out[ID_LEN] = '\0';
	return 0;
}

/* Checks everything but revocation; on success fills the expiry and, when
 * asked, the version. */
static int verify_sealed(const struct mcpx_sessions *s, const char *id, size_t len, time_t now,
                         uint64_t *expiry, char version[16], uint8_t tag[CALLER_TAG_LEN])
{
	uint8_t payload[PAYLOAD_LEN], mac[MCPX_SHA256_LEN], want[MCPX_SHA256_LEN];

	if (!s || !id || len != ID_LEN)
		return -EINVAL;
	/* Ids travel in headers and query strings; anything but visible ASCII
	 * is an injection attempt, not a session. */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)id[i] < 0x21 || (unsigned char)id[i] > 0x7e)
			return -EINVAL;
	if (memcmp(id, ID_PREFIX, ID_PREFIX_LEN) != 0 || id[BODY_LEN] != '.')
		return -EINVAL;
	if (b64url_decode(id + ID_PREFIX_LEN, PAYLOAD_LEN, payload) < 0 ||
	    b64url_decode(id + BODY_LEN + 1, MCPX_SHA256_LEN, mac) < 0)
		return -EINVAL;

	/* The MAC is compared in constant time so an attacker cannot learn
	 * how many leading bytes of a forgery were right. Nothing in the
	 * payload is trusted before this check. */
	mcpx_hmac_sha256(s->key, sizeof(s->key), id, BODY_LEN, want);
	if (!mcpx_ct_equal(mac, want, sizeof(want)))
		return -EPERM;

	if (!version_known((const char *)payload, VERSION_LEN))
		return -EINVAL;
	*expiry = read_be64(payload + VERSION_LEN);
	if ((uint64_t)now >= *expiry)
		return -ETIMEDOUT;
	if (version) {
		memcpy(version, payload, VERSION_LEN);
		version[VERSION_LEN] = '\0';
	}
	if (tag)
		memcpy(tag, payload + VERSION_LEN + EXPIRY_LEN + NONCE_LEN, CALLER_TAG_LEN);
	return 0;
}

static bool is_revoked(const struct mcpx_sessions *s, const uint8_t digest[MCPX_SHA256_LEN])
{
	for (size_t i = 0; i < s->n_revoked; i++)
		if (memcmp(s->revoked[i].digest, digest, MCPX_SHA256_LEN) == 0)
			return true;
	return false;
}

int mcpx_session_verify(struct mcpx_sessions *s, const char *id, size_t len, time_t now,
                        char version[16])
{
	return mcpx_session_verify_for(s, id, len, "", now, version);
}

int mcpx_session_verify_for(struct mcpx_sessions *s, const char *id, size_t len, const char *caller,
                            time_t now, char version[16])
{
	uint8_t digest[MCPX_SHA256_LEN], tag[CALLER_TAG_LEN], want[CALLER_TAG_LEN];
	char v[16];
	uint64_t expiry;
	int rc = verify_sealed(s, id, len, now, &expiry, v, tag);

	if (rc < 0)
		return rc;
	/* A genuine id of another caller: told apart from a forgery so the
	 * transport can answer as it answers a wrong token. */
	caller_tag(s, caller, want);
	if (!mcpx_ct_equal(tag, want, sizeof(want)))
		return -EACCES;
	mcpx_sha256(id, len, digest);
	if (is_revoked(s, digest))
		return -ENOENT;
	if (version)
		memcpy(version, v, VERSION_LEN + 1);
	return 0;
}

static struct note *note_find(struct mcpx_sessions *s, const uint8_t digest[MCPX_SHA256_LEN])
{
	for (size_t i = 0; i < NOTES_MAX; i++)
		if (s->notes[i].used && memcmp(s->notes[i].digest, digest, MCPX_SHA256_LEN) == 0)
			return &s->notes[i];
	return NULL;
}

void mcpx_session_revoke(struct mcpx_sessions *s, const char *id, size_t len, time_t now)
{
	uint8_t digest[MCPX_SHA256_LEN];
	uint64_t expiry;
	struct note *n;
	size_t kept = 0;

	/* Only ids this replica would accept are worth remembering; anything
	 * else is rejected anyway, and storing it would let junk DELETEs push
	 * real revocations out of the bounded set. */
	if (verify_sealed(s, id, len, now, &expiry, NULL, NULL) < 0)
		return;
	mcpx_sha256(id, len, digest);

	n = note_find(s, digest);
	if (n)
		memset(n, 0, sizeof(*n));
	if (is_revoked(s, digest))
		return;

	/* Expired entries are dead weight: verification fails on the expiry
	 * before it would consult them. Compact them out, keeping order. */
	for (size_t i = 0; i < s->n_revoked; i++)
		if (s->revoked[i].expiry > (uint64_t)now)
			s->revoked[kept++] = s->revoked[i];
	s->n_revoked = kept;
	if (s->n_revoked == REVOKED_MAX) {
		/* Dropping the oldest revocation is the least harmful choice:
		 * it is the one closest to expiring on its own. */
		memmove(&s->revoked[0], &s->revoked[1], (REVOKED_MAX - 1) * sizeof(s->revoked[0]));
		s->n_revoked--;
	}
	memcpy(s->revoked[s->n_revoked].digest, digest, MCPX_SHA256_LEN);
	s->revoked[s->n_revoked].expiry = expiry;
	s->n_revoked++;
}

/* Finds the note for id, creating it (evicting the least recently used one)
 * when create is set. Only the id's digest is stored, so raw ids, which are
 * bearer credentials, do not pile up in memory. */
static struct note *note_get(struct mcpx_sessions *s, const char *id, bool create)
{
	uint8_t digest[MCPX_SHA256_LEN];
	struct note *n, *victim = NULL;

	if (!s || !id)
		return NULL;
	mcpx_sha256(id, strnlen(id, MCPX_SESSION_ID_MAX), digest);
	n = note_find(s, digest);
	if (!n && create) {
		for (size_t i = 0; i < NOTES_MAX; i++) {
			if (!s->notes[i].used) {
				victim = &s->notes[i];
				break;
			}
			if (!victim || s->notes[i].used < victim->used)
				victim = &s->notes[i];
		}
		n = victim;
		memset(n, 0, sizeof(*n));
		memcpy(n->digest, digest, sizeof(digest));
	}
	if (n)
		n->used = ++s->clock;
	return n;
}

int mcpx_session_get_level(struct mcpx_sessions *s, const char *id, int def)
{
	struct note *n = note_get(s, id, false);
	return n && n->has_level ? n->level : def;
}

void mcpx_session_set_level(struct mcpx_sessions *s, const char *id, int level)
{
	struct note *n = note_get(s, id, true);
	if (n) {
		n->level = level;
		n->has_level = true;
	}
}

void mcpx_session_touch(struct mcpx_sessions *s, const char *id, time_t now)
{
	struct note *n = note_get(s, id, true);
	if (n)
		n->last_seen = now;
}

size_t mcpx_session_active(struct mcpx_sessions *s, time_t now, unsigned window_s)
{
	size_t count = 0;

	if (!s)
		return 0;
	for (size_t i = 0; i < NOTES_MAX; i++) {
		const struct note *n = &s->notes[i];
		if (n->used && n->last_seen && n->last_seen <= now &&
		    now - n->last_seen <= (time_t)window_s)
			count++;
	}
	return count;
}
