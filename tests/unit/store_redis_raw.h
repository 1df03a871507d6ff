/*
 * store_redis_raw.h - what the Redis store's tests (test_store_redis.c,
 * test_store_redis_read.c) use to look at and change what the store wrote,
 * behind its back: a plain synchronous hiredis connection to the fixture's
 * redis-server, and a blob value in the store's format (redis_scripts.h:
 * the bytes, then "MCPXB2", the TTL in 17 digits, a version's 16 hex
 * digits, "\n").
 *
 * Ownership: raw() returns a context the caller redisFree()s.
 */
#ifndef MCPX_STORE_REDIS_RAW_H
#define MCPX_STORE_REDIS_RAW_H

#include <hiredis/hiredis.h>

#include "store_fixture.h"

/* A plain hiredis connection for looking at what the store wrote. */
static inline redisContext *raw(const struct store_fx *fx, unsigned db)
{
	redisContext *c = redisConnect("127.0.0.1", fx->redis_port);
	redisReply *r;

	if (!c || c->err)
		return c;
	r = redisCommand(c, "AUTH %s", FX_PASSWORD);
	freeReplyObject(r);
	r = redisCommand(c, "SELECT %u", db);
	freeReplyObject(r);
	return c;
}

static inline long long raw_int(redisContext *c, const char *cmd)
{
	redisReply *r = redisCommand(c, cmd);
	long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -999;

	freeReplyObject(r);
	return v;
}

/* The one key matching pattern (KEYS), copied into out; false if not
 * exactly one. */
static inline bool raw_key(redisContext *c, const char *pattern, char *out, size_t n)
{
	redisReply *r = redisCommand(c, "KEYS %s", pattern);
	bool ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 1;

	if (ok)
		snprintf(out, n, "%s", r->element[0]->str);
	freeReplyObject(r);
	return ok;
}

#define RAW_TRAILER 40

/* Writes a blob of len bytes of fill, of version number version, to key
 * (as a put would have renamed it there). Returns whether Redis said OK. */
static inline bool raw_put_blob(redisContext *c, const char *key, char fill, size_t len,
                                unsigned long long version)
{
	char *v = malloc(len + RAW_TRAILER + 1);
	redisReply *r;
	bool ok;

	if (!v)
		return false;
	memset(v, fill, len);
	snprintf(v + len, RAW_TRAILER + 1, "MCPXB2%017llu%016llx\n", 600000ull, version);
	r = redisCommand(c, "SET %s %b PX 600000", key, v, len + RAW_TRAILER);
	ok = r && r->type == REDIS_REPLY_STATUS;
	freeReplyObject(r);
	free(v);
	return ok;
}

/* How many times the server ran command (lower case: "exec", "eval") so
 * far (INFO commandstats); -1 if it did not say. */
static inline long long raw_calls(redisContext *c, const char *command)
{
	redisReply *r = redisCommand(c, "INFO commandstats");
	char field[64];
	const char *p;
	long long n = -1;

	snprintf(field, sizeof(field), "cmdstat_%s:calls=", command);
	if (r && r->type == REDIS_REPLY_STRING && (p = strstr(r->str, field)))
		n = strtoll(p + strlen(field), NULL, 10);
	freeReplyObject(r);
	return n;
}

#endif
