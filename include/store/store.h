/*
 * store.h - the shared store of workspaces and tasks: blobs, small records
 * with compare-and-set, and leases, kept where every replica reaches them.
 *
 * Two backends behind one interface: a directory (the embedded default; on
 * a ReadWriteMany volume it serves many replicas) and Redis/Valkey (hiredis
 * on the server's event loop). Everything is namespaced by a key of three
 * parts: the caller (an opaque identity string, hashed before it reaches a
 * path or a Redis key, so its bytes never matter), a kind ("workspace",
 * "task", ...) and a name. One caller's objects are unreachable through
 * another caller's keys; there is no operation that spans callers.
 *
 * Three families of objects live under a key, each its own namespace (a
 * blob, a record and a lease may share one key without touching each
 * other):
 *   - blobs: up to the store's hard cap (max_blob_bytes), written all or
 *     nothing (a server killed mid-put leaves the old or the new blob,
 *     never a mix), with an idle TTL that a get may refresh, listed by
 *     caller and kind, bounded per put by a count and a byte cap;
 *   - records: small values (MCPX_STORE_RECORD_MAX) with a version that
 *     every write increments, written with compare-and-set; their TTL runs
 *     from the last write (reads do not refresh it);
 *   - leases: a named owner holds a key for a TTL; held leases are renewed
 *     by the store (mcpx_store_lease_hold) until the holder ends them, so a
 *     replica that dies stops renewing and its lease lapses within the TTL.
 *
 * Asynchrony: every operation returns at once and reports through its
 * callback on the event loop, later (never from inside the call that
 * started it). The directory store does its file I/O on worker threads
 * (offload.h), so a 64 MiB blob never blocks the loop; the Redis store
 * speaks hiredis's async API on the loop. Operations on different keys may
 * complete in any order; issue the next one from the callback when order
 * matters. Every operation has a deadline (the store's op_timeout_ms): a
 * store that is down or stuck fails it with -ETIMEDOUT or -ENOTCONN, never
 * hangs it.
 *
 * Waiting for a lease: a holder elsewhere is polled (every 25 ms at first,
 * backing off to 250 ms, never later than the holder's lease ends); a holder
 * in the same store instance (the same replica) wakes its local waiters as
 * soon as it releases. There is no cross-replica notification. Waiters are
 * not served in order.
 *
 * Time: TTLs are in milliseconds. Timestamps are wall-clock milliseconds
 * since the epoch, because they are shared between replicas and outlive
 * processes; replicas sharing a store need clocks in step (NTP), within a
 * small fraction of the shortest lease TTL.
 *
 * Errors (rc in the result, or returned at once), with a human message in
 * the result's error that never names the store's address or password:
 *   -EINVAL     a key part or an argument is not valid (returned at once)
 *   -EFBIG      a blob over the store's hard cap, a record over its cap
 *   -ENOENT     no such (unexpired) blob or record; no live lease (lease_peek)
 *   -EEXIST     record_put with expect_version 0 found a record
 *   -ESTALE     record_put/record_delete found another version (result's
 *               version holds the current one)
 *   -EDQUOT     a put or record_put of a new name passed the count or byte cap
 *   -EBUSY      the lease is held by another owner (result: holder, ms left)
 *   -ENOLCK     the lease named (put's lease_owner, renew, release) is not
 *               held by that owner any more: it lapsed or was taken
 *   -ETIMEDOUT  the store did not answer within op_timeout_ms, or a lease
 *               wait ran out
 *   -ENOTCONN   the store is unreachable (Redis down; it reconnects by itself)
 *   -EAGAIN     get: the blob was replaced by puts again and again while it
 *               was read (Redis, which reads a large blob in pieces)
 *   -EIO        the store failed (an I/O error, a corrupt file, a Redis error)
 *   -ESHUTDOWN  the store is being freed
 *   -ENOMEM     out of memory
 *
 * Ownership (who frees what):
 *   - struct mcpx_store is the opener's; mcpx_store_free ends it, first
 *     completing every operation still running with -ESHUTDOWN.
 *   - The key's strings are read during the call only (copied).
 *   - mcpx_store_put takes its data: from the call on, whatever the call
 *     returns, the store frees it (with free()). It must be malloc'd and not
 *     touched afterwards. mcpx_store_record_put copies its (small) value.
 *   - The result handed to a callback, and everything it points to, is the
 *     store's and is freed when the callback returns, except what the
 *     callback takes: res->data (set res->data = NULL and free() it later)
 *     and res->lease (see mcpx_store_lease_hold).
 *   - A struct mcpx_store_op handed out by a call is valid until its
 *     callback has been called or it was cancelled, whichever comes first.
 *
 * What it does not do: decide who a caller is (the auth layer), choose
 * workspace names or serialise workspaces (the workspace module), or parse
 * the configuration strings (store_spec.h, in base).
 */
#ifndef MCPX_STORE_H
#define MCPX_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "store_spec.h"

struct mcpx_loop;
struct mcpx_store;
struct mcpx_store_op;
struct mcpx_store_lease;

/* A name: [A-Za-z0-9][A-Za-z0-9_.-]{0,127} (so never "", "." or ".."). */
#define MCPX_STORE_NAME_MAX 128
/* A kind: [a-z][a-z0-9_]{0,15}. */
#define MCPX_STORE_KIND_MAX 16
/* A lease owner: [A-Za-z0-9_.:@-]{1,127}. */
#define MCPX_STORE_OWNER_MAX 127
/* The largest record value. */
#define MCPX_STORE_RECORD_MAX (1024 * 1024)
/* record_put: write whatever version is there (or none). */
#define MCPX_STORE_ANY_VERSION UINT64_MAX

#define MCPX_STORE_KIND_WORKSPACE "workspace"
#define MCPX_STORE_KIND_TASK "task"

/* What names an object. caller: any NUL-terminated string (the caller's
 * identity, caller.h; "" is refused), hashed by the store; kind and name as
 * above. For a list, name is NULL. Read during the call only. */
struct mcpx_store_key {
	const char *caller;
	const char *kind;
	const char *name;
};

/* One listed blob or record. */
struct mcpx_store_entry {
	char name[MCPX_STORE_NAME_MAX + 1];
	uint64_t bytes;       /* the blob's or record value's length */
	int64_t last_used_ms; /* blob: last put or refreshing get; record: last write */
	int64_t expires_ms;   /* when it expires unless used (blob) or written (record) */
	uint64_t version;     /* records only; 0 for blobs */
};

/* What an operation produced. rc first; the other fields as each operation
 * says. Valid during the callback only (see Ownership at the top). */
struct mcpx_store_result {
	int rc;            /* 0 or a negative errno (the list at the top) */
	const char *error; /* when rc < 0: what went wrong, for a person; else NULL */
	/* get, record_get: the value (malloc'd, NUL-terminated beyond len for
	 * convenience; the bytes are data, never a C string). Take it by
	 * setting data to NULL; free() it then. */
	char *data;
	size_t len;
	/* record_get, record_put: the record's version now; -ESTALE: the
	 * version found. get: 0. */
	uint64_t version;
	/* get: when the blob was last written or refreshed, and when it
	 * expires now (after this get's refresh). */
	int64_t last_used_ms;
	int64_t expires_ms;
	/* list: the entries, sorted by name. */
	struct mcpx_store_entry *entries;
	size_t n_entries;
	/* lease_peek (0), lease_hold (-EBUSY, -ETIMEDOUT): who holds the
	 * lease and for how many more milliseconds. "" when unknown. */
	char holder[MCPX_STORE_OWNER_MAX + 1];
	int64_t holder_ms_left;
	/* lease_hold (0): the held lease, the caller's from now on until it
	 * calls mcpx_store_lease_end. Take it (set to NULL) or it is ended
	 * and released when the callback returns. */
	struct mcpx_store_lease *lease;
};

typedef void (*mcpx_store_cb)(void *arg, struct mcpx_store_result *res);

/* Opening. */
struct mcpx_store_config {
	struct mcpx_store_spec spec; /* which store (store_spec.h); OFF is refused */
	/* The hard cap on one blob (MCP_EXEC_WORKSPACE_MAX_MB); a larger put
	 * fails with -EFBIG before anything is written. */
	size_t max_blob_bytes;
	/* The deadline of each operation (0: 30000). A lease wait has its own
	 * (wait_ms); each of its attempts has this one. */
	uint32_t op_timeout_ms;
	/* Directory store: how often expired objects are swept away (0:
	 * 60000). Reads check expiry themselves, so this bounds only how long
	 * an expired object's bytes stay on disk. */
	uint32_t sweep_interval_ms;
	/* Redis store: how long a connection attempt may take (0: 2000). */
	uint32_t connect_timeout_ms;
	/* Redis store: the most bytes of a blob one command or one reply
	 * carries (0: 1 MiB; 1 KiB to 64 MiB): an upload's chunk, a read's
	 * piece. The loop copies and parses about that much per turn. */
	uint32_t redis_piece_bytes;
};

/* Opens the store on loop. The directory store makes its root (0700) if
 * missing and refuses one that is not a directory it owns; the Redis store
 * reads its password file and connects in the background (a store that is
 * down at start-up is not an error: operations fail until it is up).
 * Returns 0, or a negative errno with err set (no address or password in
 * it). */
int mcpx_store_open(struct mcpx_loop *loop, const struct mcpx_store_config *cfg,
                    struct mcpx_store **out, struct mcpx_err *err);

/* Completes every running operation with -ESHUTDOWN (callbacks run inside
 * this call), then frees the store. Leases still held are abandoned: they
 * stop being renewed and lapse in the store after their TTL, and their
 * handles are freed here; a caller that wants them released (a drain)
 * calls mcpx_store_lease_end on each first. NULL is fine. */
void mcpx_store_free(struct mcpx_store *s);

/* "dir" or "redis": the metrics label and what logs may name. */
const char *mcpx_store_type(const struct mcpx_store *s);

/* This store instance's owner prefix, unique per process start
 * ("<host>:<pid>:<random>"), for lease owners a caller builds itself. */
const char *mcpx_store_instance_id(const struct mcpx_store *s);

/* Blobs. */

/* Reads a blob. With refresh, its idle TTL starts again (a workspace is
 * "used"); without, it is left as it is (a task result keeps its TTL from
 * creation). res: data, len, last_used_ms, expires_ms. -ENOENT when absent
 * or expired. */
int mcpx_store_get(struct mcpx_store *s, const struct mcpx_store_key *key, bool refresh,
                   mcpx_store_cb cb, void *arg, struct mcpx_store_op **op);

struct mcpx_store_put_opts {
	uint64_t ttl_ms;          /* idle expiry; 0 is refused (-EINVAL) */
	unsigned max_count;       /* a new name is refused (-EDQUOT) when the caller
	                             already has this many blobs of this kind; 0: no cap */
	uint64_t max_total_bytes; /* refused (-EDQUOT) when the caller's blobs of this
	                             kind, this one included (replacing its old
	                             version), would pass this; 0: no cap */
	const char *lease_owner;  /* when set: commit only while this owner holds the
	                             lease on the same key (-ENOLCK otherwise): a holder
	                             whose lease lapsed cannot overwrite its successor */
};

/* Writes a blob all or nothing, replacing any blob of that name. Takes
 * data (see Ownership): the store frees it whatever this returns. len over
 * max_blob_bytes: -EFBIG at once. */
int mcpx_store_put(struct mcpx_store *s, const struct mcpx_store_key *key, char *data, size_t len,
                   const struct mcpx_store_put_opts *opts, mcpx_store_cb cb, void *arg,
                   struct mcpx_store_op **op);

/* Removes a blob. lease_owner as for put (NULL: unconditional). -ENOENT
 * when there was none. */
int mcpx_store_delete(struct mcpx_store *s, const struct mcpx_store_key *key,
                      const char *lease_owner, mcpx_store_cb cb, void *arg,
                      struct mcpx_store_op **op);

enum mcpx_store_list_what { MCPX_STORE_LIST_BLOBS, MCPX_STORE_LIST_RECORDS };

/* Lists the caller's unexpired blobs or records of key->kind (key->name
 * must be NULL). res: entries, n_entries (at most MCPX_STORE_LIST_MAX; more
 * is -E2BIG). */
#define MCPX_STORE_LIST_MAX 4096
int mcpx_store_list(struct mcpx_store *s, const struct mcpx_store_key *key,
                    enum mcpx_store_list_what what, mcpx_store_cb cb, void *arg,
                    struct mcpx_store_op **op);

/* Records. */

/* Reads a record. res: data, len, version. -ENOENT when absent or expired. */
int mcpx_store_record_get(struct mcpx_store *s, const struct mcpx_store_key *key, mcpx_store_cb cb,
                          void *arg, struct mcpx_store_op **op);

struct mcpx_store_record_opts {
	/* 0: create only (-EEXIST when one exists); MCPX_STORE_ANY_VERSION:
	 * unconditional; else the version it must have (-ESTALE, -ENOENT). */
	uint64_t expect_version;
	uint64_t ttl_ms;    /* from this write; 0 is refused (-EINVAL) */
	unsigned max_count; /* a new name is refused (-EDQUOT) at this many records of
	                       the caller and kind; 0: no cap */
};

/* Writes a record (value copied; at most MCPX_STORE_RECORD_MAX bytes, else
 * -EFBIG at once) if its version is as expected. res: version (the new one,
 * or on -ESTALE the one found). */
int mcpx_store_record_put(struct mcpx_store *s, const struct mcpx_store_key *key, const void *value,
                          size_t len, const struct mcpx_store_record_opts *opts, mcpx_store_cb cb,
                          void *arg, struct mcpx_store_op **op);

/* Removes a record whose version is expect_version (MCPX_STORE_ANY_VERSION:
 * any). -ENOENT when absent, -ESTALE (version set) when another. */
int mcpx_store_record_delete(struct mcpx_store *s, const struct mcpx_store_key *key,
                             uint64_t expect_version, mcpx_store_cb cb, void *arg,
                             struct mcpx_store_op **op);

/* Leases. */

/* Called on the loop when a held lease is lost: a renewal found it lapsed
 * or taken (-ENOLCK), or renewals failed (store down) until its TTL ran
 * out (-ETIMEDOUT). The lease stays the caller's: it still calls
 * mcpx_store_lease_end. A holder told this must stop acting on the key
 * (whatever it commits with lease_owner set is refused anyway). */
typedef void (*mcpx_store_lost_fn)(void *arg, struct mcpx_store_lease *l, int reason);

/* Takes the lease on key for owner (NULL: "<instance id>:<n>", unique),
 * waiting up to wait_ms (0: one try) while another owner holds it, and
 * keeps it: the store renews it every ttl_ms/3 until mcpx_store_lease_end.
 * A lease whose holder died lapses ttl_ms after its last renewal, then a
 * waiter gets it. ttl_ms at least 1000. res: lease on 0; holder and
 * holder_ms_left on -EBUSY (wait_ms 0) or -ETIMEDOUT (the wait ran out).
 * lost(arg, ...) as above (NULL: not told). A cancelled hold that got the
 * lease anyway releases it. */
int mcpx_store_lease_hold(struct mcpx_store *s, const struct mcpx_store_key *key, const char *owner,
                          uint32_t ttl_ms, uint32_t wait_ms, mcpx_store_lost_fn lost,
                          void *lost_arg, mcpx_store_cb cb, void *arg, struct mcpx_store_op **op);

/* The owner string of a held lease (for put's lease_owner); valid until
 * mcpx_store_lease_end. */
const char *mcpx_store_lease_owner(const struct mcpx_store_lease *l);

/* Stops renewing, releases the lease in the store (in the background; the
 * store keeps what it needs) and frees l. Waiters in this store instance
 * are woken at once. */
void mcpx_store_lease_end(struct mcpx_store_lease *l);

/* Who holds the lease on key now. res: holder, holder_ms_left on 0; -ENOENT
 * when nobody does (never taken, released, or lapsed: a task whose record
 * says "working" and whose lease is gone lost its replica). */
int mcpx_store_lease_peek(struct mcpx_store *s, const struct mcpx_store_key *key, mcpx_store_cb cb,
                          void *arg, struct mcpx_store_op **op);

/* Cancelling. */

/* The operation's callback will not be called. What the operation does in
 * the store may still happen (a put may still commit); a lease a
 * cancelled hold gets is released. op is invalid afterwards. */
void mcpx_store_cancel(struct mcpx_store_op *op);

#endif
