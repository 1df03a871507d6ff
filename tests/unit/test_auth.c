/*
 * test_auth.c - the shared-secret check: tokens from the environment and from
 * a file, both header spellings, near misses, disabled auth, a token file
 * rotated the way Kubernetes rotates a mounted Secret, tokens no header can
 * carry, and values with a NUL inside.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "check.h"
#include "crypto.h"
#include "log.h"

#define T0 1700000000

static char dir[64];

static void write_file(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(content, f);
	fclose(f);
}

/* Replaces the file through a rename, as a Secret volume update does: the
 * path then names a new inode even if size and mtime happen to match. */
static void rotate_file(const char *path, const char *content)
{
	char tmp[128];
	snprintf(tmp, sizeof(tmp), "%s/.tmp", dir);
	write_file(tmp, content);
	CHECK_INT(rename(tmp, path), 0);
}

/* The check with C strings (NULL = absent); NULs are tested separately. */
static bool check(struct mcpx_auth *a, const char *x, const char *authz, time_t now)
{
	return mcpx_auth_check(a, x, x ? strlen(x) : 0, authz, authz ? strlen(authz) : 0, now);
}

static void test_env_token(void)
{
	struct mcpx_auth *a = NULL;
	struct mcpx_err err = {{0}};
	char *tok = strdup("s3cret-token");
	uint8_t want[MCPX_SHA256_LEN];

	CHECK_INT(mcpx_auth_new(&a, &tok, "", &err), 0);
	CHECK(tok == NULL); /* taken over */
	CHECK(mcpx_auth_enabled(a));
	mcpx_sha256("s3cret-token", 12, want);
	CHECK(mcpx_auth_digest(a) && memcmp(mcpx_auth_digest(a), want, sizeof(want)) == 0);

	/* X-MCP-AUTH: exact match only. */
	CHECK(check(a, "s3cret-token", NULL, T0));
	CHECK(!check(a, "s3cret-toke", NULL, T0));
	CHECK(!check(a, "s3cret-token ", NULL, T0));
	CHECK(!check(a, "s3cret-tokenX", NULL, T0));
	CHECK(!check(a, "S3CRET-TOKEN", NULL, T0));
	CHECK(!check(a, "", NULL, T0));
	CHECK(!check(a, NULL, NULL, T0));

	/* Authorization: Bearer, scheme case-insensitive, one space. */
	CHECK(check(a, NULL, "Bearer s3cret-token", T0));
	CHECK(check(a, NULL, "bearer s3cret-token", T0));
	CHECK(check(a, NULL, "BEARER s3cret-token", T0));
	CHECK(!check(a, NULL, "Bearer  s3cret-token", T0));
	CHECK(!check(a, NULL, "Bearers3cret-token", T0));
	CHECK(!check(a, NULL, "Basic s3cret-token", T0));
	CHECK(!check(a, NULL, "s3cret-token", T0));
	CHECK(!check(a, NULL, "Bearer ", T0));
	CHECK(!check(a, NULL, "Bearer", T0));
	CHECK(!check(a, NULL, "", T0));
	CHECK(!check(a, NULL, "Bearer s3cret-token-longer", T0));

	/* Either header may carry it. */
	CHECK(check(a, "wrong", "Bearer s3cret-token", T0));
	CHECK(check(a, "s3cret-token", "Bearer wrong", T0));
	CHECK(!check(a, "wrong", "Bearer wrong", T0));

	/* A NUL inside the value: everything after it counts, so the token
	 * followed by a NUL and junk is not the token. */
	CHECK(mcpx_auth_check(a, "s3cret-token\0junk", 17, NULL, 0, T0) == false);
	CHECK(mcpx_auth_check(a, NULL, 0, "Bearer s3cret-token\0x", 21, T0) == false);
	CHECK(mcpx_auth_check(a, "s3cret-token\0", 13, NULL, 0, T0) == false);
	CHECK(mcpx_auth_check(a, "s3cret-token", 12, NULL, 0, T0));
	CHECK_INT((int)mcpx_auth_generation(a), 0);
	mcpx_auth_free(a);

	/* Surrounding whitespace is not part of a token (clients cannot send
	 * it in a header); inner spaces are. */
	tok = strdup("  \tpadded token \n");
	CHECK_INT(mcpx_auth_new(&a, &tok, "", &err), 0);
	CHECK(check(a, "padded token", NULL, T0));
	CHECK(!check(a, "  \tpadded token \n", NULL, T0));
	mcpx_auth_free(a);
	a = NULL;

	/* Only whitespace, or a control character: refused at start. */
	tok = strdup(" \t  ");
	CHECK_INT(mcpx_auth_new(&a, &tok, "", &err), -EINVAL);
	CHECK(a == NULL && tok == NULL);
	CHECK_STR(err.msg, "MCP_EXEC_AUTH_TOKEN is empty or only whitespace");
	tok = strdup("abc\x01" "def");
	CHECK_INT(mcpx_auth_new(&a, &tok, "", &err), -EINVAL);
	CHECK(a == NULL);
	tok = strdup("abc\x7f");
	CHECK_INT(mcpx_auth_new(&a, &tok, "", &err), -EINVAL);
	CHECK(a == NULL);
}

static void test_disabled(void)
{
	struct mcpx_auth *a = NULL;
	struct mcpx_err err = {{0}};
	char *tok = NULL;
	char *empty = strdup("");

	CHECK_INT(mcpx_auth_new(&a, &tok, "", &err), 0);
	CHECK(!mcpx_auth_enabled(a));
	CHECK(mcpx_auth_digest(a) == NULL);
	CHECK(check(a, NULL, NULL, T0));
	CHECK(check(a, "anything", "Bearer x", T0));
	mcpx_auth_free(a);

	/* An empty environment value means unset (as in the config module). */
	CHECK_INT(mcpx_auth_new(&a, &empty, NULL, &err), 0);
	CHECK(empty == NULL);
	CHECK(!mcpx_auth_enabled(a));
	mcpx_auth_free(a);

	/* No object behaves as disabled. */
	CHECK(!mcpx_auth_enabled(NULL));
	CHECK(mcpx_auth_digest(NULL) == NULL);
	mcpx_auth_free(NULL);
}

static void test_file_token(void)
{
	struct mcpx_auth *a = NULL;
	struct mcpx_err err = {{0}};
	char path[128], msg[256];
	char *tok = NULL;

	snprintf(path, sizeof(path), "%s/token", dir);
	/* Trailing newline and whitespace are not part of the token. */
	write_file(path, "file-token-1 \t\r\n\n");
	CHECK_INT(mcpx_auth_new(&a, &tok, path, &err), 0);
	CHECK(mcpx_auth_enabled(a));
	CHECK(check(a, "file-token-1", NULL, T0));
	CHECK(check(a, NULL, "Bearer file-token-1", T0));
	CHECK(!check(a, "file-token-1\n", NULL, T0));
	CHECK(!check(a, "file-token-2", NULL, T0));

	/* Rotation: nothing changes until a second has passed, then the new
	 * token replaces the old one. */
	rotate_file(path, "file-token-2\n");
	CHECK(check(a, "file-token-1", NULL, T0));
	CHECK(!check(a, "file-token-2", NULL, T0));
	CHECK_INT((int)mcpx_auth_generation(a), 0);
	CHECK(check(a, "file-token-2", NULL, T0 + 1));
	CHECK(!check(a, "file-token-1", NULL, T0 + 1));
	/* The generation tells derived keys (sessions) to follow. */
	CHECK_INT((int)mcpx_auth_generation(a), 1);
	{
		uint8_t want[MCPX_SHA256_LEN];
		mcpx_sha256("file-token-2", 12, want);
		CHECK(memcmp(mcpx_auth_digest(a), want, sizeof(want)) == 0);
	}

	/* An in-place rewrite (a different size) is noticed too. */
	write_file(path, "file-token-three\n");
	CHECK(check(a, NULL, "Bearer file-token-three", T0 + 2));
	CHECK(!check(a, "file-token-2", NULL, T0 + 2));

	/* A rotation to an empty file, or a vanished file, keeps the old token
	 * rather than locking everyone out or turning auth off. */
	rotate_file(path, "\n");
	CHECK(check(a, "file-token-three", NULL, T0 + 3));
	CHECK_INT((int)mcpx_auth_generation(a), 2); /* the failed re-read changed nothing */
	CHECK(!check(a, "", NULL, T0 + 3));
	CHECK(!check(a, "\n", NULL, T0 + 3));
	CHECK_INT(unlink(path), 0);
	CHECK(check(a, "file-token-three", NULL, T0 + 4));
	CHECK(mcpx_auth_enabled(a));
	/* And recovers when a good token appears again. */
	rotate_file(path, "file-token-4");
	CHECK(check(a, "file-token-4", NULL, T0 + 5));
	CHECK(!check(a, "file-token-three", NULL, T0 + 5));
	mcpx_auth_free(a);
	a = NULL;

	/* Start-up errors: empty, missing, oversized, both sources. */
	write_file(path, " \n");
	CHECK_INT(mcpx_auth_new(&a, &tok, path, &err), -EINVAL);
	CHECK(a == NULL);
	snprintf(msg, sizeof(msg), "MCP_EXEC_AUTH_TOKEN_FILE %s is empty or only whitespace", path);
	CHECK_STR(err.msg, msg);
	/* Leading whitespace goes too; a NUL inside is a control character. */
	write_file(path, "\n  lead-token\n");
	CHECK_INT(mcpx_auth_new(&a, &tok, path, &err), 0);
	CHECK(check(a, "lead-token", NULL, T0));
	mcpx_auth_free(a);
	a = NULL;
	{
		FILE *f = fopen(path, "w");
		CHECK(f != NULL);
		if (f) {
			fwrite("tok\0en", 1, 6, f);
			fclose(f);
		}
	}
	CHECK_INT(mcpx_auth_new(&a, &tok, path, &err), -EINVAL);
	CHECK(a == NULL);

	snprintf(path, sizeof(path), "%s/missing", dir);
	CHECK_INT(mcpx_auth_new(&a, &tok, path, &err), -ENOENT);
	CHECK(a == NULL);
	snprintf(msg, sizeof(msg), "MCP_EXEC_AUTH_TOKEN_FILE %s: %s", path, strerror(ENOENT));
	CHECK_STR(err.msg, msg);

	snprintf(path, sizeof(path), "%s/big", dir);
	{
		char big[5000];
		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		write_file(path, big);
	}
	CHECK_INT(mcpx_auth_new(&a, &tok, path, &err), -EFBIG);
	CHECK(a == NULL);
	unlink(path);

	snprintf(path, sizeof(path), "%s/token", dir);
	write_file(path, "t");
	tok = strdup("env-token");
	CHECK_INT(mcpx_auth_new(&a, &tok, path, &err), -EINVAL);
	CHECK(tok == NULL); /* wiped and freed even on failure */
	CHECK(a == NULL);
	CHECK_INT(mcpx_auth_new(&a, &tok, dir, &err) < 0, 1); /* a directory */
	unlink(path);
}

int main(void)
{
	/* Keep the expected reload warnings out of the way of failures. */
	mcpx_log_setup(MCPX_LOG_TEXT, MCPX_LOG_ERROR);
	snprintf(dir, sizeof(dir), "/tmp/mcpx-test-auth-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_env_token();
	test_disabled();
	test_file_token();
	rmdir(dir);
	CHECK_DONE();
}
