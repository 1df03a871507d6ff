/*
 * fuzz_http.c - the checks an HTTP request head passes before any MCP
 * processing, at the level that exists as pure functions: the token check
 * (X-MCP-AUTH or Authorization: Bearer), Origin and Host against DNS
 * rebinding, the session id's verification, and the MCP-Protocol-Version
 * header. The fuzz input spells one request head; admit_head() runs it
 * through the gates, so pointing this harness at the server's admit() gate
 * means replacing that one function (and filling struct head from the same
 * fields).
 *
 * Beyond the sanitizers it checks what must never happen: a token that is
 * not exactly the configured one accepted, or a session id accepted that is
 * not, byte for byte, the one the server minted.
 *
 * Input: fields separated by "\n": origin, host, x-mcp-auth, authorization,
 * mcp-session-id, mcp-protocol-version, allowed-origins; an empty field is an
 * absent header. A session id starting with "@" is the minted id with the
 * rest of the field XORed over it, so near-valid ids are explored too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth.h"
#include "mcp.h"
#include "origin.h"
#include "session.h"

#define TOKEN "fuzz-token-0123456789"
#define NOW ((time_t)1800000000)

/* The parts of a request head the gates look at; NULL when absent. */
struct head {
	const char *origin, *host, *x_mcp_auth, *authorization, *session_id, *protocol_version;
	const char *allowed_origins; /* MCP_EXEC_ALLOWED_ORIGINS */
	bool loopback_listener;
};

static struct mcpx_auth *auth;
static struct mcpx_sessions *sessions;
static char minted[MCPX_SESSION_ID_MAX];

static void init_once(void)
{
	struct mcpx_err err = {{0}};
	char *token;

	if (auth)
		return;
	/* mcpx_auth_new takes the token over (and wipes it). */
	token = strdup(TOKEN);
	if (mcpx_auth_new(&auth, &token, "", &err) < 0)
		abort();
	sessions = mcpx_sessions_new("fuzz-session-key-0123456789", NULL, 3600);
	if (!sessions || mcpx_session_mint(sessions, "2025-11-25", NOW, minted) < 0)
		abort();
}

/* True when an accepted credential is exactly the token. */
static bool token_is_exact(const struct head *h)
{
	return (h->x_mcp_auth && strcmp(h->x_mcp_auth, TOKEN) == 0) ||
	       (h->authorization && strncasecmp(h->authorization, "Bearer ", 7) == 0 &&
	        strcmp(h->authorization + 7, TOKEN) == 0);
}

/* The gates, in the order a request meets them. */
static void admit_head(const struct head *h)
{
	char version[16];

	if (mcpx_auth_check(auth, h->x_mcp_auth, h->authorization, NOW) && !token_is_exact(h))
		abort();
	(void)mcpx_host_allowed(h->host ? h->host : "", h->loopback_listener);
	if (h->origin)
		(void)mcpx_origin_allowed(h->origin, h->allowed_origins ? h->allowed_origins : "");
	if (h->protocol_version)
		(void)mcpx_version_supported(h->protocol_version);
	if (h->session_id &&
	    mcpx_session_verify(sessions, h->session_id, strlen(h->session_id), NOW, version) == 0 &&
	    (strcmp(h->session_id, minted) != 0 || strcmp(version, "2025-11-25") != 0))
		abort();
}

/* The session id field: literal, or "@" + bytes XORed over the minted id. */
static const char *session_field(char *f, char *buf)
{
	size_t n = strlen(minted);

	if (f[0] != '@')
		return f;
	memcpy(buf, minted, n + 1);
	for (size_t i = 1; f[i] && i - 1 < n; i++)
		buf[i - 1] ^= f[i] == 1 ? 0 : (char)(f[i] & 0x7f);
	for (size_t i = 0; i < n; i++)
		if (!buf[i]) /* keep it one C string of the same length */
			buf[i] = '.';
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char **slots[7];
	char *copy, *p, sid[MCPX_SESSION_ID_MAX];
	struct head h = {0};
	size_t i = 0;

	init_once();
	copy = malloc(size + 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	slots[0] = &h.origin;
	slots[1] = &h.host;
	slots[2] = &h.x_mcp_auth;
	slots[3] = &h.authorization;
	slots[4] = &h.session_id;
	slots[5] = &h.protocol_version;
	slots[6] = &h.allowed_origins;
	for (p = copy; p && i < 7; i++) {
		char *nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		*slots[i] = p[0] ? (i == 4 ? session_field(p, sid) : p) : NULL;
		p = nl ? nl + 1 : NULL;
	}
	h.loopback_listener = size & 1;
	admit_head(&h);
	free(copy);
	return 0;
}
