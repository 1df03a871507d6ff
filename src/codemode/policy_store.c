/*
 * policy_store.c - the policy in force: the file read and parsed into a
 * snapshot, then watched by polling. The identity of each file (device,
 * inode, mtime, size, as stat() sees it through symlinks) is taken before
 * the file is read, so a change during a read is caught by the next poll.
 * A failed reload is logged once and the old policy stays in force; a
 * successful one is announced to the store's listener.
 *
 * It parses nothing itself (policy_document.c does).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "loop.h"
#include "policy.h"
#include "policy_internal.h"

#define MAX_WATCHED (1 + MCPX_POLICY_MAX_RULES + MCPX_POLICY_MAX_FUNCTIONS)

struct mcpx_policy_store {
	char path[4096];
	struct mcpx_policy_opts o;
	struct mcpx_policy *cur;
	uint64_t versions;
	/* The files of the last attempt, as they were before it read them. */
	struct mcpx_file_id watched[MAX_WATCHED];
	size_t n_watched;
	struct mcpx_loop *loop;
	struct mcpx_timer timer;
	unsigned interval_ms;
	void (*on_change)(void *arg);
	void *on_change_arg;
};

static bool file_id_same(const struct mcpx_file_id *a, const struct mcpx_file_id *b)
{
	return a->err == b->err && a->dev == b->dev && a->ino == b->ino &&
	       a->mtime_ns == b->mtime_ns && a->size == b->size;
}

/* One attempt: identities first, then the contents. */
static int load(struct mcpx_policy_store *s, struct mcpx_err *err)
{
	struct mcpx_policy *p = NULL;
	char *json = NULL;
	size_t len = 0, n = 0;
	int rc;

	mcpx_pol_file_id_stat(s->path, &s->watched[0]);
	s->n_watched = 1;
	if (mcpx_pol_readable_by_runs(&s->o, s->path))
		return mcpx_err_set(err, EPERM,
		                    "%s lies where runs can read it; mount the policy elsewhere "
		                    "(for example under /var/run/secrets/mcp-exec/)",
		                    s->path);
	rc = mcpx_pol_read_file(s->path, MCPX_POLICY_MAX_BYTES, &json, &len);
	if (rc < 0)
		return mcpx_err_set(err, -rc, "cannot read %s: %s", s->path,
		                    mcpx_pol_file_error(rc));
	rc = mcpx_policy_parse(json, len, &s->o, &p, s->watched + 1, MAX_WATCHED - 1, &n, err);
	free(json);
	s->n_watched = 1 + n;
	if (rc < 0)
		return rc;
	p->version = ++s->versions;
	mcpx_policy_unref(s->cur);
	s->cur = p;
	return 0;
}

int mcpx_policy_store_open(const char *path, const struct mcpx_policy_opts *o,
                           struct mcpx_policy_store **out, struct mcpx_err *err)
{
	struct mcpx_policy_store *s;
	struct mcpx_err inner = {{0}};
	int rc;

	*out = NULL;
	if (!path || path[0] != '/' || strlen(path) >= sizeof(s->path))
		return mcpx_err_set(err, EINVAL, "MCP_EXEC_POLICY must be an absolute path");
	s = calloc(1, sizeof(*s));
	if (!s)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	strcpy(s->path, path);
	s->o = *o;
	rc = load(s, &inner);
	if (rc < 0) {
		mcpx_err_set(err, -rc, "policy %s: %s", path, inner.msg);
		mcpx_policy_store_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int mcpx_policy_store_check(struct mcpx_policy_store *s)
{
	struct mcpx_err err = {{0}};
	bool changed = false;
	uint64_t old = s->cur->version;
	int rc;

	for (size_t i = 0; i < s->n_watched && !changed; i++) {
		struct mcpx_file_id now;

		mcpx_pol_file_id_stat(s->watched[i].path, &now);
		changed = !file_id_same(&now, &s->watched[i]);
	}
	if (!changed)
		return 0;
	rc = load(s, &err);
	if (rc < 0) {
		mcpx_error("policy %s: %s; version %llu stays in force", s->path, err.msg,
		           (unsigned long long)old);
		return rc;
	}
	{
		char what[160];

		mcpx_policy_summary(s->cur, what, sizeof(what));
		mcpx_info("policy %s reloaded: %s", s->path, what);
	}
	if (s->on_change)
		s->on_change(s->on_change_arg);
	return 1;
}

static void poll_cb(struct mcpx_timer *t)
{
	struct mcpx_policy_store *s = t->arg;

	(void)mcpx_policy_store_check(s);
	mcpx_timer_start(s->loop, &s->timer, (uint64_t)s->interval_ms * 1000u);
}

void mcpx_policy_store_watch(struct mcpx_policy_store *s, struct mcpx_loop *loop,
                             unsigned interval_ms)
{
	s->loop = loop;
	s->interval_ms = interval_ms ? interval_ms : 1000;
	s->timer.fn = poll_cb;
	s->timer.arg = s;
	mcpx_timer_start(loop, &s->timer, (uint64_t)s->interval_ms * 1000u);
}

void mcpx_policy_store_on_change(struct mcpx_policy_store *s, void (*fn)(void *arg), void *arg)
{
	s->on_change = fn;
	s->on_change_arg = arg;
}

struct mcpx_policy *mcpx_policy_store_current(const struct mcpx_policy_store *s)
{
	return s ? s->cur : NULL;
}

void mcpx_policy_store_free(struct mcpx_policy_store *s)
{
	if (!s)
		return;
	if (s->loop)
		mcpx_timer_cancel(&s->timer);
	mcpx_policy_unref(s->cur);
	free(s);
}
