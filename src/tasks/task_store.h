/*
 * task_store.h - where tasks live: their records, outcomes, cancel marks
 * and leases, in the server's shared store (store.h).
 *
 * Everything about a task is kept under its owner, the caller that created
 * it (the store's key is caller, kind, name): a lookup names the owner and
 * the id, so another caller's task is simply not found, the same answer as
 * for an id that never existed, and listing is per owner. Per task:
 *   - the record (task_record.h): a store record of kind "task" named by the
 *     id, written with compare-and-set on its version, so that a final
 *     status is never overwritten by a writer that read an older one;
 *   - its outcome once done: the call's result or JSON-RPC error as the
 *     core sent it, a blob of kind "task" named by the id;
 *   - a cancel mark: a record of kind "taskcancel", written by a replica that
 *     received tasks/cancel for a task another replica runs;
 *   - a lease of kind "task" on the id, held by the replica running the task
 *     and renewed by the store: a record that says "working" while nobody
 *     holds the lease belongs to a replica that died.
 *
 * Every operation is asynchronous: its callback comes from the event loop,
 * never from inside the call that started it. A call returns NULL when it
 * could not start (out of memory): then no callback comes. A pending
 * operation is abandoned with mcpx_task_op_cancel (its callback never
 * comes; what it does in the store may still happen); with a NULL callback
 * an operation is fire and forget, and its handle must not be touched. rc
 * in a callback is 0, -ENOENT (no such task for that owner, no mark, no
 * lease), -EEXIST (create: the id is taken), -ESTALE (save: the record
 * changed since it was read), -ENOLCK (an outcome put by a runner whose
 * lease lapsed), or another negative errno when the store failed.
 */
#ifndef MCPX_TASK_STORE_H
#define MCPX_TASK_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "task_record.h"

struct mcpx_task_store;
struct mcpx_task_op;
struct mcpx_loop;
struct mcpx_store;
struct mcpx_store_lease;

typedef void (*mcpx_task_done_cb)(void *arg, int rc);
/* rec: the record read (its version set), valid during the callback. */
typedef void (*mcpx_task_rec_cb)(void *arg, int rc, const struct mcpx_task_rec *rec);
/* data: the outcome's bytes, valid during the callback. */
typedef void (*mcpx_task_blob_cb)(void *arg, int rc, const char *data, size_t len);
/* recs: every record of the owner that parsed, in no order. */
typedef void (*mcpx_task_list_cb)(void *arg, int rc, const struct mcpx_task_rec *recs, size_t n);
/* lease: held from now on, the caller's (end it with mcpx_task_lease_end). */
typedef void (*mcpx_task_lease_cb)(void *arg, int rc, struct mcpx_store_lease *lease);
/* A held lease was lost (it lapsed or another replica took it): the
 * store's mcpx_store_lost_fn. */
typedef void (*mcpx_task_lost_fn)(void *arg, struct mcpx_store_lease *l, int reason);

/* Tasks in store (not owned; outlives the task store). NULL when out of
 * memory. */
struct mcpx_task_store *mcpx_task_store_new(struct mcpx_loop *loop, struct mcpx_store *store);
/* Pending operations are abandoned. */
void mcpx_task_store_free(struct mcpx_task_store *ts);

/* How long the store keeps a task's data from now: what is left of its
 * ttl, but at least min_ms (a running task outlives a short ttl). */
int64_t mcpx_task_keep_ms(const struct mcpx_task_rec *r, int64_t now_ms, int64_t min_ms);

/* Writes a new record (-EEXIST when its id exists); cb's rec is the record
 * as written, with its version. */
struct mcpx_task_op *mcpx_task_create(struct mcpx_task_store *ts, const struct mcpx_task_rec *r,
                                      int64_t keep_ms, mcpx_task_rec_cb cb, void *arg);
/* Replaces a record whose version is still r->version (-ESTALE
 * otherwise); cb's rec is the record as written. */
struct mcpx_task_op *mcpx_task_save(struct mcpx_task_store *ts, const struct mcpx_task_rec *r,
                                    int64_t keep_ms, mcpx_task_rec_cb cb, void *arg);
/* Reads owner's task id (id is checked with mcpx_task_id_valid first). */
struct mcpx_task_op *mcpx_task_load(struct mcpx_task_store *ts, const char *owner, const char *id,
                                    mcpx_task_rec_cb cb, void *arg);
/* Every record of owner (records that do not parse are skipped, logged). */
struct mcpx_task_op *mcpx_task_list(struct mcpx_task_store *ts, const char *owner,
                                    mcpx_task_list_cb cb, void *arg);
/* Drops a task: its record, outcome and cancel mark. */
struct mcpx_task_op *mcpx_task_drop(struct mcpx_task_store *ts, const char *owner, const char *id,
                                    mcpx_task_done_cb cb, void *arg);

/* The outcome of r ({"result": ...} or {"error": ...}; copied), written
 * only while lease_owner holds the task's lease (NULL: unconditionally). */
struct mcpx_task_op *mcpx_task_put_outcome(struct mcpx_task_store *ts,
                                           const struct mcpx_task_rec *r, const char *data,
                                           size_t len, int64_t keep_ms, const char *lease_owner,
                                           mcpx_task_done_cb cb, void *arg);
struct mcpx_task_op *mcpx_task_get_outcome(struct mcpx_task_store *ts,
                                           const struct mcpx_task_rec *r, mcpx_task_blob_cb cb,
                                           void *arg);

/* The cancel mark: set, and read (0 when set, -ENOENT when not). */
struct mcpx_task_op *mcpx_task_mark_cancel(struct mcpx_task_store *ts,
                                           const struct mcpx_task_rec *r, mcpx_task_done_cb cb,
                                           void *arg);
struct mcpx_task_op *mcpx_task_cancel_marked(struct mcpx_task_store *ts,
                                             const struct mcpx_task_rec *r, mcpx_task_done_cb cb,
                                             void *arg);

/* Takes the lease of r's task (renewed by the store every ttl_ms/3 until
 * ended); lost(lost_arg) comes if it is lost. -EBUSY when another holds
 * it. */
struct mcpx_task_op *mcpx_task_lease_take(struct mcpx_task_store *ts, const struct mcpx_task_rec *r,
                                          uint32_t ttl_ms, mcpx_task_lost_fn lost, void *lost_arg,
                                          mcpx_task_lease_cb cb, void *arg);
/* Gives a lease back (NULL is fine). */
void mcpx_task_lease_end(struct mcpx_store_lease *lease);
/* The lease owner string, for mcpx_task_put_outcome. */
const char *mcpx_task_lease_owner(const struct mcpx_store_lease *lease);
/* Whether somebody holds r's lease: 0 when held, -ENOENT when nobody
 * does (its runner is gone). */
struct mcpx_task_op *mcpx_task_lease_held(struct mcpx_task_store *ts, const struct mcpx_task_rec *r,
                                          mcpx_task_done_cb cb, void *arg);

/* Abandons a pending operation: its callback will not come. op may be NULL. */
void mcpx_task_op_cancel(struct mcpx_task_op *op);

#endif
