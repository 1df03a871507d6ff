/*
 * store_backend.h - what the store's front (store.c; an op's life in
 * store_backend.c) and its backends (store_dir.c, store_redis.c) say to
 * each other.
 *
 * The front validates and hashes keys, makes one struct mcpx_store_op per
 * operation, keeps its deadline and its caller's callback, and hands it to
 * the backend's submit(). The backend does the operation in the store and
 * fills op->res (and op->err), then calls mcpx_store_op_done(op) on the
 * loop, exactly once per op, possibly from inside submit() (the front then
 * defers the callback). From submit() to done() the op is the backend's to
 * read; the front never frees it in between, even when the caller's
 * deadline passed or it cancelled (the result is then dropped, and a lease
 * it acquired is released).
 *
 * A backend's free() completes every op it still holds (done() with
 * -ESHUTDOWN) before returning.
 */
#ifndef MCPX_STORE_BACKEND_H
#define MCPX_STORE_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "loop.h"
#include "store.h"

/* The caller's part of a key as it reaches the backends: 32 lower-case hex
 * digits of a SHA-256 of the caller's identity. */
#define MCPX_STORE_CALLER_HASH_LEN 32

enum mcpx_store_opcode {
	MCPX_OP_GET,
	MCPX_OP_PUT,
	MCPX_OP_DELETE,
	MCPX_OP_LIST,
	MCPX_OP_RECORD_GET,
	MCPX_OP_RECORD_PUT,
	MCPX_OP_RECORD_DELETE,
	MCPX_OP_LEASE_ACQUIRE, /* take if free, lapsed or already owner's */
	MCPX_OP_LEASE_RENEW,   /* extend if still owner's (else -ENOLCK) */
	MCPX_OP_LEASE_RELEASE, /* drop if still owner's (else -ENOLCK) */
	MCPX_OP_LEASE_PEEK,
	MCPX_OP_COUNT
};

/* A key whose parts are safe in a path and in a Redis key. */
struct mcpx_store_skey {
	char caller[MCPX_STORE_CALLER_HASH_LEN + 1];
	char kind[MCPX_STORE_KIND_MAX + 1];
	char name[MCPX_STORE_NAME_MAX + 1]; /* "" for a list */
};

struct mcpx_store_op {
	/* Set by the front, read by the backend. */
	enum mcpx_store_opcode code;
	struct mcpx_store_skey key;
	char owner[MCPX_STORE_OWNER_MAX + 1]; /* lease ops; put/delete's lease_owner or "" */
	char *data;                           /* put, record_put: the value (the op's) */
	size_t len;
	bool refresh;                   /* get */
	uint64_t ttl_ms;                /* put, record_put, lease acquire/renew */
	unsigned max_count;             /* put, record_put */
	uint64_t max_total_bytes;       /* put */
	uint64_t expect_version;        /* record_put, record_delete */
	enum mcpx_store_list_what what; /* list */
	size_t max_blob_bytes;          /* the store's cap, for reads too */
	uint32_t timeout_ms;            /* the op's deadline, for waits inside it */

	/* Filled by the backend. res.error is set by the front from err. */
	struct mcpx_store_result res;
	struct mcpx_err err;

	/* The front's. */
	struct mcpx_store *s;
	mcpx_store_cb cb;
	void *arg;
	struct mcpx_timer timer; /* the deadline, then the deferred callback */
	uint64_t started_us;
	bool in_submit; /* done() inside submit(): defer the callback */
	bool backend_done;
	bool delivered; /* the caller was told (or cancelled) */
	bool dropped;   /* ... without this op's result (deadline, cancel) */
	/* The front's own ops: called instead of cb, with the result. */
	void (*internal)(struct mcpx_store_op *op, struct mcpx_store_result *res);
	void *internal_arg;
	struct mcpx_store_op *prev, *next; /* the store's live ops */
	void *backend_private;
};

struct mcpx_store_backend;

struct mcpx_store_backend_ops {
	const char *type; /* "dir", "redis" */
	void (*submit)(struct mcpx_store_backend *b, struct mcpx_store_op *op);
	void (*free)(struct mcpx_store_backend *b);
};

struct mcpx_store_backend {
	const struct mcpx_store_backend_ops *ops;
	struct mcpx_loop *loop;
};

/* The backend finished op (res.rc and what it filled). On the loop. */
void mcpx_store_op_done(struct mcpx_store_op *op);

/* Sets op's result to rc with a message; returns rc. */
int mcpx_store_op_fail(struct mcpx_store_op *op, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Wall-clock milliseconds since the epoch. */
int64_t mcpx_store_now_ms(void);

int mcpx_store_dir_open(struct mcpx_loop *loop, const struct mcpx_store_config *cfg,
                        struct mcpx_store_backend **out, struct mcpx_err *err);
int mcpx_store_redis_open(struct mcpx_loop *loop, const struct mcpx_store_config *cfg,
                          struct mcpx_store_backend **out, struct mcpx_err *err);

#endif
