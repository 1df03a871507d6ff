/*
 * redis_ops.h - the Redis store's operations: which commands each sends and
 * how it reads their replies (redis_ops.c, redis_get.c and redis_records.c,
 * with the Lua scripts of redis_scripts.c, on the helpers of redis_rop.h);
 * store_redis.c starts them, counts their replies and hands each over.
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

#include "redis_rop.h"

/* Sends r's first commands. */
void mcpx_redis_rop_start(struct mcpx_redis_rop *r);

/* Reads r's next reply (never NULL: store_redis.c fails the op on a
 * lost connection) and sends what follows it. */
void mcpx_redis_rop_reply(struct mcpx_redis_rop *r, redisReply *reply);

#endif
