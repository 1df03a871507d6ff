/*
 * auth_tokens.c - parses the named tokens file (auth_tokens.h).
 *
 * The file maps token hashes to caller names; a caller name then selects a
 * profile in the policy and appears in every audit line, so a name must be
 * plain (no spaces, quotes or control characters that would blur a log
 * line) and must not pass for an identity that comes from elsewhere:
 * "system:..." is Kubernetes' namespace of users. A hash listed twice would
 * make one token two callers; that is refused rather than resolved by
 * order. Messages name the entry by index and caller, never the hash.
 *
 * The text is checked before cJSON reads it (json_text.h): cJSON would
 * take a key, a name or a hash holding "\u0000" as its part before the
 * NUL, and any byte up to 0x20 (a form feed, a NUL) as whitespace, so a
 * file that is not the JSON it looks like could still say who may call.
 */
#include "auth_tokens.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"
#include "json_text.h"

static int parse_hex(const char *s, uint8_t out[MCPX_SHA256_LEN])
{
	if (strlen(s) != 2 * MCPX_SHA256_LEN)
		return -EINVAL;
	for (size_t i = 0; i < MCPX_SHA256_LEN; i++) {
		int hi = mcpx_hex_value((unsigned char)s[2 * i]),
		    lo = mcpx_hex_value((unsigned char)s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= MCPX_CALLER_NAME_MAX && strspn(s, MCPX_CALLER_NAME_CHARS) == n &&
	       strncmp(s, "system:", 7) != 0;
}

/* Exactly the keys "caller" and "token_sha256", each once. */
static int check_keys(const cJSON *o, size_t i, struct mcpx_err *err)
{
	bool seen_c = false, seen_h = false;

	for (const cJSON *k = o->child; k; k = k->next) {
		bool *seen = !strcmp(k->string, "caller")         ? &seen_c
		             : !strcmp(k->string, "token_sha256") ? &seen_h
		                                                  : NULL;
		if (!seen)
			return mcpx_err_set(err, EINVAL,
			                    "entry %zu: unknown key \"%.40s\" (only caller and "
			                    "token_sha256)",
			                    i, k->string);
		if (*seen)
			return mcpx_err_set(err, EINVAL, "entry %zu: %s appears twice", i,
			                    k->string);
		*seen = true;
	}
	if (!seen_c || !seen_h)
		return mcpx_err_set(err, EINVAL, "entry %zu: needs both caller and token_sha256",
		                    i);
	return 0;
}

static int parse_entry(const cJSON *o, size_t i, struct mcpx_auth_tokens *t, struct mcpx_err *err)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "caller");
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "token_sha256");
	struct mcpx_auth_token *e = &t->v[i];
	int rc;

	if (!cJSON_IsObject(o))
		return mcpx_err_set(err, EINVAL, "entry %zu: must be an object", i);
	if ((rc = check_keys(o, i, err)) < 0)
		return rc;
	if (!cJSON_IsString(c) || !name_ok(c->valuestring))
		return mcpx_err_set(
		    err, EINVAL,
		    "entry %zu: caller must be 1..%d characters of A-Z a-z 0-9 . _ - "
		    "@ : and not begin with \"system:\"",
		    i, MCPX_CALLER_NAME_MAX);
	strcpy(e->caller, c->valuestring);
	if (!cJSON_IsString(h) || parse_hex(h->valuestring, e->digest) < 0)
		return mcpx_err_set(
		    err, EINVAL,
		    "entry %zu (%s): token_sha256 must be 64 hex digits (the SHA-256 "
		    "of the token, e.g. printf %%s TOKEN | sha256sum)",
		    i, e->caller);
	for (size_t j = 0; j < i; j++)
		if (memcmp(t->v[j].digest, e->digest, MCPX_SHA256_LEN) == 0)
			return mcpx_err_set(err, EINVAL,
			                    "entry %zu (%s): the same token_sha256 as entry %zu "
			                    "(%s); one token is one caller",
			                    i, e->caller, j, t->v[j].caller);
	t->n = i + 1;
	return 0;
}

int mcpx_auth_tokens_parse(const char *json, size_t len, struct mcpx_auth_tokens **out,
                           struct mcpx_err *err)
{
	struct mcpx_auth_tokens *t = NULL;
	struct mcpx_json_text_flaw flaw;
	const char *end = NULL;
	cJSON *root;
	size_t n, i = 0;
	int rc = 0;

	*out = NULL;
	if (len > MCPX_AUTH_TOKENS_MAX_BYTES)
		return mcpx_err_set(err, E2BIG, "larger than %u bytes", MCPX_AUTH_TOKENS_MAX_BYTES);
	if (mcpx_json_text_check(json, len, &flaw) < 0)
		return mcpx_err_set(err, EINVAL, "not valid JSON: %s at byte %zu", flaw.why,
		                    flaw.at);
	root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
	while (root && end && (size_t)(end - json) < len && *end && strchr(" \t\r\n", *end))
		end++;
	if (!root || (size_t)(end - json) != len) {
		cJSON_Delete(root);
		return mcpx_err_set(err, EINVAL, "not valid JSON (near byte %zu)",
		                    end ? (size_t)(end - json) : len);
	}
	if (!cJSON_IsArray(root)) {
		rc = mcpx_err_set(err, EINVAL,
		                  "must be a JSON list of {\"caller\", \"token_sha256\"} objects");
		goto out;
	}
	n = (size_t)cJSON_GetArraySize(root);
	if (n > MCPX_AUTH_TOKENS_MAX) {
		rc = mcpx_err_set(err, E2BIG, "more than %d entries", MCPX_AUTH_TOKENS_MAX);
		goto out;
	}
	t = calloc(1, sizeof(*t));
	if (!t || (n && !(t->v = calloc(n, sizeof(*t->v))))) {
		rc = mcpx_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	for (const cJSON *o = root->child; o && !rc; o = o->next)
		rc = parse_entry(o, i++, t, err);
	if (!rc) {
		*out = t;
		t = NULL;
	}
out:
	cJSON_Delete(root);
	if (t)
		t->n = t->v ? n : 0; /* every slot, the half-filled one too, is wiped */
	mcpx_auth_tokens_free(t);
	return rc;
}

void mcpx_auth_tokens_free(struct mcpx_auth_tokens *t)
{
	if (!t)
		return;
	if (t->v) {
		/* Hashes are not secrets, but they are what a guess is checked
		 * against offline: no copy is left behind in freed memory. */
		mcpx_wipe(t->v, t->n * sizeof(*t->v));
		free(t->v);
	}
	free(t);
}
