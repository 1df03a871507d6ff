/*
 * redis_scripts.h - the Lua scripts the Redis store runs with EVAL: each
 * check-then-change step (a cap, a version, a lease owner) is one script,
 * so Redis runs it atomically. Their KEYS and ARGV are listed beside each
 * in redis_scripts.c.
 *
 * Scripts read keys derived from a name set (a caller's blobs) that are
 * not declared in KEYS: fine on one Redis or Valkey server (every key of a
 * caller and kind shares one hash tag, so one cluster slot too), which is
 * what the store supports.
 */
#ifndef MCPX_REDIS_SCRIPTS_H
#define MCPX_REDIS_SCRIPTS_H

/* The blob trailer: "MCPXB2", the TTL in milliseconds as 17 digits, the
 * version's 16 hex digits (random, new with every put), "\n". A plain
 * number: the scripts spell it in their text. */
#define MCPX_REDIS_TRAILER 40
#define MCPX_REDIS_TRAILER_TTL 6 /* where the TTL's digits start */
#define MCPX_REDIS_VERSION_LEN 16

extern const char mcpx_redis_put_commit[];
extern const char mcpx_redis_touch[];
extern const char mcpx_redis_delete[];
extern const char mcpx_redis_list_blobs[];
extern const char mcpx_redis_list_records[];
extern const char mcpx_redis_record_get[];
extern const char mcpx_redis_record_put[];
extern const char mcpx_redis_record_delete[];
extern const char mcpx_redis_lease_acquire[];
extern const char mcpx_redis_lease_renew[];
extern const char mcpx_redis_lease_release[];
extern const char mcpx_redis_lease_peek[];

#endif
