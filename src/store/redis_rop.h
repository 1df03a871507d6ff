/*
 * redis_rop.h - one Redis store op (struct mcpx_redis_rop) and what the
 * code of every op (redis_ops.c, redis_get.c, redis_records.c) uses: its
 * commands built and sent on the backend's connection, the elements of its
 * replies read, an error reply made the op's error, its large buffers
 * freed off the loop.
 *
 * What it does not do: choose an op's commands (redis_ops.h), or keep ops
 * waiting, in flight or done (the backend, store_redis.c, which counts
 * every reply in the callback it lends through struct mcpx_redis_io).
 */
#ifndef MCPX_REDIS_ROP_H
#define MCPX_REDIS_ROP_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

#include "redis_conn.h"
#include "redis_scripts.h"
#include "store_backend.h"

struct mcpx_offload;

/* Pieces of one op in flight at once. */
#define MCPX_REDIS_WINDOW 4

/* What an op's commands go out through: the backend's, set when it opens. */
struct mcpx_redis_io {
	struct mcpx_redis_conn *conn;
	redisCallbackFn *on_reply;  /* each reply to an op's command (privdata: the op) */
	struct mcpx_offload *freer; /* NULL: buffers are freed on the loop */
};

/* One store op on Redis: its progress. */
struct mcpx_redis_rop {
	struct mcpx_store_op *op;
	void *b;                        /* the backend's own (store_redis.c) */
	const struct mcpx_redis_io *io; /* the backend's connection */
	size_t piece;                   /* the most bytes of a blob one command or reply carries */
	int sent, got;                  /* commands sent, replies received */
	bool failed;                    /* a reply failed the op: send nothing more */
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
 * backend's worker thread, since unmapping 64 MiB takes the loop ~8 ms; a
 * smaller one at once. */
void mcpx_redis_free_blob(struct mcpx_redis_rop *r, void *p, size_t len);

/* Drops r's connection from the next loop turn: every op in flight on it
 * fails, the next ones reconnect. */
void mcpx_redis_drop(struct mcpx_redis_rop *r, const char *why);

/* Sends one command for r. 0 or -ENOTCONN/-ENOMEM. */
int mcpx_redis_send(struct mcpx_redis_rop *r, int argc, const char **argv, const size_t *lens);

/* A command being built: its arguments, and the buffers of those
 * formatted here. */
struct mcpx_redis_cmd {
	const char *argv[16];
	size_t lens[16];
	int argc;
	char bufs[8][MCPX_STORE_NAME_MAX + 96];
	int nb;
};
void mcpx_redis_arg(struct mcpx_redis_cmd *c, const char *s, size_t len);
/* A string argument; one formatted (into one of c's buffers). */
void mcpx_redis_args(struct mcpx_redis_cmd *c, const char *s);
void mcpx_redis_argf(struct mcpx_redis_cmd *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The key of part ("b:", "bi", ...) of op's caller and kind, with name. */
void mcpx_redis_argk(struct mcpx_redis_cmd *c, const struct mcpx_store_op *op, const char *part,
                     const char *name);
/* EVAL, script and nkeys: the keys and arguments follow. */
void mcpx_redis_eval_head(struct mcpx_redis_cmd *c, const char *script, int nkeys);
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
