/*
 * redis_get.h - the Redis store's get, read in pieces (redis_get.c); what
 * redis_ops.c calls for an op of MCPX_OP_GET.
 */
#ifndef MCPX_REDIS_GET_H
#define MCPX_REDIS_GET_H

#include "redis_rop.h"

void mcpx_redis_get_start(struct mcpx_redis_rop *r);
void mcpx_redis_get_reply(struct mcpx_redis_rop *r, redisReply *reply);

#endif
