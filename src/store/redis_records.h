/*
 * redis_records.h - the Redis store's records and leases (redis_records.c);
 * what redis_ops.c calls for an op of those kinds.
 */
#ifndef MCPX_REDIS_RECORDS_H
#define MCPX_REDIS_RECORDS_H

#include "redis_rop.h"

void mcpx_redis_record_start(struct mcpx_redis_rop *r);
void mcpx_redis_record_reply(struct mcpx_redis_rop *r, redisReply *reply);

#endif
