/*
 * task_store.c - tasks in the shared store (task_store.h): each operation
 * one or a few store operations, their results turned into task records.
 *
 * Keys: (owner, "task", id) for the record, the outcome blob and the
 * lease; (owner, "taskcancel", id) for the cancel mark. The store hashes
 * the owner before it reaches a path or a Redis key, so a caller's name is
 * never interpreted; ids are checked by the callers (mcpx_task_id_valid)
 * before they are used as names.
 *
 * Every operation is a struct mcpx_task_op on the task store's list (so
 * freeing the task store abandons them); one that cannot even start reports
 * from a zero timer, never from inside its call.
 */
#include "task_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "loop.h"
#include "store.h"

#define KIND_CANCEL "taskcancel"

enum op_kind { OP_REC, OP_DONE, OP_BLOB, OP_LIST, OP_LEASE };

struct mcpx_task_store {
	struct mcpx_loop *loop;
	struct mcpx_store *store;
	struct mcpx_task_op *ops;
};

struct mcpx_task_op {
	struct mcpx_task_store *ts;
	struct mcpx_task_op *next, *prev;
	struct mcpx_store_op *sop; /* the store operation in flight */
	enum op_kind kind;
	union {
		mcpx_task_rec_cb rec;
		mcpx_task_done_cb done;
		mcpx_task_blob_cb blob;
		mcpx_task_list_cb list;
		mcpx_task_lease_cb lease;
	} cb;
	void *arg;
	bool has_cb;
	struct mcpx_timer later; /* an operation that could not start */
	int later_rc;
	char owner[MCPX_CALLER_MAX];
	char id[MCPX_TASK_ID_LEN + 1];
	struct mcpx_task_rec rec; /* create, save: what is written */
	/* list: the names, and the records read so far */
	struct mcpx_store_entry *entries;
	size_t n_entries, next_entry;
	struct mcpx_task_rec *recs;
	size_t n_recs;
	int step; /* drop: which part goes next */
	/* lease_take */
	mcpx_task_lost_fn lost;
	void *lost_arg;
};

/* ---- operations --------------------------------------------------------- */

static struct mcpx_task_op *op_new(struct mcpx_task_store *ts, enum op_kind kind, void *cb,
                                   void *arg, const char *owner, const char *id)
{
	struct mcpx_task_op *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	op->ts = ts;
	op->kind = kind;
	op->arg = arg;
	op->has_cb = cb != NULL;
	/* A function pointer through a void pointer: every member of the
	 * union is one, and the kind says which. */
	switch (kind) {
	case OP_REC:
		op->cb.rec = (mcpx_task_rec_cb)cb;
		break;
	case OP_DONE:
		op->cb.done = (mcpx_task_done_cb)cb;
		break;
	case OP_BLOB:
		op->cb.blob = (mcpx_task_blob_cb)cb;
		break;
	case OP_LIST:
		op->cb.list = (mcpx_task_list_cb)cb;
		break;
	case OP_LEASE:
		op->cb.lease = (mcpx_task_lease_cb)cb;
		break;
	}
	mcpx_utf8_copy_trunc(op->owner, sizeof(op->owner), owner);
	mcpx_utf8_copy_trunc(op->id, sizeof(op->id), id);
	op->next = ts->ops;
	if (op->next)
		op->next->prev = op;
	ts->ops = op;
	return op;
}

static void op_free(struct mcpx_task_op *op)
{
	struct mcpx_task_store *ts = op->ts;

	if (op->prev)
		op->prev->next = op->next;
	else
		ts->ops = op->next;
	if (op->next)
		op->next->prev = op->prev;
	mcpx_timer_cancel(&op->later);
	if (op->sop)
		mcpx_store_cancel(op->sop);
	free(op->entries);
	free(op->recs);
	free(op);
}

/* Ends op with rc (no data): the callback for its kind, then it is freed. */
static void op_end(struct mcpx_task_op *op, int rc)
{
	op->sop = NULL;
	if (op->has_cb) {
		switch (op->kind) {
		case OP_REC:
			op->cb.rec(op->arg, rc, rc == 0 ? &op->rec : NULL);
			break;
		case OP_DONE:
			op->cb.done(op->arg, rc);
			break;
		case OP_BLOB:
			op->cb.blob(op->arg, rc, NULL, 0);
			break;
		case OP_LIST:
			op->cb.list(op->arg, rc, op->recs, rc == 0 ? op->n_recs : 0);
			break;
		case OP_LEASE:
			op->cb.lease(op->arg, rc, NULL);
			break;
		}
	}
	op_free(op);
}

static void later_cb(struct mcpx_timer *t)
{
	struct mcpx_task_op *op = t->arg;

	op_end(op, op->later_rc);
}

/* rc from starting a store operation: 0 goes on, an error is reported
 * from the loop. Returns op. */
static struct mcpx_task_op *started(struct mcpx_task_op *op, int rc)
{
	if (rc < 0) {
		op->sop = NULL;
		op->later_rc = rc;
		op->later.fn = later_cb;
		op->later.arg = op;
		mcpx_timer_start(op->ts->loop, &op->later, 0);
	}
	return op;
}

static struct mcpx_store_key key_of(const char *owner, const char *kind, const char *id)
{
	return (struct mcpx_store_key){.caller = owner, .kind = kind, .name = id};
}

/* ---- records ------------------------------------------------------------ */

/* The record in res (a store record's value) into out. */
static int parse_value(const struct mcpx_store_result *res, struct mcpx_task_rec *out)
{
	const char *why = "not JSON";
	cJSON *j = mcpx_jsonrpc_parse(res->data, res->len, &why);
	int rc = j ? mcpx_task_rec_parse(j, out, &why) : -EINVAL;

	cJSON_Delete(j);
	if (rc < 0) {
		mcpx_warn("task store: a task record does not parse (%s); ignored", why);
		return -EIO;
	}
	out->version = res->version;
	return 0;
}

static void rec_read_cb(void *arg, struct mcpx_store_result *res)
{
	struct mcpx_task_op *op = arg;
	int rc = res->rc;

	op->sop = NULL;
	if (rc == 0)
		rc = parse_value(res, &op->rec);
	op_end(op, rc);
}

static void rec_written_cb(void *arg, struct mcpx_store_result *res)
{
	struct mcpx_task_op *op = arg;

	op->sop = NULL;
	if (res->rc == 0)
		op->rec.version = res->version;
	op_end(op, res->rc);
}

static struct mcpx_task_op *write_rec(struct mcpx_task_store *ts, const struct mcpx_task_rec *r,
                                      int64_t keep_ms, uint64_t expect, mcpx_task_rec_cb cb,
                                      void *arg)
{
	struct mcpx_task_op *op = op_new(ts, OP_REC, (void *)cb, arg, r->owner, r->id);
	struct mcpx_store_key key = key_of(r->owner, MCPX_STORE_KIND_TASK, r->id);
	struct mcpx_store_record_opts o = {.expect_version = expect,
	                                   .ttl_ms = keep_ms > 0 ? (uint64_t)keep_ms : 1000};
	cJSON *j;
	char *text;
	int rc;

	if (!op)
		return NULL;
	op->rec = *r;
	j = mcpx_task_rec_json(r);
	text = j ? cJSON_PrintUnformatted(j) : NULL;
	cJSON_Delete(j);
	if (!text)
		return started(op, -ENOMEM);
	rc = mcpx_store_record_put(ts->store, &key, text, strlen(text), &o, rec_written_cb, op,
	                           &op->sop);
	free(text);
	return started(op, rc);
}

struct mcpx_task_op *mcpx_task_create(struct mcpx_task_store *ts, const struct mcpx_task_rec *r,
                                      int64_t keep_ms, mcpx_task_rec_cb cb, void *arg)
{
	return write_rec(ts, r, keep_ms, 0, cb, arg);
}

struct mcpx_task_op *mcpx_task_save(struct mcpx_task_store *ts, const struct mcpx_task_rec *r,
                                    int64_t keep_ms, mcpx_task_rec_cb cb, void *arg)
{
	/* A record never stored is written whatever is there. */
	return write_rec(ts, r, keep_ms, r->version ? r->version : MCPX_STORE_ANY_VERSION, cb, arg);
}

struct mcpx_task_op *mcpx_task_load(struct mcpx_task_store *ts, const char *owner, const char *id,
                                    mcpx_task_rec_cb cb, void *arg)
{
	struct mcpx_task_op *op = op_new(ts, OP_REC, (void *)cb, arg, owner, id);
	struct mcpx_store_key key = key_of(owner, MCPX_STORE_KIND_TASK, id);

	if (!op)
		return NULL;
	return started(op, mcpx_store_record_get(ts->store, &key, rec_read_cb, op, &op->sop));
}

/* ---- listing: the names, then each record -------------------------------- */

static void list_next(struct mcpx_task_op *op);

static void list_got_cb(void *arg, struct mcpx_store_result *res)
{
	struct mcpx_task_op *op = arg;

	op->sop = NULL;
	/* A record that expired or was dropped since the listing is gone;
	 * one that does not parse is skipped (logged). */
	if (res->rc == 0 && parse_value(res, &op->recs[op->n_recs]) == 0)
		op->n_recs++;
	else if (res->rc < 0 && res->rc != -ENOENT) {
		op_end(op, res->rc);
		return;
	}
	list_next(op);
}

static void list_next(struct mcpx_task_op *op)
{
	while (op->next_entry < op->n_entries) {
		const char *name = op->entries[op->next_entry++].name;
		struct mcpx_store_key key = key_of(op->owner, MCPX_STORE_KIND_TASK, name);
		int rc;

		if (!mcpx_task_id_valid(name))
			continue;
		rc = mcpx_store_record_get(op->ts->store, &key, list_got_cb, op, &op->sop);
		if (rc < 0)
			op_end(op, rc);
		return;
	}
	op_end(op, 0);
}

static void listed_cb(void *arg, struct mcpx_store_result *res)
{
	struct mcpx_task_op *op = arg;
	size_t n = res->n_entries;

	op->sop = NULL;
	if (res->rc < 0) {
		op_end(op, res->rc);
		return;
	}
	if (n) {
		op->entries = malloc(n * sizeof(*op->entries));
		op->recs = calloc(n, sizeof(*op->recs));
		if (!op->entries || !op->recs) {
			op_end(op, -ENOMEM);
			return;
		}
		memcpy(op->entries, res->entries, n * sizeof(*op->entries));
	}
	op->n_entries = n;
	list_next(op);
}

struct mcpx_task_op *mcpx_task_list(struct mcpx_task_store *ts, const char *owner,
                                    mcpx_task_list_cb cb, void *arg)
{
	struct mcpx_task_op *op = op_new(ts, OP_LIST, (void *)cb, arg, owner, "");
	struct mcpx_store_key key = key_of(owner, MCPX_STORE_KIND_TASK, NULL);

	if (!op)
		return NULL;
	return started(
	    op, mcpx_store_list(ts->store, &key, MCPX_STORE_LIST_RECORDS, listed_cb, op, &op->sop));
}

/* ---- dropping: the outcome, the mark, the record -------------------------- */

static void drop_step_cb(void *arg, struct mcpx_store_result *res);

static int drop_step(struct mcpx_task_op *op)
{
	struct mcpx_store_key task = key_of(op->owner, MCPX_STORE_KIND_TASK, op->id);
	struct mcpx_store_key mark = key_of(op->owner, KIND_CANCEL, op->id);
	int rc;

	switch (op->step++) {
	case 0:
		rc = mcpx_store_delete(op->ts->store, &task, NULL, drop_step_cb, op, &op->sop);
		break;
	case 1:
		rc = mcpx_store_record_delete(op->ts->store, &mark, MCPX_STORE_ANY_VERSION,
		                              drop_step_cb, op, &op->sop);
		break;
	case 2:
		/* The record last: a task listed is a task whose parts exist. */
		rc = mcpx_store_record_delete(op->ts->store, &task, MCPX_STORE_ANY_VERSION,
		                              drop_step_cb, op, &op->sop);
		break;
	default:
		op_end(op, 0);
		return 0;
	}
	return rc;
}

static void drop_step_cb(void *arg, struct mcpx_store_result *res)
{
	struct mcpx_task_op *op = arg;
	int rc;

	op->sop = NULL;
	if (res->rc < 0 && res->rc != -ENOENT) {
		op_end(op, res->rc);
		return;
	}
	rc = drop_step(op);
	if (rc < 0)
		op_end(op, rc);
}

struct mcpx_task_op *mcpx_task_drop(struct mcpx_task_store *ts, const char *owner, const char *id,
                                    mcpx_task_done_cb cb, void *arg)
{
	struct mcpx_task_op *op = op_new(ts, OP_DONE, (void *)cb, arg, owner, id);

	return op ? started(op, drop_step(op)) : NULL;
}

/* ---- outcomes ----------------------------------------------------------- */

static void done_cb(void *arg, struct mcpx_store_result *res)
{
	struct mcpx_task_op *op = arg;

	op_end(op, res->rc);
}

struct mcpx_task_op *mcpx_task_put_outcome(struct mcpx_task_store *ts,
                                           const struct mcpx_task_rec *r, const char *data,
                                           size_t len, int64_t keep_ms, const char *lease_owner,
                                           mcpx_task_done_cb cb, void *arg)
{
	struct mcpx_task_op *op = op_new(ts, OP_DONE, (void *)cb, arg, r->owner, r->id);
	struct mcpx_store_key key = key_of(r->owner, MCPX_STORE_KIND_TASK, r->id);
	struct mcpx_store_put_opts o = {.ttl_ms = keep_ms > 0 ? (uint64_t)keep_ms : 1000,
	                                .lease_owner = lease_owner};
	char *copy;

	if (!op)
		return NULL;
	copy = malloc(len ? len : 1);
	if (!copy)
		return started(op, -ENOMEM);
	memcpy(copy, data, len);
	/* The store takes copy, whatever it returns. */
	return started(op, mcpx_store_put(ts->store, &key, copy, len, &o, done_cb, op, &op->sop));
}

static void blob_cb(void *arg, struct mcpx_store_result *res)
{
	struct mcpx_task_op *op = arg;

	op->sop = NULL;
	if (res->rc < 0) {
		op_end(op, res->rc);
		return;
	}
	if (op->has_cb)
		op->cb.blob(op->arg, 0, res->data, res->len);
	op_free(op);
}

struct mcpx_task_op *mcpx_task_get_outcome(struct mcpx_task_store *ts,
                                           const struct mcpx_task_rec *r, mcpx_task_blob_cb cb,
                                           void *arg)
{
	struct mcpx_task_op *op = op_new(ts, OP_BLOB, (void *)cb, arg, r->owner, r->id);
	struct mcpx_store_key key = key_of(r->owner, MCPX_STORE_KIND_TASK, r->id);

	if (!op)
		return NULL;
	/* No refresh: a task's result keeps the ttl it got. */
	return started(op, mcpx_store_get(ts->store, &key, false, blob_cb, op, &op->sop));
}

/* ---- cancel marks ------------------------------------------------------- */

struct mcpx_task_op *mcpx_task_mark_cancel(struct mcpx_task_store *ts,
                                           const struct mcpx_task_rec *r, mcpx_task_done_cb cb,
                                           void *arg)
{
	struct mcpx_task_op *op = op_new(ts, OP_DONE, (void *)cb, arg, r->owner, r->id);
	struct mcpx_store_key key = key_of(r->owner, KIND_CANCEL, r->id);
	struct mcpx_store_record_opts o = {
	    .expect_version = MCPX_STORE_ANY_VERSION,
	    .ttl_ms = (uint64_t)mcpx_task_keep_ms(r, mcpx_task_now_ms(), 60000)};

	if (!op)
		return NULL;
	return started(op,
	               mcpx_store_record_put(ts->store, &key, "1", 1, &o, done_cb, op, &op->sop));
}

struct mcpx_task_op *mcpx_task_cancel_marked(struct mcpx_task_store *ts,
                                             const struct mcpx_task_rec *r, mcpx_task_done_cb cb,
                                             void *arg)
{
	struct mcpx_task_op *op = op_new(ts, OP_DONE, (void *)cb, arg, r->owner, r->id);
	struct mcpx_store_key key = key_of(r->owner, KIND_CANCEL, r->id);

	if (!op)
		return NULL;
	return started(op, mcpx_store_record_get(ts->store, &key, done_cb, op, &op->sop));
}

/* ---- leases ------------------------------------------------------------- */

static void leased_cb(void *arg, struct mcpx_store_result *res)
{
	struct mcpx_task_op *op = arg;
	struct mcpx_store_lease *lease = res->lease;

	op->sop = NULL;
	res->lease = NULL; /* ours now, whatever happens to op */
	if (op->has_cb)
		op->cb.lease(op->arg, res->rc, lease);
	else
		mcpx_store_lease_end(lease);
	op_free(op);
}

struct mcpx_task_op *mcpx_task_lease_take(struct mcpx_task_store *ts, const struct mcpx_task_rec *r,
                                          uint32_t ttl_ms, mcpx_task_lost_fn lost, void *lost_arg,
                                          mcpx_task_lease_cb cb, void *arg)
{
	struct mcpx_task_op *op = op_new(ts, OP_LEASE, (void *)cb, arg, r->owner, r->id);
	struct mcpx_store_key key = key_of(r->owner, MCPX_STORE_KIND_TASK, r->id);

	if (!op)
		return NULL;
	/* The store tells lost(lost_arg) itself: that outlives op. */
	return started(op, mcpx_store_lease_hold(ts->store, &key, NULL, ttl_ms, 0, lost, lost_arg,
	                                         leased_cb, op, &op->sop));
}

void mcpx_task_lease_end(struct mcpx_store_lease *lease)
{
	if (lease)
		mcpx_store_lease_end(lease);
}

const char *mcpx_task_lease_owner(const struct mcpx_store_lease *lease)
{
	return lease ? mcpx_store_lease_owner(lease) : NULL;
}

struct mcpx_task_op *mcpx_task_lease_held(struct mcpx_task_store *ts, const struct mcpx_task_rec *r,
                                          mcpx_task_done_cb cb, void *arg)
{
	struct mcpx_task_op *op = op_new(ts, OP_DONE, (void *)cb, arg, r->owner, r->id);
	struct mcpx_store_key key = key_of(r->owner, MCPX_STORE_KIND_TASK, r->id);

	if (!op)
		return NULL;
	return started(op, mcpx_store_lease_peek(ts->store, &key, done_cb, op, &op->sop));
}

/* ---- the task store ----------------------------------------------------- */

int64_t mcpx_task_keep_ms(const struct mcpx_task_rec *r, int64_t now_ms, int64_t min_ms)
{
	int64_t left = r->created_ms + r->ttl_ms - now_ms;

	return left > min_ms ? left : min_ms;
}

struct mcpx_task_store *mcpx_task_store_new(struct mcpx_loop *loop, struct mcpx_store *store)
{
	struct mcpx_task_store *ts = calloc(1, sizeof(*ts));

	if (ts) {
		ts->loop = loop;
		ts->store = store;
	}
	return ts;
}

void mcpx_task_store_free(struct mcpx_task_store *ts)
{
	if (!ts)
		return;
	while (ts->ops)
		op_free(ts->ops);
	free(ts);
}

void mcpx_task_op_cancel(struct mcpx_task_op *op)
{
	if (op)
		op_free(op);
}
