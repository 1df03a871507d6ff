/*
 * store_internal.h - the store's own state, shared by its front (store.c),
 * its ops' life (store_backend.c) and its leases (store_lease.c); no
 * backend sees it.
 */
#ifndef MCPX_STORE_INTERNAL_H
#define MCPX_STORE_INTERNAL_H

#include "store_backend.h"

struct mcpx_store_hold;

struct mcpx_store {
	struct mcpx_loop *loop;
	struct mcpx_store_backend *backend;
	struct mcpx_store_config cfg;
	char instance_id[96];
	uint64_t owner_seq;
	struct mcpx_store_op *ops;       /* live ops, the front's own included */
	struct mcpx_store_lease *leases; /* held */
	struct mcpx_store_hold *holds;   /* waiting for a lease */
	bool freeing;
	/* The leases' (store_lease.c), set by mcpx_store_open: the ops
	 * (store_backend.c) sit below the leases, which make ops of their own, so
	 * an op freed with a lease in its result, or an acquire that got a
	 * lease its caller no longer wants, reaches them through these. */
	void (*lease_end)(struct mcpx_store_lease *l);
	void (*lease_release_bg)(struct mcpx_store *s, const struct mcpx_store_skey *key,
	                         const char *owner);
};

/* A pseudo-opcode: a lease hold is an op the caller can cancel, never
 * submitted to a backend (store_lease.c drives it). */
#define MCPX_OP_HOLD MCPX_OP_COUNT

/* store_backend.c */

/* A new op of code on s, linked into s's live ops; NULL when out of
 * memory. */
struct mcpx_store_op *mcpx_store_op_new(struct mcpx_store *s, enum mcpx_store_opcode code);
/* Frees op once the backend is done with it and the caller was told. */
void mcpx_store_op_maybe_free(struct mcpx_store_op *op);
/* Drops op (not a hold): its caller is never told, its result is dropped
 * when the backend finishes it. */
void mcpx_store_op_cancel(struct mcpx_store_op *op);
/* Tells the caller of every op still live and frees it (the store is being
 * freed and its backend is gone: an op it did not finish fails with
 * -ESHUTDOWN). */
void mcpx_store_ops_shutdown(struct mcpx_store *s);

/* An op of the front's own (lease renewals, releases, attempts): fn(op,
 * res) is called instead of a caller's callback (res is the op's result,
 * or the deadline's); the op is freed after fn returns. NULL when out of
 * memory. */
struct mcpx_store_op *mcpx_store_op_internal(
    struct mcpx_store *s, enum mcpx_store_opcode code, const struct mcpx_store_skey *key,
    void (*fn)(struct mcpx_store_op *op, struct mcpx_store_result *res), void *arg);
/* Submits op (made by mcpx_store_op_internal or the front) with its
 * deadline. */
void mcpx_store_op_start(struct mcpx_store_op *op);

/* Hands res (the hold's outcome) to the hold op's caller and frees the op. */
void mcpx_store_hold_deliver(struct mcpx_store_op *op, struct mcpx_store_result *res);

/* store_lease.c */
int mcpx_store_hold_start(struct mcpx_store *s, struct mcpx_store_op *op, const char *owner,
                          uint32_t ttl_ms, uint32_t wait_ms, mcpx_store_lost_fn lost,
                          void *lost_arg);
void mcpx_store_hold_cancel(struct mcpx_store_op *op);
/* A lease on key was released in this store: wake its local waiters. */
void mcpx_store_holds_wake(struct mcpx_store *s, const struct mcpx_store_skey *key);
/* Ends every hold and lease (the store is being freed). */
void mcpx_store_leases_shutdown(struct mcpx_store *s);
/* Releases owner's lease on key in the background (nobody is told). */
void mcpx_store_lease_release_bg(struct mcpx_store *s, const struct mcpx_store_skey *key,
                                 const char *owner);

#endif
