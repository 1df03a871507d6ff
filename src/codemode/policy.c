/*
 * policy.c - the policy file: strict parsing into an immutable,
 * reference-counted snapshot, and the store that re-reads it on change.
 *
 * Parsing walks the JSON with the pointer of the current value in hand, so
 * every error names where it is ("/egress/0/methods/1: ..."). Objects are
 * checked against the keys their parser knows, so a typo ("credentail") is
 * an error instead of a silently ignored setting, and duplicate keys (which
 * cJSON would resolve quietly) are refused. The top level is a table of
 * sections, parsed in table order because later ones refer to earlier ones
 * ("exec" and "functions" name "egress" rules and "upstreams"); each
 * section has a file of its own (policy_egress.c, policy_functions.c,
 * policy_upstreams.c, ...), and the helpers all sections share are in
 * policy_internal.h.
 *
 * Neither the policy file nor a secret or source file may lie where a run
 * can read it (the sandbox decides that through mcpx_policy_opts); how a
 * secret is read and kept is policy_egress.c's.
 *
 * This file holds what the sections' parsers share: the strict-parsing
 * helpers, the files they read (identities, the readable-path rule, a
 * bounded read), and queries on a snapshot. It sits below them all; the
 * "egress" section, credentials and a grant's rules are policy_egress.c's,
 * the document's top level and a snapshot's end policy_document.c's, a
 * grant policy_grant.c's, the store policy_store.c's.
 *
 * What it does not do: make requests (broker.c), decide per address
 * (egress_check.c), or run functions (functions.c).
 */
#include "policy.h"
#include "policy_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"
#include "log.h"
#include "loop.h"
#include "utf8.h"

/* ---- parsing helpers (policy_internal.h) ---------------------------- */

int mcpx_pol_fail(struct policy_ctx *c, int e, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mcpx_err_set(c->err, e, "%s: %s", c->ptr[0] ? c->ptr : "(the top level)", msg);
}

/* Appends "/key" (RFC 6901 escaping) to the pointer; returns the old length
 * for mcpx_pol_pop(). */
size_t mcpx_pol_push_key(struct policy_ctx *c, const char *key)
{
	size_t old = strlen(c->ptr), n = old;

	if (n + 1 < sizeof(c->ptr))
		c->ptr[n++] = '/';
	for (; *key && n + 3 < sizeof(c->ptr); key++) {
		if (*key == '~' || *key == '/') {
			c->ptr[n++] = '~';
			c->ptr[n++] = *key == '~' ? '0' : '1';
		} else {
			c->ptr[n++] = *key;
		}
	}
	c->ptr[n] = '\0';
	return old;
}

size_t mcpx_pol_push_index(struct policy_ctx *c, size_t i)
{
	size_t old = strlen(c->ptr);

	snprintf(c->ptr + old, sizeof(c->ptr) - old, "/%zu", i);
	return old;
}

void mcpx_pol_pop(struct policy_ctx *c, size_t old)
{
	c->ptr[old] = '\0';
}

/* Every key of obj must be one of keys[0..n), and appear once. */
int mcpx_pol_check_keys(struct policy_ctx *c, const cJSON *obj, const char *const *keys, size_t n)
{
	for (const cJSON *k = obj->child; k; k = k->next) {
		bool known = false;

		for (size_t i = 0; i < n && !known; i++)
			known = strcmp(k->string, keys[i]) == 0;
		for (const cJSON *e = obj->child; e != k; e = e->next) {
			if (strcmp(e->string, k->string) == 0) {
				size_t old = mcpx_pol_push_key(c, k->string);
				int rc = mcpx_pol_fail(c, EINVAL, "duplicate key");
				mcpx_pol_pop(c, old);
				return rc;
			}
		}
		if (!known) {
			size_t old = mcpx_pol_push_key(c, k->string);
			int rc = mcpx_pol_fail(c, EINVAL, "unknown key");
			mcpx_pol_pop(c, old);
			return rc;
		}
	}
	return 0;
}

int mcpx_pol_want_object(struct policy_ctx *c, const cJSON *v)
{
	return cJSON_IsObject(v) ? 0 : mcpx_pol_fail(c, EINVAL, "must be an object");
}

/* A string of 1..cap-1 bytes (and no NUL inside) copied to buf. */
int mcpx_pol_get_string(struct policy_ctx *c, const cJSON *v, char *buf, size_t cap)
{
	size_t n;

	if (!cJSON_IsString(v))
		return mcpx_pol_fail(c, EINVAL, "must be a string");
	n = strlen(v->valuestring);
	if (n == 0 || n >= cap)
		return mcpx_pol_fail(c, EINVAL, "must be 1..%zu characters", cap - 1);
	memcpy(buf, v->valuestring, n + 1);
	return 0;
}

int mcpx_pol_get_uint(struct policy_ctx *c, const cJSON *v, double min, double max, double *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return mcpx_pol_fail(c, EINVAL, "must be an integer");
	d = v->valuedouble;
	/* Whole (as d == floor(d), without libm): 2^52 and beyond are. */
	if (!isfinite(d) || (fabs(d) < 0x1p52 && d != (double)(long long)d))
		return mcpx_pol_fail(c, EINVAL, "must be an integer");
	if (d < min || d > max)
		return mcpx_pol_fail(c, ERANGE, "must be in [%.0f, %.0f]", min, max);
	*out = d;
	return 0;
}

/* Runs parse on each element of an array of at most max entries. */
int mcpx_pol_each_item(struct policy_ctx *c, const cJSON *arr, size_t max,
                       int (*parse)(struct policy_ctx *, const cJSON *, size_t, void *), void *arg)
{
	size_t i = 0;

	if (!cJSON_IsArray(arr))
		return mcpx_pol_fail(c, EINVAL, "must be an array");
	if ((size_t)cJSON_GetArraySize(arr) > max)
		return mcpx_pol_fail(c, E2BIG, "at most %zu entries", max);
	for (const cJSON *e = arr->child; e; e = e->next, i++) {
		size_t old = mcpx_pol_push_index(c, i);
		int rc = parse(c, e, i, arg);

		mcpx_pol_pop(c, old);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- files: identities, the readable-path rule, secrets ------------------ */

void mcpx_pol_file_id_stat(const char *path, struct mcpx_file_id *id)
{
	struct stat st;

	memset(id, 0, sizeof(*id));
	snprintf(id->path, sizeof(id->path), "%s", path);
	if (stat(path, &st) < 0) {
		id->err = errno;
		return;
	}
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	id->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	id->size = st.st_size;
}

void mcpx_pol_watch_file(struct policy_ctx *c, const char *path)
{
	if (c->n_files < c->max_files)
		mcpx_pol_file_id_stat(path, &c->files[c->n_files++]);
}

/* A file a run could read (as named, or where its symlinks lead) cannot
 * hold anything the run must not see. */
bool mcpx_pol_readable_by_runs(const struct mcpx_policy_opts *o, const char *path)
{
	char real[PATH_MAX];

	if (!o || !o->run_may_read)
		return false;
	if (o->run_may_read(o->ctx, path))
		return true;
	return realpath(path, real) && o->run_may_read(o->ctx, real);
}

/* Reads a whole regular file of at most cap bytes into a new buffer. */
int mcpx_pol_read_file(const char *path, size_t cap, char **out, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	size_t n = 0;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto out;
	}
	if ((size_t)st.st_size > cap) {
		rc = -EFBIG;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	while (n <= (size_t)st.st_size) {
		ssize_t r = read(fd, buf + n, (size_t)st.st_size + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > (size_t)st.st_size) {
		rc = -EFBIG; /* it grew while we read */
		goto out;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	buf = NULL;
out:
	if (buf) {
		mcpx_wipe(buf, (size_t)st.st_size + 1);
		free(buf);
	}
	close(fd);
	return rc;
}

const char *mcpx_pol_file_error(int rc)
{
	return rc == -EFBIG ? "too large" : rc == -EINVAL ? "not a regular file" : strerror(-rc);
}

/* ---- the policy object -------------------------------------------------- */

struct mcpx_policy *mcpx_policy_ref(struct mcpx_policy *p)
{
	if (p)
		p->refs++;
	return p;
}

void mcpx_policy_summary(const struct mcpx_policy *p, char *buf, size_t len)
{
	size_t callable = 0;

	for (size_t i = 0; i < p->n_functions; i++)
		callable += p->functions[i].callable_from_exec;
	snprintf(buf, len,
	         "version %llu, %zu egress rules, exec may use %zu, %zu functions (%zu callable "
	         "from exec), %zu upstreams (exec may call %zu)",
	         (unsigned long long)p->version, p->n_rules, p->exec.n_rules, p->n_functions,
	         callable, p->n_upstreams, p->exec.n_upstreams);
	if (p->has_profiles) {
		size_t n = strlen(buf);

		if (n < len)
			snprintf(buf + n, len - n, ", %zu profiles", p->n_profiles);
	}
}
