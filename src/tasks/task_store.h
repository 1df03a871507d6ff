/*
 * task_store.h - where tasks live: their records, outcomes, cancel marks
 * and leases, in the server's shared store (store.h).
 *
 * Everything about a task is kept under its owner, the caller that created
 * it: a lookup names the owner and the id, so another caller's id is simply
 * not found (the same answer as for an id that never existed), and listing
 * is per owner. Per task the store holds:
 *   - the record (task_record.h), a small JSON document, kept until the
 *     task's ttl ends;
 *   - its outcome once done: the call's result or JSON-RPC error as the
 *     core sent it, a blob with the same ttl;
 *   - a cancel mark, written by a replica that received tasks/cancel for a
 *     task another replica runs; the runner polls for it;
 *   - a lease, held and renewed by the replica running the task: a record
 *     that says "working" under a lapsed lease belongs to a replica that
 *     died, and any replica may then end it as failed.
 *
 * Every operation is asynchronous: its callback comes from the event loop,
 * never from inside the call that started it. A pending operation is
 * abandoned with mcpx_task_op_cancel (its callback never comes), which is
 * what an object that goes away before its answer must do. rc in a
 * callback is 0, -ENOENT (no such task for that owner, or no mark), -EEXIST
 * (create: the id is taken), -EBUSY (lease: another replica holds it),
 * -EFBIG (too large for the store), or another negative errno when the
 * store failed.
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

typedef void (*mcpx_task_done_cb)(void *arg, int rc);
typedef void (*mcpx_task_rec_cb)(void *arg, int rc, const struct mcpx_task_rec *rec);
typedef void (*mcpx_task_blob_cb)(void *arg, int rc, const char *data, size_t len);
typedef void (*mcpx_task_list_cb)(void *arg, int rc, const struct mcpx_task_rec *recs, size_t n);

/* Tasks in store (not owned; outlives the task store). NULL when out of
 * memory. */
struct mcpx_task_store *mcpx_task_store_new(struct mcpx_loop *loop, struct mcpx_store *store);
/* Pending operations are abandoned. */
void mcpx_task_store_free(struct mcpx_task_store *ts);

/* How long the store keeps a task's data from now: what is left of its
 * ttl, but at least min_ms (a running task outlives a short ttl). */
int64_t mcpx_task_keep_ms(const struct mcpx_task_rec *r, int64_t now_ms, int64_t min_ms);

/* Writes a new record; -EEXIST when its id exists. keep_ms: see
 * mcpx_task_keep_ms. */
struct mcpx_task_op *mcpx_task_create(struct mcpx_task_store *ts, const struct mcpx_task_rec *r,
                                      int64_t keep_ms, mcpx_task_done_cb cb, void *arg);
/* Replaces a record. */
struct mcpx_task_op *mcpx_task_save(struct mcpx_task_store *ts, const struct mcpx_task_rec *r,
                                    int64_t keep_ms, mcpx_task_done_cb cb, void *arg);
/* Reads owner's task id (id is checked with mcpx_task_id_valid first). */
struct mcpx_task_op *mcpx_task_load(struct mcpx_task_store *ts, const char *owner, const char *id,
                                    mcpx_task_rec_cb cb, void *arg);
/* Every record of owner, in no particular order (records that do not
 * parse are skipped and logged). */
struct mcpx_task_op *mcpx_task_list(struct mcpx_task_store *ts, const char *owner,
                                    mcpx_task_list_cb cb, void *arg);
/* Drops a task: record, outcome, cancel mark and lease. */
struct mcpx_task_op *mcpx_task_drop(struct mcpx_task_store *ts, const char *owner, const char *id,
                                    mcpx_task_done_cb cb, void *arg);

/* The outcome of r (data: a JSON object {"result": ...} or {"error": ...}). */
struct mcpx_task_op *mcpx_task_put_outcome(struct mcpx_task_store *ts,
                                           const struct mcpx_task_rec *r, const char *data,
                                           size_t len, int64_t keep_ms, mcpx_task_done_cb cb,
                                           void *arg);
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

/* Takes or renews the lease of r for holder for ttl_ms (0, or -EBUSY when
 * another holder has it), and gives it back. */
struct mcpx_task_op *mcpx_task_lease(struct mcpx_task_store *ts, const struct mcpx_task_rec *r,
                                     const char *holder, int64_t ttl_ms, mcpx_task_done_cb cb,
                                     void *arg);
struct mcpx_task_op *mcpx_task_unlease(struct mcpx_task_store *ts, const struct mcpx_task_rec *r,
                                       const char *holder, mcpx_task_done_cb cb, void *arg);

/* Abandons a pending operation: its callback will not come. op may be NULL. */
void mcpx_task_op_cancel(struct mcpx_task_op *op);

#endif
