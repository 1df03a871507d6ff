/*
 * store.c - the store's front (store.h): keys checked and hashed, one op per
 * operation with a deadline, callbacks always later and on the loop.
 *
 * Every operation becomes a struct mcpx_store_op handed to the backend
 * (store_backend.h). The op lives until both the backend has finished with
 * it and the caller has been told (or cancelled); whichever comes last
 * frees it. A deadline that passes first tells the caller -ETIMEDOUT from
 * a result of its own, because the backend may still be writing the op's
 * (the directory store writes it on a worker thread). A lease acquired by
 * an op whose caller is gone is released here.
 *
 * What it does not do: touch the store itself (the backends), or keep
 * leases (store_lease.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crypto.h"
#include "log.h"
#include "metrics.h"
#include "store_internal.h"

#define DEFAULT_OP_TIMEOUT_MS 30000u
#define CALLER_INPUT_MAX 4096

int64_t mcpx_store_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int mcpx_store_op_fail(struct mcpx_store_op *op, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(op->err.msg, sizeof(op->err.msg), fmt, ap);
	va_end(ap);
	op->res.rc = rc;
	return rc;
}

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool valid_kind(const char *k)
{
	size_t n = k ? strlen(k) : 0;

	if (n == 0 || n > MCPX_STORE_KIND_MAX || k[0] < 'a' || k[0] > 'z')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
			return false;
	return true;
}

static bool valid_name(const char *k)
{
	size_t n = k ? strlen(k) : 0;

	if (n == 0 || n > MCPX_STORE_NAME_MAX || !is_alnum(k[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(k[i]) && k[i] != '_' && k[i] != '.' && k[i] != '-')
			return false;
	return true;
}

static bool valid_owner(const char *o)
{
	size_t n = o ? strlen(o) : 0;

	if (n == 0 || n > MCPX_STORE_OWNER_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(o[i]) && !strchr("_.:@-", o[i]))
			return false;
	return true;
}

/* The caller's identity never reaches a path or a Redis key: only a hash
 * of it does, so its bytes (slashes, dots, NULs of other encodings) cannot
 * matter, and two callers collide only if SHA-256 does (on 128 bits). */
static int skey_make(const struct mcpx_store_key *key, bool want_name, struct mcpx_store_skey *out)
{
	static const char domain[] = "mcp-exec store caller";
	char buf[sizeof(domain) + CALLER_INPUT_MAX];
	char hex[65];
	size_t n;

	if (!key || !key->caller || !key->caller[0] || !valid_kind(key->kind))
		return -EINVAL;
	if (want_name ? !valid_name(key->name) : key->name != NULL)
		return -EINVAL;
	n = strnlen(key->caller, CALLER_INPUT_MAX + 1);
	if (n > CALLER_INPUT_MAX)
		return -EINVAL;
	memcpy(buf, domain, sizeof(domain)); /* the NUL separates the parts */
	memcpy(buf + sizeof(domain), key->caller, n);
	mcpx_sha256_hex(buf, sizeof(domain) + n, hex);
	memcpy(out->caller, hex, MCPX_STORE_CALLER_HASH_LEN);
	out->caller[MCPX_STORE_CALLER_HASH_LEN] = '\0';
	snprintf(out->kind, sizeof(out->kind), "%s", key->kind);
	snprintf(out->name, sizeof(out->name), "%s", want_name ? key->name : "");
	return 0;
}

static void op_link(struct mcpx_store *s, struct mcpx_store_op *op)
{
	op->next = s->ops;
	if (s->ops)
		s->ops->prev = op;
	s->ops = op;
}

static void op_unlink(struct mcpx_store_op *op)
{
	struct mcpx_store *s = op->s;

	if (op->prev)
		op->prev->next = op->next;
	else
		s->ops = op->next;
	if (op->next)
		op->next->prev = op->prev;
	op->prev = op->next = NULL;
}

static void op_timer_cb(struct mcpx_timer *t);

static struct mcpx_store_op *op_new(struct mcpx_store *s, enum mcpx_store_opcode code)
{
	struct mcpx_store_op *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	op->s = s;
	op->code = code;
	op->max_blob_bytes = s->cfg.max_blob_bytes;
	op->timer.fn = op_timer_cb;
	op->timer.arg = op;
	op_link(s, op);
	return op;
}

/* Frees op once the backend is done with it and the caller was told. */
static void op_maybe_free(struct mcpx_store_op *op)
{
	struct mcpx_store *s = op->s;

	if (!op->delivered || !op->backend_done)
		return;
	mcpx_timer_cancel(&op->timer);
	/* The caller is gone (deadline, cancel) but the store gave the lease:
	 * nobody would release it before it lapses, so release it now. */
	if (op->code == MCPX_OP_LEASE_ACQUIRE && op->res.rc == 0 && op->dropped && !s->freeing)
		mcpx_store_lease_release_bg(s, &op->key, op->owner);
	op_unlink(op);
	free(op->res.data);
	free(op->res.entries);
	if (op->res.lease)
		mcpx_store_lease_end(op->res.lease);
	free(op->data);
	free(op);
}

static const char *default_message(int rc)
{
	switch (rc) {
	case -ETIMEDOUT:
		return "the store did not answer in time";
	case -ENOTCONN:
		return "the store is unreachable";
	case -ESHUTDOWN:
		return "the store is shutting down";
	case -ENOMEM:
		return "out of memory";
	case -ENOENT:
		return "not found";
	default:
		return "the store failed";
	}
}

static const char *const op_names[MCPX_OP_COUNT] = {
    "get",           "put",           "delete",      "list",          "record_get", "record_put",
    "record_delete", "lease_acquire", "lease_renew", "lease_release", "lease_peek"};

static const char *outcome_of(int rc)
{
	switch (rc) {
	case 0:
		return "ok";
	case -ENOENT:
		return "not_found";
	case -EEXIST:
	case -ESTALE:
	case -EBUSY:
	case -ENOLCK:
		return "conflict";
	case -EFBIG:
	case -E2BIG:
		return "too_large";
	case -EDQUOT:
		return "quota";
	case -ETIMEDOUT:
		return "timeout";
	case -ENOTCONN:
		return "unavailable";
	case -ESHUTDOWN:
		return "shutdown";
	default:
		return "error";
	}
}

/* Counts op's outcome rc; a get's or put's bytes when it succeeded. */
static void op_metrics(const struct mcpx_store_op *op, int rc, size_t got)
{
	double secs = (double)(mcpx_now_us() - op->started_us) / 1e6;
	uint64_t bytes = 0;

	if (op->code >= MCPX_OP_COUNT || !op->started_us)
		return;
	if (rc == 0)
		bytes = op->code == MCPX_OP_GET ? got : op->code == MCPX_OP_PUT ? op->len : 0;
	mcpx_metrics_store_op(op->s->backend->ops->type, op_names[op->code], outcome_of(rc), secs,
	                      bytes);
}

/* Tells the caller op's own result. */
static void deliver(struct mcpx_store_op *op)
{
	op->delivered = true;
	if (op->res.rc < 0)
		op->res.error = op->err.msg[0] ? op->err.msg : default_message(op->res.rc);
	op_metrics(op, op->res.rc, op->res.len);
	if (op->internal)
		op->internal(op, &op->res);
	else if (op->cb)
		op->cb(op->arg, &op->res);
	op_maybe_free(op);
}

/* Tells the caller rc without touching op->res, which the backend may be
 * writing still. */
static void deliver_other(struct mcpx_store_op *op, int rc, const char *msg)
{
	struct mcpx_store_result r;

	memset(&r, 0, sizeof(r));
	r.rc = rc;
	r.error = msg;
	op->delivered = true;
	op->dropped = true;
	op_metrics(op, rc, 0);
	if (op->internal)
		op->internal(op, &r);
	else if (op->cb)
		op->cb(op->arg, &r);
	op_maybe_free(op);
}

static void op_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_store_op *op = t->arg;

	if (op->delivered)
		return;
	if (op->backend_done)
		deliver(op);
	else
		deliver_other(op, -ETIMEDOUT, "the store did not answer in time");
}

void mcpx_store_op_done(struct mcpx_store_op *op)
{
	op->backend_done = true;
	if (op->delivered) {
		op_maybe_free(op);
		return;
	}
	mcpx_timer_cancel(&op->timer);
	if (op->in_submit && !op->s->freeing) {
		/* Callbacks never run inside the call that started them. */
		mcpx_timer_start(op->s->loop, &op->timer, 0);
		return;
	}
	deliver(op);
}

void mcpx_store_op_start(struct mcpx_store_op *op)
{
	struct mcpx_store *s = op->s;
	uint32_t ms = s->cfg.op_timeout_ms ? s->cfg.op_timeout_ms : DEFAULT_OP_TIMEOUT_MS;

	op->started_us = mcpx_now_us();
	op->timeout_ms = ms;
	mcpx_timer_start(s->loop, &op->timer, (uint64_t)ms * 1000u);
	op->in_submit = true;
	s->backend->ops->submit(s->backend, op);
	op->in_submit = false;
}

/* An op refused before reaching the backend, told later like any other. */
static void op_refuse(struct mcpx_store_op *op, int rc, const char *msg)
{
	mcpx_store_op_fail(op, rc, "%s", msg);
	op->backend_done = true;
	mcpx_timer_start(op->s->loop, &op->timer, 0);
}

struct mcpx_store_op *mcpx_store_op_internal(
    struct mcpx_store *s, enum mcpx_store_opcode code, const struct mcpx_store_skey *key,
    void (*fn)(struct mcpx_store_op *op, struct mcpx_store_result *res), void *arg)
{
	struct mcpx_store_op *op = op_new(s, code);

	if (!op)
		return NULL;
	op->key = *key;
	op->internal = fn;
	op->internal_arg = arg;
	return op;
}

/* The common start of every caller-facing operation. */
static int begin(struct mcpx_store *s, enum mcpx_store_opcode code,
                 const struct mcpx_store_key *key, bool want_name, mcpx_store_cb cb, void *arg,
                 struct mcpx_store_op **opp, struct mcpx_store_op **out)
{
	struct mcpx_store_skey k;
	struct mcpx_store_op *op;
	int rc;

	if (opp)
		*opp = NULL;
	if (!s || !cb)
		return -EINVAL;
	if (s->freeing)
		return -ESHUTDOWN;
	if ((rc = skey_make(key, want_name, &k)) < 0)
		return rc;
	if (!(op = op_new(s, code)))
		return -ENOMEM;
	op->key = k;
	op->cb = cb;
	op->arg = arg;
	*out = op;
	if (opp)
		*opp = op;
	return 0;
}

int mcpx_store_get(struct mcpx_store *s, const struct mcpx_store_key *key, bool refresh,
                   mcpx_store_cb cb, void *arg, struct mcpx_store_op **opp)
{
	struct mcpx_store_op *op;
	int rc = begin(s, MCPX_OP_GET, key, true, cb, arg, opp, &op);

	if (rc < 0)
		return rc;
	op->refresh = refresh;
	mcpx_store_op_start(op);
	return 0;
}

int mcpx_store_put(struct mcpx_store *s, const struct mcpx_store_key *key, char *data, size_t len,
                   const struct mcpx_store_put_opts *opts, mcpx_store_cb cb, void *arg,
                   struct mcpx_store_op **opp)
{
	struct mcpx_store_op *op;
	int rc;

	if (!opts || opts->ttl_ms == 0 || (opts->lease_owner && !valid_owner(opts->lease_owner)) ||
	    (!data && len)) {
		free(data);
		return -EINVAL;
	}
	if (s && len > s->cfg.max_blob_bytes) {
		free(data);
		return -EFBIG;
	}
	if ((rc = begin(s, MCPX_OP_PUT, key, true, cb, arg, opp, &op)) < 0) {
		free(data);
		return rc;
	}
	op->data = data;
	op->len = len;
	op->ttl_ms = opts->ttl_ms;
	op->max_count = opts->max_count;
	op->max_total_bytes = opts->max_total_bytes;
	snprintf(op->owner, sizeof(op->owner), "%s", opts->lease_owner ? opts->lease_owner : "");
	mcpx_store_op_start(op);
	return 0;
}

int mcpx_store_delete(struct mcpx_store *s, const struct mcpx_store_key *key,
                      const char *lease_owner, mcpx_store_cb cb, void *arg,
                      struct mcpx_store_op **opp)
{
	struct mcpx_store_op *op;
	int rc;

	if (lease_owner && !valid_owner(lease_owner))
		return -EINVAL;
	if ((rc = begin(s, MCPX_OP_DELETE, key, true, cb, arg, opp, &op)) < 0)
		return rc;
	snprintf(op->owner, sizeof(op->owner), "%s", lease_owner ? lease_owner : "");
	mcpx_store_op_start(op);
	return 0;
}

int mcpx_store_list(struct mcpx_store *s, const struct mcpx_store_key *key,
                    enum mcpx_store_list_what what, mcpx_store_cb cb, void *arg,
                    struct mcpx_store_op **opp)
{
	struct mcpx_store_op *op;
	int rc;

	if (what != MCPX_STORE_LIST_BLOBS && what != MCPX_STORE_LIST_RECORDS)
		return -EINVAL;
	if ((rc = begin(s, MCPX_OP_LIST, key, false, cb, arg, opp, &op)) < 0)
		return rc;
	op->what = what;
	mcpx_store_op_start(op);
	return 0;
}

int mcpx_store_record_get(struct mcpx_store *s, const struct mcpx_store_key *key, mcpx_store_cb cb,
                          void *arg, struct mcpx_store_op **opp)
{
	struct mcpx_store_op *op;
	int rc = begin(s, MCPX_OP_RECORD_GET, key, true, cb, arg, opp, &op);

	if (rc < 0)
		return rc;
	mcpx_store_op_start(op);
	return 0;
}

int mcpx_store_record_put(struct mcpx_store *s, const struct mcpx_store_key *key, const void *value,
                          size_t len, const struct mcpx_store_record_opts *opts, mcpx_store_cb cb,
                          void *arg, struct mcpx_store_op **opp)
{
	struct mcpx_store_op *op;
	int rc;

	if (!opts || opts->ttl_ms == 0 || (!value && len))
		return -EINVAL;
	if (len > MCPX_STORE_RECORD_MAX)
		return -EFBIG;
	if ((rc = begin(s, MCPX_OP_RECORD_PUT, key, true, cb, arg, opp, &op)) < 0)
		return rc;
	op->data = malloc(len + 1);
	if (!op->data) {
		op_refuse(op, -ENOMEM, "out of memory");
		return 0;
	}
	if (len)
		memcpy(op->data, value, len);
	op->data[len] = '\0';
	op->len = len;
	op->expect_version = opts->expect_version;
	op->ttl_ms = opts->ttl_ms;
	op->max_count = opts->max_count;
	mcpx_store_op_start(op);
	return 0;
}

int mcpx_store_record_delete(struct mcpx_store *s, const struct mcpx_store_key *key,
                             uint64_t expect_version, mcpx_store_cb cb, void *arg,
                             struct mcpx_store_op **opp)
{
	struct mcpx_store_op *op;
	int rc = begin(s, MCPX_OP_RECORD_DELETE, key, true, cb, arg, opp, &op);

	if (rc < 0)
		return rc;
	op->expect_version = expect_version;
	mcpx_store_op_start(op);
	return 0;
}

int mcpx_store_lease_peek(struct mcpx_store *s, const struct mcpx_store_key *key, mcpx_store_cb cb,
                          void *arg, struct mcpx_store_op **opp)
{
	struct mcpx_store_op *op;
	int rc = begin(s, MCPX_OP_LEASE_PEEK, key, true, cb, arg, opp, &op);

	if (rc < 0)
		return rc;
	mcpx_store_op_start(op);
	return 0;
}

int mcpx_store_lease_hold(struct mcpx_store *s, const struct mcpx_store_key *key, const char *owner,
                          uint32_t ttl_ms, uint32_t wait_ms, mcpx_store_lost_fn lost,
                          void *lost_arg, mcpx_store_cb cb, void *arg, struct mcpx_store_op **opp)
{
	struct mcpx_store_op *op;
	int rc;

	if (ttl_ms < 1000 || (owner && !valid_owner(owner)))
		return -EINVAL;
	if ((rc = begin(s, MCPX_OP_HOLD, key, true, cb, arg, opp, &op)) < 0)
		return rc;
	rc = mcpx_store_hold_start(s, op, owner, ttl_ms, wait_ms, lost, lost_arg);
	if (rc < 0) {
		if (opp)
			*opp = NULL;
		op->delivered = op->backend_done = true;
		op_maybe_free(op);
	}
	return rc;
}

void mcpx_store_hold_deliver(struct mcpx_store_op *op, struct mcpx_store_result *res)
{
	op->delivered = true;
	op->backend_done = true;
	op->res = *res;
	if (op->res.rc < 0 && !op->res.error)
		op->res.error = default_message(op->res.rc);
	op->cb(op->arg, &op->res);
	op_maybe_free(op);
}

void mcpx_store_cancel(struct mcpx_store_op *op)
{
	if (!op || op->delivered)
		return;
	if (op->code == MCPX_OP_HOLD) {
		mcpx_store_hold_cancel(op);
		op->delivered = op->backend_done = true;
		op_maybe_free(op);
		return;
	}
	op->delivered = true;
	op->dropped = true;
	mcpx_timer_cancel(&op->timer);
	op_maybe_free(op);
}

const char *mcpx_store_type(const struct mcpx_store *s)
{
	return s->backend->ops->type;
}

const char *mcpx_store_instance_id(const struct mcpx_store *s)
{
	return s->instance_id;
}

/* "<host>:<pid>:<random>", in the owner alphabet and short enough for a
 * ":<n>" suffix. */
static void make_instance_id(struct mcpx_store *s)
{
	char host[64] = "host";
	unsigned char rnd[4] = {0};

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	for (char *p = host; *p; p++)
		if (!is_alnum(*p) && *p != '-' && *p != '.')
			*p = '-';
	(void)mcpx_random(rnd, sizeof(rnd));
	snprintf(s->instance_id, sizeof(s->instance_id), "%s:%ld:%02x%02x%02x%02x", host,
	         (long)getpid(), rnd[0], rnd[1], rnd[2], rnd[3]);
}

int mcpx_store_open(struct mcpx_loop *loop, const struct mcpx_store_config *cfg,
                    struct mcpx_store **out, struct mcpx_err *err)
{
	struct mcpx_store *s;
	int rc;

	*out = NULL;
	if (cfg->spec.type != MCPX_STORE_DIR && cfg->spec.type != MCPX_STORE_REDIS)
		return mcpx_err_set(err, EINVAL, "no store of this type can be opened");
	if (!(s = calloc(1, sizeof(*s))))
		return mcpx_err_set(err, ENOMEM, "out of memory");
	s->loop = loop;
	s->cfg = *cfg;
	make_instance_id(s);
	if (cfg->spec.type == MCPX_STORE_DIR)
		rc = mcpx_store_dir_open(loop, cfg, &s->backend, err);
	else
		rc = mcpx_store_redis_open(loop, cfg, &s->backend, err);
	if (rc < 0) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void mcpx_store_free(struct mcpx_store *s)
{
	if (!s)
		return;
	s->freeing = true;
	mcpx_store_leases_shutdown(s);
	s->backend->ops->free(s->backend);
	/* What the backend finished but whose callback was still deferred. */
	while (s->ops) {
		struct mcpx_store_op *op = s->ops;

		if (!op->backend_done) {
			/* A backend must finish every op in free(); one that did
			 * not is a bug, but the caller is told all the same. */
			mcpx_store_op_fail(op, -ESHUTDOWN, "the store is shutting down");
			op->backend_done = true;
		}
		if (op->delivered)
			op_maybe_free(op);
		else
			deliver(op);
	}
	free(s);
}
