/*
 * auth.c - the shared-secret check for the HTTP transports.
 *
 * The token arrives from the environment (already copied into a heap string
 * by the config module) or from a file such as a mounted Kubernetes Secret.
 * Only its SHA-256 is kept: the plaintext is wiped as soon as it has been
 * hashed, so a core dump or a stray read of this struct reveals nothing that
 * opens the door. Presented values are hashed too and the digests compared in
 * constant time, which hides both the content and the length of the token.
 * A token file is re-read when it changes, at most once a second; each
 * change bumps a generation number, so the session key derived from the
 * token can follow it. A token is what a client sends as a header value, so
 * surrounding whitespace is not part of it (RFC 9110 drops it from field
 * values) and control characters cannot be in it: a token that is only
 * whitespace, or holds a control character, is refused. Presented values
 * are compared with their full length, so a NUL inside a header cannot cut
 * a value short into a match.
 *
 * With Kubernetes tokens on, a Bearer value none of ours matches goes to
 * the TokenReview module only when it is JWT-shaped; anything else is the
 * same 401 at once, with no work spent on it.
 *
 * Named tokens (MCP_EXEC_AUTH_TOKENS_FILE, auth_tokens.h) give each caller
 * its own token; the file holds only hashes. A presented value is hashed
 * once and compared with the single token (caller "default") and with
 * every entry of the file, always all of them, so the time taken does not
 * say which entry matched or how far down the list it is. The file is
 * re-read when it changes, like the single token's; a bad new version
 * keeps the old one. It may not lie where runs can read it, checked at
 * every load since a symlink can be re-pointed.
 *
 * This module does not decide which requests need auth, does not parse
 * HTTP, and never logs a token, a hash or a header value.
 */
#include "auth.h"

#include <limits.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth_tokens.h"
#include "crypto.h"
#include "log.h"
#include "metrics.h"
#include "tokenreview.h"

/* A token is a password, not a document; a larger file is a mistake (the
 * wrong path, say) and is refused rather than truncated into a token the
 * operator never chose. */
#define TOKEN_FILE_MAX 4096

/* What identifies one version of the token file. A Secret rotation swaps a
 * symlink, which changes the inode; an in-place edit changes size or times. */
struct file_id {
	bool present;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

/* The named tokens file and the version of it in force. */
struct tokens_store {
	char *path;
	struct mcpx_auth_tokens *cur;
	struct file_id seen;
	time_t last_check;
	bool (*run_may_read)(void *ctx, const char *path);
	void *ctx;
};

struct mcpx_auth {
	bool enabled;
	bool single;                  /* MCP_EXEC_AUTH_TOKEN or _FILE: caller "default" */
	struct tokens_store tokens;   /* path NULL: no tokens file */
	struct mcpx_tokenreview *k8s; /* ServiceAccount tokens; not owned */
	unsigned long generation;     /* bumped whenever digest changes */
	unsigned long serials;        /* the last credential number handed out */
	unsigned long single_cred;    /* the single token's credential number */
	unsigned long revocations;    /* reloads that took a credential away */
	uint8_t digest[MCPX_SHA256_LEN];
	char *path; /* NULL unless the token came from a file */
	struct file_id seen;
	time_t last_check;
	bool checked;
};

static void file_id_from_stat(struct file_id *f, const struct stat *st)
{
	f->present = true;
	f->dev = st->st_dev;
	f->ino = st->st_ino;
	f->size = st->st_size;
	f->mtime = st->st_mtim;
	f->ctime = st->st_ctim;
}

static bool file_id_equal(const struct file_id *a, const struct file_id *b)
{
	if (a->present != b->present)
		return false;
	if (!a->present)
		return true;
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Narrows [*p, *p + *len) to the token proper and checks it can travel in a
 * header: surrounding whitespace (an editor's or `echo`'s newline, a pasted
 * space) is dropped, as HTTP drops it from the value a client sends, and
 * what remains must be non-empty and free of control characters (HTAB
 * excepted). what names the source in the message. */
static int token_bytes(const char **p, size_t *len, const char *what, struct mcpx_err *err)
{
	const char *s = *p;
	size_t n = *len;

	while (n > 0 && is_space(s[n - 1]))
		n--;
	while (n > 0 && is_space(s[0]))
		s++, n--;
	if (n == 0)
		return mcpx_err_set(err, EINVAL, "%s is empty or only whitespace", what);
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			return mcpx_err_set(err, EINVAL,
			                    "%s holds a control character, which no HTTP header "
			                    "can carry",
			                    what);
	*p = s;
	*len = n;
	return 0;
}

/* Reads the token file, narrows it to the token (token_bytes) and hashes it
 * into digest. The identity recorded is that of the descriptor actually
 * read, so a change between stat and read is noticed on the next check. */
static int read_token_file(const char *path, uint8_t digest[MCPX_SHA256_LEN], struct file_id *id,
                           struct mcpx_err *err)
{
	char buf[TOKEN_FILE_MAX + 1];
	struct stat st;
	size_t len = 0;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return mcpx_err_set(err, errno, "MCP_EXEC_AUTH_TOKEN_FILE %s: %s", path,
		                    strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = mcpx_err_set(err, errno, "MCP_EXEC_AUTH_TOKEN_FILE %s: %s", path,
		                  strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = mcpx_err_set(err, EINVAL, "MCP_EXEC_AUTH_TOKEN_FILE %s: not a regular file",
		                  path);
		goto out;
	}
	/* One byte more than allowed is read so an oversized file shows. */
	while (len < sizeof(buf)) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = mcpx_err_set(err, errno, "MCP_EXEC_AUTH_TOKEN_FILE %s: %s", path,
			                  strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > TOKEN_FILE_MAX) {
		rc =
		    mcpx_err_set(err, EFBIG, "MCP_EXEC_AUTH_TOKEN_FILE %s holds more than %d bytes",
		                 path, TOKEN_FILE_MAX);
		goto out;
	}
	{
		const char *tok = buf;
		char what[200];
		snprintf(what, sizeof(what), "MCP_EXEC_AUTH_TOKEN_FILE %.160s", path);
		rc = token_bytes(&tok, &len, what, err);
		if (rc < 0)
			goto out;
		mcpx_sha256(tok, len, digest);
	}
	file_id_from_stat(id, &st);
out:
	mcpx_wipe(buf, sizeof(buf));
	close(fd);
	return rc;
}

int mcpx_auth_new(struct mcpx_auth **out, char **token, const char *token_file,
                  struct mcpx_err *err)
{
	struct mcpx_auth *a;
	char *t = token ? *token : NULL;
	int rc = 0;

	/* The plaintext is taken over first, so every return path below has
	 * already wiped it. */
	if (token)
		*token = NULL;
	*out = NULL;
	a = calloc(1, sizeof(*a));
	if (!a) {
		rc = mcpx_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if (t && t[0] && token_file && token_file[0]) {
		rc = mcpx_err_set(err, EINVAL,
		                  "set MCP_EXEC_AUTH_TOKEN or MCP_EXEC_AUTH_TOKEN_FILE, not both");
		goto out;
	}
	if (t && t[0]) {
		const char *tok = t;
		size_t len = strlen(t);
		rc = token_bytes(&tok, &len, "MCP_EXEC_AUTH_TOKEN", err);
		if (rc < 0)
			goto out;
		mcpx_sha256(tok, len, a->digest);
		a->enabled = a->single = true;
		a->single_cred = ++a->serials;
	} else if (token_file && token_file[0]) {
		a->path = strdup(token_file);
		if (!a->path) {
			rc = mcpx_err_set(err, ENOMEM, "out of memory");
			goto out;
		}
		rc = read_token_file(a->path, a->digest, &a->seen, err);
		if (rc < 0)
			goto out;
		a->enabled = a->single = true;
		a->single_cred = ++a->serials;
	}
	*out = a;
	a = NULL;
out:
	if (t) {
		mcpx_wipe(t, strlen(t));
		free(t);
	}
	mcpx_auth_free(a);
	return rc;
}

void mcpx_auth_free(struct mcpx_auth *a)
{
	if (!a)
		return;
	mcpx_wipe(a->digest, sizeof(a->digest));
	free(a->path);
	free(a->tokens.path);
	mcpx_auth_tokens_free(a->tokens.cur);
	free(a);
}

bool mcpx_auth_enabled(const struct mcpx_auth *a)
{
	return a && a->enabled;
}

const unsigned char *mcpx_auth_digest(const struct mcpx_auth *a)
{
	return a && a->single ? a->digest : NULL;
}

/* Picks up a rotated token file. A failed or empty re-read keeps the old
 * token: a half-written file must not lock every client out, let alone turn
 * auth off. The failure is logged once per change of the file, not once per
 * request. */
static void maybe_reload(struct mcpx_auth *a, time_t now)
{
	struct file_id cur = {0};
	struct mcpx_err err;
	uint8_t digest[MCPX_SHA256_LEN];
	struct stat st;

	if (a->checked && now >= a->last_check && now - a->last_check < 1)
		return;
	a->checked = true;
	a->last_check = now;

	if (stat(a->path, &st) == 0)
		file_id_from_stat(&cur, &st);
	if (file_id_equal(&cur, &a->seen))
		return;
	if (read_token_file(a->path, digest, &cur, &err) < 0) {
		/* err names the file and the reason, never the content. */
		mcpx_warn("auth token file changed but was not reloaded; keeping the previous "
		          "token: %s",
		          err.msg);
		a->seen = cur;
		return;
	}
	a->seen = cur;
	if (memcmp(a->digest, digest, sizeof(digest)) != 0) {
		memcpy(a->digest, digest, sizeof(digest));
		a->generation++;
		/* The previous token is revoked: what it opened ends too. */
		a->single_cred = ++a->serials;
		a->revocations++;
	}
	mcpx_wipe(digest, sizeof(digest));
	mcpx_info("auth token file %s reloaded", a->path);
}

/* ---- the named tokens file ---------------------------------------------- */

/* A file a run could read (as named, or where its symlinks lead) cannot
 * say who may call: a run could learn the hashes and try guesses offline,
 * or read which callers exist. */
static bool readable_by_runs(const struct tokens_store *t, const char *path)
{
	char real[PATH_MAX];

	if (!t->run_may_read)
		return false;
	if (t->run_may_read(t->ctx, path))
		return true;
	return realpath(path, real) && t->run_may_read(t->ctx, real);
}

/* Reads and parses one version of the tokens file into *out; id is the
 * identity of the descriptor read. */
static int read_tokens_file(const struct tokens_store *t, struct mcpx_auth_tokens **out,
                            struct file_id *id, struct mcpx_err *err)
{
	struct mcpx_err inner = {{0}};
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int fd, rc = 0;

	if (readable_by_runs(t, t->path))
		return mcpx_err_set(
		    err, EPERM,
		    "MCP_EXEC_AUTH_TOKENS_FILE %s lies where runs can read it; mount "
		    "it elsewhere (for example under /var/run/secrets/mcp-exec/)",
		    t->path);
	fd = open(t->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return mcpx_err_set(err, errno, "MCP_EXEC_AUTH_TOKENS_FILE %s: %s", t->path,
		                    strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = mcpx_err_set(err, EINVAL, "MCP_EXEC_AUTH_TOKENS_FILE %s: not a regular file",
		                  t->path);
		goto out;
	}
	if ((size_t)st.st_size > MCPX_AUTH_TOKENS_MAX_BYTES) {
		rc = mcpx_err_set(err, EFBIG, "MCP_EXEC_AUTH_TOKENS_FILE %s: larger than %u bytes",
		                  t->path, MCPX_AUTH_TOKENS_MAX_BYTES);
		goto out;
	}
	buf = malloc(MCPX_AUTH_TOKENS_MAX_BYTES + 1);
	if (!buf) {
		rc = mcpx_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	/* One byte more than allowed is read so a file that grew shows. */
	while (len <= MCPX_AUTH_TOKENS_MAX_BYTES) {
		ssize_t n = read(fd, buf + len, MCPX_AUTH_TOKENS_MAX_BYTES + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = mcpx_err_set(err, errno, "MCP_EXEC_AUTH_TOKENS_FILE %s: %s", t->path,
			                  strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	rc = mcpx_auth_tokens_parse(buf, len, out, &inner);
	if (rc < 0) {
		mcpx_err_set(err, -rc, "MCP_EXEC_AUTH_TOKENS_FILE %.160s: %s", t->path, inner.msg);
		goto out;
	}
	file_id_from_stat(id, &st);
out:
	free(buf);
	close(fd);
	return rc;
}

int mcpx_auth_set_tokens_file(struct mcpx_auth *a, const char *path,
                              bool (*run_may_read)(void *ctx, const char *path), void *ctx,
                              struct mcpx_err *err)
{
	struct tokens_store *t = &a->tokens;
	int rc;

	if (!path || !path[0])
		return 0;
	t->run_may_read = run_may_read;
	t->ctx = ctx;
	t->path = strdup(path);
	if (!t->path)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	rc = read_tokens_file(t, &t->cur, &t->seen, err);
	if (rc < 0) {
		free(t->path);
		t->path = NULL;
		return rc;
	}
	for (size_t i = 0; i < t->cur->n; i++)
		t->cur->v[i].cred = ++a->serials;
	a->enabled = true;
	return 0;
}

size_t mcpx_auth_tokens_count(const struct mcpx_auth *a)
{
	return a && a->tokens.cur ? a->tokens.cur->n : 0;
}

/* Gives each entry of next its credential number: the one it had in cur
 * when the same token still belongs to the same caller, else a new one.
 * Returns how many of cur's credentials next no longer has; their callers
 * are logged (names only: never a token or a hash). */
static size_t carry_creds(struct mcpx_auth *a, const struct mcpx_auth_tokens *cur,
                          struct mcpx_auth_tokens *next)
{
	size_t gone = 0;

	for (size_t i = 0; i < next->n; i++) {
		struct mcpx_auth_token *e = &next->v[i];

		for (size_t j = 0; cur && j < cur->n && !e->cred; j++)
			if (mcpx_ct_equal(e->digest, cur->v[j].digest, MCPX_SHA256_LEN) &&
			    strcmp(e->caller, cur->v[j].caller) == 0)
				e->cred = cur->v[j].cred;
		if (!e->cred)
			e->cred = ++a->serials;
	}
	for (size_t j = 0; cur && j < cur->n; j++) {
		bool kept = false;

		for (size_t i = 0; i < next->n && !kept; i++)
			kept = next->v[i].cred == cur->v[j].cred;
		if (kept)
			continue;
		gone++;
		mcpx_warn("auth: a token of caller %s was removed: its requests and streams in "
		          "flight end",
		          cur->v[j].caller);
	}
	return gone;
}

/* A changed tokens file is re-read at most once a second; a bad version
 * is logged (once per change) and the previous one stays, so a half-written
 * file locks nobody out. A good one takes effect at once: a removed token
 * stops working with the next request that presents it, and what it opened
 * ends (mcpx_auth_revocations). */
static void tokens_maybe_reload(struct mcpx_auth *a, time_t now)
{
	struct tokens_store *t = &a->tokens;
	struct mcpx_auth_tokens *next = NULL;
	struct file_id cur = {0};
	struct mcpx_err err = {{0}};
	struct stat st;

	if (now >= t->last_check && now - t->last_check < 1)
		return;
	t->last_check = now;
	if (stat(t->path, &st) == 0)
		file_id_from_stat(&cur, &st);
	if (file_id_equal(&cur, &t->seen))
		return;
	if (read_tokens_file(t, &next, &cur, &err) < 0) {
		mcpx_warn("auth tokens file changed but was not reloaded; keeping the previous "
		          "version: %s",
		          err.msg);
		t->seen = cur;
		return;
	}
	t->seen = cur;
	if (carry_creds(a, t->cur, next))
		a->revocations++;
	mcpx_auth_tokens_free(t->cur);
	t->cur = next;
	mcpx_info("auth tokens file %s reloaded: %zu tokens", t->path, next->n);
}

/* The caller whose token has digest d, or NULL; *cred its credential.
 * Every entry is compared, whatever matched before, so the time does not
 * depend on the position. */
static const char *match_digest(const struct mcpx_auth *a, const uint8_t d[MCPX_SHA256_LEN],
                                unsigned long *cred)
{
	const char *who = NULL;

	if (a->single && mcpx_ct_equal(d, a->digest, MCPX_SHA256_LEN)) {
		who = "default";
		*cred = a->single_cred;
	}
	if (a->tokens.cur)
		for (size_t i = 0; i < a->tokens.cur->n; i++) {
			const struct mcpx_auth_token *e = &a->tokens.cur->v[i];
			bool m = mcpx_ct_equal(d, e->digest, MCPX_SHA256_LEN);

			if (m && !who) {
				who = e->caller;
				*cred = e->cred;
			}
		}
	return who;
}

/* Hashes a presented value and looks it up. Hashing first means every
 * comparison covers 32 bytes, so neither the time taken nor an early exit
 * reveals a token's length or a matching prefix. The whole value is
 * hashed, NULs included: a value that merely starts with a token never
 * matches. */
static const char *lookup(const struct mcpx_auth *a, const char *v, size_t len, unsigned long *cred)
{
	uint8_t d[MCPX_SHA256_LEN];
	const char *who;

	if (!v || len == 0)
		return NULL;
	mcpx_sha256(v, len, d);
	who = match_digest(a, d, cred);
	mcpx_wipe(d, sizeof(d));
	return who;
}

int mcpx_auth_identify(struct mcpx_auth *a, const char *x_mcp_auth, size_t x_len,
                       const char *authorization, size_t authz_len, time_t now,
                       char caller[MCPX_CALLER_MAX], unsigned long *cred)
{
	const char *who = NULL;
	unsigned long dummy;

	if (!cred)
		cred = &dummy;
	*cred = 0;
	caller[0] = '\0';
	if (!mcpx_auth_enabled(a))
		return 0;
	mcpx_auth_poll(a, now);
	who = lookup(a, x_mcp_auth, x_len, cred);
	/* RFC 6750: the scheme is case-insensitive and followed by one space.
	 * Anything looser would accept values no client sends. */
	if (!who && authorization && authz_len > 7 &&
	    strncasecmp(authorization, "Bearer ", 7) == 0) {
		who = lookup(a, authorization + 7, authz_len - 7, cred);
		/* Not a token of ours: perhaps a ServiceAccount's, which the
		 * API server decides (once; the verdict is cached). Only what
		 * could be one is worth its quota: a JWT. */
		if (!who && a->k8s) {
			int rc;

			if (!mcpx_tokenreview_shaped(authorization + 7, authz_len - 7)) {
				mcpx_metrics_tokenreview("not_jwt");
				return -EACCES;
			}
			rc = mcpx_tokenreview_cached(a->k8s, authorization + 7, authz_len - 7, now,
			                             caller);
			return rc == -ENOENT ? -EINPROGRESS : rc;
		}
	}
	if (!who)
		return -EACCES;
	snprintf(caller, MCPX_CALLER_MAX, "%s", who);
	return 0;
}

bool mcpx_auth_check(struct mcpx_auth *a, const char *x_mcp_auth, size_t x_len,
                     const char *authorization, size_t authz_len, time_t now)
{
	char caller[MCPX_CALLER_MAX];

	return mcpx_auth_identify(a, x_mcp_auth, x_len, authorization, authz_len, now, caller,
	                          NULL) == 0;
}

void mcpx_auth_poll(struct mcpx_auth *a, time_t now)
{
	if (!a)
		return;
	if (a->path)
		maybe_reload(a, now);
	if (a->tokens.path)
		tokens_maybe_reload(a, now);
}

unsigned long mcpx_auth_revocations(const struct mcpx_auth *a)
{
	return a ? a->revocations : 0;
}

bool mcpx_auth_cred_live(const struct mcpx_auth *a, unsigned long cred)
{
	if (!a || !cred)
		return true;
	if (a->single && cred == a->single_cred)
		return true;
	for (size_t i = 0; a->tokens.cur && i < a->tokens.cur->n; i++)
		if (a->tokens.cur->v[i].cred == cred)
			return true;
	return false;
}

unsigned long mcpx_auth_generation(const struct mcpx_auth *a)
{
	return a ? a->generation : 0;
}

void mcpx_auth_set_kubernetes(struct mcpx_auth *a, struct mcpx_tokenreview *tr)
{
	a->k8s = tr;
	if (tr)
		a->enabled = true;
}

int mcpx_auth_review(struct mcpx_auth *a, const char *authorization, size_t authz_len,
                     const char *addr, void (*fn)(void *arg, int verdict, const char *caller),
                     void *arg, struct mcpx_review **out)
{
	*out = NULL;
	if (!a || !a->k8s || authz_len <= 7 || strncasecmp(authorization, "Bearer ", 7) != 0)
		return -EINVAL;
	return mcpx_tokenreview_start(a->k8s, authorization + 7, authz_len - 7, addr, fn, arg, out);
}
