/*
 * redis_ops.h - the Redis store's operations: which commands each sends and
 * how it reads their replies (redis_ops.c, redis_get.c and redis_records.c,
 * with the Lua scripts of redis_scripts.c); store_redis.c sends them and
 * counts the replies.
 *
 * Keys, all of one caller and kind under one hash tag:
 *   mcpx:v1:{<kind>:<caller hash>}:b:<name>   a blob: its bytes, then a
 *                                             40-byte trailer with its TTL
 *                                             and its version
 *   mcpx:v1:{...}:bi                          the set of its blob names
 *   mcpx:v1:{...}:t:<name>:<hex>              a blob being uploaded
 *   mcpx:v1:{...}:r:<name>                    a record: hash v, d, t
 *   mcpx:v1:{...}:ri                          the set of its record names
 *   mcpx:v1:{...}:l:<name>                    a lease: its owner
 * Expiry is Redis's own (PEXPIRE); the name sets are pruned as they are
 * read.
 *
 * No command or reply carries more than one piece of a blob (1 MiB unless
 * the store's config says otherwise), so no loop turn copies or parses more
 * than about that much (hiredis 0.14 parses and copies a reply in one
 * piece once it is whole: a 64 MiB GET held the loop for 0.4 s). A blob
 * over one piece is uploaded to a temporary key in SETRANGEs (at most
 * MCPX_REDIS_WINDOW in flight, the key sized once) and, once every chunk
 * is acknowledged, renamed into place by a script that checks its length,
 * the lease and the caps first: the rename is the commit, so a server
 * killed mid-upload leaves only a temporary key, which expires. It is read
 * in pieces too (redis_get.c), each checked against the version the first
 * one had, so a put renaming a new blob over the key mid-read makes the
 * read start again, never mix the two.
 */
#ifndef MCPX_REDIS_OPS_H
#define MCPX_REDIS_OPS_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

#include "redis_scripts.h"
#include "store_backend.h"

/* Pieces of one op in flight at once. */
#define MCPX_REDIS_WINDOW 4

struct mcpx_redis_backend;

/* One store op on Redis: its progress. */
struct mcpx_redis_rop {
	struct mcpx_store_op *op;
	struct mcpx_redis_backend *b;
	size_t piece;  /* the most bytes of a blob one command or reply carries */
	int sent, got; /* commands sent, replies received */
	bool failed;   /* a reply failed the op: send nothing more */
	bool done_sending;
	size_t off;                               /* put: bytes of op->data sent; get: asked for */
	char tmp[MCPX_STORE_NAME_MAX + 96];       /* put: the upload key; get: the blob's */
	char version[MCPX_REDIS_VERSION_LEN + 1]; /* put: the new blob's version */
	/* get (redis_get.c) */
	size_t total, filled;             /* the blob's length, bytes of it copied */
	char trailer[MCPX_REDIS_TRAILER]; /* the version being read */
	int64_t ms_left;                  /* the head's PTTL */
	int reads;                        /* heads sent: the first read and its restarts */
	int pieces;                       /* pieces asked for and not back */
	bool head_due;                    /* the next EXEC is a head's */
	bool restarting;                  /* waiting for stale pieces before a new head */
	uint64_t last_us;                 /* the last send or reply, for the watchdog */
	struct mcpx_redis_rop *prev, *next;
};

/* Frees a blob's buffer of len bytes: one of more than a piece on the
 * backend's worker thread (store_redis.c), since unmapping 64 MiB takes
 * the loop ~8 ms; a smaller one at once. */
void mcpx_redis_free_blob(struct mcpx_redis_rop *r, void *p, size_t len);

/* Drops r's connection from the next loop turn (store_redis.c): every op
 * in flight on it fails, the next ones reconnect. */
void mcpx_redis_drop(struct mcpx_redis_rop *r, const char *why);

/* Sends one command for r (store_redis.c). 0 or -ENOTCONN/-ENOMEM. */
int mcpx_redis_send(struct mcpx_redis_rop *r, int argc, const char **argv, const size_t *lens);

/* Sends r's first commands. */
void mcpx_redis_rop_start(struct mcpx_redis_rop *r);

/* Reads r's next reply (never NULL: store_redis.c fails the op on a
 * lost connection) and sends what follows it. */
void mcpx_redis_rop_reply(struct mcpx_redis_rop *r, redisReply *reply);

/* Gets (redis_get.c), called by the two above. */
void mcpx_redis_get_start(struct mcpx_redis_rop *r);
void mcpx_redis_get_reply(struct mcpx_redis_rop *r, redisReply *reply);

/* Records and leases (redis_records.c), called by the two above. */
void mcpx_redis_record_start(struct mcpx_redis_rop *r);
void mcpx_redis_record_reply(struct mcpx_redis_rop *r, redisReply *reply);

/* Helpers redis_ops.c shares with redis_records.c. */
struct mcpx_redis_cmd {
	const char *argv[16];
	size_t lens[16];
	int argc;
	char bufs[8][MCPX_STORE_NAME_MAX + 96];
	int nb;
};
void mcpx_redis_arg(struct mcpx_redis_cmd *c, const char *s, size_t len);
/* An EVAL of script with nkeys keys, then the keys of op named by part
 * ("r:", "ri", "l:") with the op's name where the part ends in ':'. */
void mcpx_redis_eval(struct mcpx_redis_cmd *c, const struct mcpx_store_op *op, const char *script,
                     const char *const *parts, int nkeys);
int mcpx_redis_cmd_send(struct mcpx_redis_rop *r, struct mcpx_redis_cmd *c);
void mcpx_redis_fail_reply(struct mcpx_redis_rop *r, const redisReply *rep);
/* Element i of an array reply as a number (integer or decimal string; 0
 * otherwise) or as a string reply (NULL otherwise). */
int64_t mcpx_redis_elem_int(const redisReply *rep, size_t i);
const redisReply *mcpx_redis_elem_str(const redisReply *rep, size_t i);

/* The op is over once every reply it waited for came and nothing more is
 * to be sent. */
static inline bool mcpx_redis_rop_over(const struct mcpx_redis_rop *r)
{
	return r->done_sending && r->got >= r->sent;
}

#endif
