/*
 * store.c - the store's front (store.h): keys checked and hashed, arguments
 * checked, one op per operation (store_backend.c gives it its deadline and
 * tells its caller later, on the loop), the backend chosen at open.
 *
 * The caller's identity is hashed here, so no caller's bytes reach a path
 * or a Redis key. A lease hold is an op of its own that store_lease.c
 * drives; cancelling it ends the hold there.
 *
 * What it does not do: run an op's life (store_backend.c), touch the store
 * itself (the backends), or keep leases (store_lease.c).
 */
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypto.h"
#include "store_internal.h"

#define CALLER_INPUT_MAX 4096

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

/* An op refused before reaching the backend, told later like any other. */
static void op_refuse(struct mcpx_store_op *op, int rc, const char *msg)
{
	mcpx_store_op_fail(op, rc, "%s", msg);
	op->backend_done = true;
	mcpx_timer_start(op->s->loop, &op->timer, 0);
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
	if (!(op = mcpx_store_op_new(s, code)))
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
		mcpx_store_op_maybe_free(op);
	}
	return rc;
}

void mcpx_store_cancel(struct mcpx_store_op *op)
{
	if (!op || op->delivered)
		return;
	if (op->code == MCPX_OP_HOLD) {
		mcpx_store_hold_cancel(op);
		op->delivered = op->backend_done = true;
		mcpx_store_op_maybe_free(op);
		return;
	}
	mcpx_store_op_cancel(op);
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
	s->lease_end = mcpx_store_lease_end;
	s->lease_release_bg = mcpx_store_lease_release_bg;
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
	mcpx_store_ops_shutdown(s);
	free(s);
}
