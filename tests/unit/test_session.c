/*
 * test_session.c - session ids: round trip, cross-replica acceptance under a
 * shared key, rejection under a foreign key, tampering, expiry, revocation
 * the bounded per-session notes, an id forged in the right shape (only the
 * MAC can refuse it), and the key following a rotated token.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "base64.h"
#include "check.h"
#include "crypto.h"
#include "session.h"

#define T0 1700000000

static int verify(struct mcpx_sessions *s, const char *id, time_t now)
{
	char v[16];
	return mcpx_session_verify(s, id, strlen(id), now, v);
}

static void test_round_trip(void)
{
	struct mcpx_sessions *s = mcpx_sessions_new("0123456789abcdef-key", NULL, 3600);
	char id[MCPX_SESSION_ID_MAX], id2[MCPX_SESSION_ID_MAX], v[16];

	CHECK(s != NULL);
	CHECK(mcpx_sessions_shared_key(s));
	CHECK_INT(mcpx_session_mint(s, "2025-06-18", T0, id), 0);
	CHECK(strncmp(id, "m2.", 3) == 0);
	CHECK_INT(strlen(id), 103);
	for (const char *p = id; *p; p++)
		CHECK((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.');
	memset(v, 'x', sizeof(v));
	CHECK_INT(mcpx_session_verify(s, id, strlen(id), T0 + 10, v), 0);
	CHECK_STR(v, "2025-06-18");
	/* The version argument is optional. */
	CHECK_INT(mcpx_session_verify(s, id, strlen(id), T0 + 10, NULL), 0);

	/* Every session-capable version round-trips; others cannot be minted. */
	CHECK_INT(mcpx_session_mint(s, "2025-03-26", T0, id2), 0);
	CHECK_INT(mcpx_session_verify(s, id2, strlen(id2), T0, v), 0);
	CHECK_STR(v, "2025-03-26");
	CHECK_INT(mcpx_session_mint(s, "2025-11-25", T0, id2), 0);
	CHECK_INT(mcpx_session_verify(s, id2, strlen(id2), T0, v), 0);
	CHECK_STR(v, "2025-11-25");
	/* A 2024-11-05 client that posts to /mcp gets a session too. */
	CHECK_INT(mcpx_session_mint(s, "2024-11-05", T0, id2), 0);
	CHECK_INT(mcpx_session_verify(s, id2, strlen(id2), T0, v), 0);
	CHECK_STR(v, "2024-11-05");
	CHECK_INT(mcpx_session_mint(s, "2026-07-28", T0, id2), -EINVAL);
	CHECK_INT(mcpx_session_mint(s, "2025-06-18x", T0, id2), -EINVAL);
	CHECK_INT(mcpx_session_mint(s, "", T0, id2), -EINVAL);

	/* Two mints in the same second differ (the nonce). */
	CHECK_INT(mcpx_session_mint(s, "2025-06-18", T0, id2), 0);
	CHECK(strcmp(id, id2) != 0);

	/* Expiry: valid until ttl elapses, then -ETIMEDOUT. */
	CHECK_INT(verify(s, id, T0 + 3599), 0);
	CHECK_INT(verify(s, id, T0 + 3600), -ETIMEDOUT);
	CHECK_INT(verify(s, id, T0 + 100000), -ETIMEDOUT);
	mcpx_sessions_free(s);
}

static void test_replicas(void)
{
	char id[MCPX_SESSION_ID_MAX];
	uint8_t digest[MCPX_SHA256_LEN];

	/* Same configured key: replicas accept each other's ids. */
	struct mcpx_sessions *a = mcpx_sessions_new("shared-session-key-1", NULL, 600);
	struct mcpx_sessions *b = mcpx_sessions_new("shared-session-key-1", "ignored", 600);
	struct mcpx_sessions *c = mcpx_sessions_new("shared-session-key-2", NULL, 600);
	CHECK_INT(mcpx_session_mint(a, "2025-06-18", T0, id), 0);
	CHECK_INT(verify(b, id, T0 + 1), 0);
	/* A different key rejects them as forgeries. */
	CHECK_INT(verify(c, id, T0 + 1), -EPERM);
	CHECK_INT(mcpx_session_mint(c, "2025-06-18", T0, id), 0);
	CHECK_INT(verify(a, id, T0 + 1), -EPERM);
	mcpx_sessions_free(a);
	mcpx_sessions_free(b);
	mcpx_sessions_free(c);

	/* Same token: the plaintext and digest constructors agree. */
	mcpx_sha256("tok-123", 7, digest);
	a = mcpx_sessions_new(NULL, "tok-123", 600);
	b = mcpx_sessions_new_digest(NULL, digest, 600);
	c = mcpx_sessions_new(NULL, "tok-124", 600);
	CHECK(mcpx_sessions_shared_key(a));
	CHECK(mcpx_sessions_shared_key(b));
	CHECK_INT(mcpx_session_mint(a, "2025-11-25", T0, id), 0);
	CHECK_INT(verify(b, id, T0), 0);
	CHECK_INT(verify(c, id, T0), -EPERM);
	CHECK_INT(mcpx_session_mint(b, "2025-11-25", T0, id), 0);
	CHECK_INT(verify(a, id, T0), 0);
	mcpx_sessions_free(c);

	/* A configured key takes precedence over the token. */
	c = mcpx_sessions_new("configured-key-000", "tok-123", 600);
	CHECK_INT(verify(c, id, T0), -EPERM);
	mcpx_sessions_free(a);
	mcpx_sessions_free(b);
	mcpx_sessions_free(c);

	/* Neither: a random, process-local key; two such objects disagree. */
	a = mcpx_sessions_new(NULL, NULL, 600);
	b = mcpx_sessions_new("", "", 600);
	CHECK(!mcpx_sessions_shared_key(a));
	CHECK(!mcpx_sessions_shared_key(b));
	CHECK_INT(mcpx_session_mint(a, "2025-06-18", T0, id), 0);
	CHECK_INT(verify(a, id, T0), 0);
	CHECK_INT(verify(b, id, T0), -EPERM);
	mcpx_sessions_free(a);
	mcpx_sessions_free(b);
}

static void test_malformed(void)
{
	struct mcpx_sessions *s = mcpx_sessions_new("0123456789abcdef-key", NULL, 600);
	char id[MCPX_SESSION_ID_MAX], bad[MCPX_SESSION_ID_MAX + 8];
	size_t len;

	CHECK_INT(mcpx_session_mint(s, "2025-06-18", T0, id), 0);
	len = strlen(id);

	CHECK_INT(mcpx_session_verify(s, id, 0, T0, NULL), -EINVAL);
	CHECK_INT(mcpx_session_verify(s, id, len - 1, T0, NULL), -EINVAL);
	CHECK_INT(verify(s, "", T0), -EINVAL);
	CHECK_INT(verify(s, "garbage", T0), -EINVAL);
	CHECK_INT(mcpx_session_verify(s, NULL, 0, T0, NULL), -EINVAL);

	/* One more character. */
	snprintf(bad, sizeof(bad), "%sA", id);
	CHECK_INT(verify(s, bad, T0), -EINVAL);

	/* Wrong prefix. */
	memcpy(bad, id, len + 1);
	bad[1] = '1';
	CHECK_INT(verify(s, bad, T0), -EINVAL);

	/* Characters outside visible ASCII, and outside the alphabet. */
	const char injected[] = {' ',        '\t',       '\r', '\n', '\0',
	                         (char)0x7f, (char)0xc3, '+',  '/',  '='};
	for (size_t i = 0; i < sizeof(injected); i++) {
		memcpy(bad, id, len + 1);
		bad[20] = injected[i];
		CHECK_INT(mcpx_session_verify(s, bad, len, T0, NULL), -EINVAL);
	}

	/* A flipped payload or MAC character fails the MAC. */
	memcpy(bad, id, len + 1);
	bad[10] = bad[10] == 'A' ? 'B' : 'A';
	CHECK_INT(verify(s, bad, T0), -EPERM);
	memcpy(bad, id, len + 1);
	bad[60] = bad[60] == 'A' ? 'B' : 'A';
	CHECK_INT(verify(s, bad, T0), -EPERM);

	/* The MAC's last character carries two unused bits; a spelling with
	 * them set is not canonical and is refused, so one session has exactly
	 * one id (and revoking it cannot be dodged by re-spelling). */
	memcpy(bad, id, len + 1);
	{
		static const char alpha[] =
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
		int v = (int)(strchr(alpha, bad[len - 1]) - alpha);
		bad[len - 1] = alpha[v | 1];
		CHECK_INT(verify(s, bad, T0), -EINVAL);
	}

	/* The dot separator must be where it belongs. */
	memcpy(bad, id, len + 1);
	bad[59] = 'A';
	CHECK_INT(verify(s, bad, T0), -EINVAL);
	mcpx_sessions_free(s);
}

static void test_revoke(void)
{
	struct mcpx_sessions *a = mcpx_sessions_new("0123456789abcdef-key", NULL, 600);
	struct mcpx_sessions *b = mcpx_sessions_new("0123456789abcdef-key", NULL, 600);
	char id[MCPX_SESSION_ID_MAX], other[MCPX_SESSION_ID_MAX], first[MCPX_SESSION_ID_MAX];

	CHECK_INT(mcpx_session_mint(a, "2025-06-18", T0, id), 0);
	CHECK_INT(mcpx_session_mint(a, "2025-06-18", T0, other), 0);
	mcpx_session_revoke(a, id, strlen(id), T0 + 1);
	CHECK_INT(verify(a, id, T0 + 2), -ENOENT);
	/* Revoking twice is harmless; the sibling id is untouched. */
	mcpx_session_revoke(a, id, strlen(id), T0 + 1);
	CHECK_INT(verify(a, id, T0 + 2), -ENOENT);
	CHECK_INT(verify(a, other, T0 + 2), 0);
	/* Revocation is per replica. */
	CHECK_INT(verify(b, id, T0 + 2), 0);
	/* Expiry is reported before revocation. */
	CHECK_INT(verify(a, id, T0 + 600), -ETIMEDOUT);
	/* Junk is ignored. */
	mcpx_session_revoke(a, "junk", 4, T0);
	mcpx_session_revoke(a, NULL, 0, T0);

	/* The set is bounded: after 4096 newer revocations, the first is
	 * forgotten (dropped oldest-first), the newest ones are kept. */
	CHECK_INT(mcpx_session_mint(a, "2025-06-18", T0 + 100, first), 0);
	mcpx_session_revoke(a, first, strlen(first), T0 + 100);
	CHECK_INT(verify(a, first, T0 + 100), -ENOENT);
	for (int i = 0; i < 4096; i++) {
		CHECK_INT(mcpx_session_mint(a, "2025-06-18", T0 + 100, other), 0);
		mcpx_session_revoke(a, other, strlen(other), T0 + 100);
	}
	CHECK_INT(verify(a, first, T0 + 100), 0);
	CHECK_INT(verify(a, other, T0 + 100), -ENOENT);
	mcpx_sessions_free(a);
	mcpx_sessions_free(b);
}

static void test_notes(void)
{
	struct mcpx_sessions *s = mcpx_sessions_new(NULL, NULL, 600);
	char id[MCPX_SESSION_ID_MAX], id2[MCPX_SESSION_ID_MAX], tmp[MCPX_SESSION_ID_MAX];

	CHECK_INT(mcpx_session_mint(s, "2025-06-18", T0, id), 0);
	CHECK_INT(mcpx_session_mint(s, "2025-06-18", T0, id2), 0);
	CHECK_INT(mcpx_session_get_level(s, id, 7), 7);
	mcpx_session_set_level(s, id, 3);
	CHECK_INT(mcpx_session_get_level(s, id, 7), 3);
	CHECK_INT(mcpx_session_get_level(s, id2, 7), 7);

	CHECK_INT(mcpx_session_active(s, T0, 60), 0);
	mcpx_session_touch(s, id, T0);
	mcpx_session_touch(s, id2, T0 + 50);
	CHECK_INT(mcpx_session_active(s, T0 + 50, 60), 2);
	CHECK_INT(mcpx_session_active(s, T0 + 61, 60), 1);
	CHECK_INT(mcpx_session_active(s, T0 + 200, 60), 0);
	/* Touching keeps the level. */
	CHECK_INT(mcpx_session_get_level(s, id, 7), 3);

	/* Revocation forgets the notes. */
	mcpx_session_revoke(s, id2, strlen(id2), T0 + 50);
	CHECK_INT(mcpx_session_active(s, T0 + 50, 60), 1);

	/* Bounded LRU: 1024 fresher sessions evict the oldest note, but a note
	 * kept in use survives. */
	for (int i = 0; i < 1024; i++) {
		if (i % 100 == 0)
			CHECK_INT(mcpx_session_get_level(s, id, 7), 3);
		CHECK_INT(mcpx_session_mint(s, "2025-06-18", T0, tmp), 0);
		mcpx_session_touch(s, tmp, T0 + 100);
	}
	CHECK_INT(mcpx_session_active(s, T0 + 100, 10), 1024 - 1);
	CHECK_INT(mcpx_session_get_level(s, id, 7), 3);
	mcpx_session_set_level(s, id2, 5);
	CHECK_INT(mcpx_session_active(s, T0 + 100, 10), 1024 - 2);
	mcpx_sessions_free(s);

	/* NULL tolerance. */
	CHECK_INT(mcpx_session_get_level(NULL, "x", 4), 4);
	mcpx_session_touch(NULL, "x", T0);
	CHECK_INT(mcpx_session_active(NULL, T0, 60), 0);
	mcpx_sessions_free(NULL);
}

/* base64url without padding, as session ids spell their parts. */
static void b64url(const uint8_t *in, size_t n, char *out)
{
	size_t len = mcpx_base64_encode(in, n, out);
	while (len > 0 && out[len - 1] == '=')
		out[--len] = '\0';
	for (size_t i = 0; i < len; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
}

/* An attacker knows the format: a known version, an expiry in the future,
 * any nonce, any MAC. Everything but the MAC is right, so only the MAC
 * comparison can refuse it; skipping that comparison would accept it. */
/* An id is bound to the caller that created it: that caller's next
 * request verifies, another caller's (or an anonymous one's) gets -EACCES,
 * which the transport answers like a wrong token; the id itself does not
 * name the caller. Without the binding the second check would pass. */
static void test_caller_binding(void)
{
	struct mcpx_sessions *s = mcpx_sessions_new("0123456789abcdef-key", NULL, 600);
	char id[MCPX_SESSION_ID_MAX], v[16];

	CHECK_INT(mcpx_session_mint_for(s, "2025-06-18", "billing-agent", T0, id), 0);
	CHECK(strstr(id, "billing") == NULL);
	CHECK_INT(mcpx_session_verify_for(s, id, strlen(id), "billing-agent", T0, v), 0);
	CHECK_STR(v, "2025-06-18");
	CHECK_INT(mcpx_session_verify_for(s, id, strlen(id), "report-agent", T0, v), -EACCES);
	CHECK_INT(mcpx_session_verify_for(s, id, strlen(id), "billing-agent2", T0, v), -EACCES);
	CHECK_INT(mcpx_session_verify(s, id, strlen(id), T0, v), -EACCES);
	/* A forgery is still a forgery, whoever presents it. */
	id[10] = id[10] == 'A' ? 'B' : 'A';
	CHECK_INT(mcpx_session_verify_for(s, id, strlen(id), "billing-agent", T0, v), -EPERM);
	mcpx_sessions_free(s);
}

static void test_forged_shape(void)
{
	struct mcpx_sessions *s = mcpx_sessions_new("0123456789abcdef-key", NULL, 600);
	uint8_t payload[42], mac[MCPX_SHA256_LEN];
	char id[MCPX_SESSION_ID_MAX], real[MCPX_SESSION_ID_MAX], enc[80];
	uint64_t expiry = T0 + 300;

	memcpy(payload, "2025-11-25", 10);
	for (int i = 0; i < 8; i++)
		payload[10 + i] = (uint8_t)(expiry >> (56 - 8 * i));
	CHECK_INT(mcpx_random(payload + 18, 24), 0);
	CHECK_INT(mcpx_random(mac, sizeof(mac)), 0);
	strcpy(id, "m2.");
	b64url(payload, sizeof(payload), enc);
	strcat(id, enc);
	strcat(id, ".");
	b64url(mac, sizeof(mac), enc);
	strcat(id, enc);

	CHECK_INT(mcpx_session_mint(s, "2025-11-25", T0, real), 0);
	CHECK_INT((int)strlen(id), (int)strlen(real));
	CHECK_INT(verify(s, id, T0), -EPERM);
	mcpx_sessions_free(s);
}

/* The key derived from the token follows the token: after a rotation, ids
 * sealed under the old token fail, new ones verify, and two replicas that
 * read the same new token agree. A configured key does not move. */
static void test_rekey(void)
{
	uint8_t d1[MCPX_SHA256_LEN], d2[MCPX_SHA256_LEN];
	char old_id[MCPX_SESSION_ID_MAX], new_id[MCPX_SESSION_ID_MAX];
	struct mcpx_sessions *a, *b, *c;

	mcpx_sha256("token-one", 9, d1);
	mcpx_sha256("token-two", 9, d2);
	a = mcpx_sessions_new_digest(NULL, d1, 600);
	b = mcpx_sessions_new_digest(NULL, d1, 600);
	c = mcpx_sessions_new_digest("configured-key-0123", d1, 600);
	CHECK_INT(mcpx_session_mint(a, "2025-06-18", T0, old_id), 0);
	CHECK_INT(verify(b, old_id, T0), 0);

	mcpx_sessions_rekey(a, d2);
	CHECK_INT(verify(a, old_id, T0), -EPERM);
	CHECK_INT(mcpx_session_mint(a, "2025-06-18", T0, new_id), 0);
	CHECK_INT(verify(b, new_id, T0), -EPERM); /* b still holds the old token */
	mcpx_sessions_rekey(b, d2);
	CHECK_INT(verify(b, new_id, T0), 0);
	CHECK_INT(verify(b, old_id, T0), -EPERM);

	CHECK_INT(mcpx_session_mint(c, "2025-06-18", T0, old_id), 0);
	mcpx_sessions_rekey(c, d2);
	CHECK_INT(verify(c, old_id, T0), 0);
	mcpx_sessions_free(a);
	mcpx_sessions_free(b);
	mcpx_sessions_free(c);
}

int main(void)
{
	test_forged_shape();
	test_caller_binding();
	test_rekey();
	test_round_trip();
	test_replicas();
	test_malformed();
	test_revoke();
	test_notes();
	CHECK_DONE();
}
