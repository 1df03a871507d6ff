/*
 * hiredis_lib.h - hiredis loaded on first use: the Redis store's only door
 * to the library (hiredis_lib.c).
 *
 * The server does not link libhiredis: a replica whose store is a
 * directory (the default) or off never maps it. The store's connection
 * (redis_conn.c) asks mcpx_hiredis_available() once, when a redis://
 * store is made, and then calls these wrappers, which take and return
 * what the hiredis function of the same name does (hiredis/async.h:
 * the context's structure and the reply types come from the headers).
 */
#ifndef MCPX_HIREDIS_LIB_H
#define MCPX_HIREDIS_LIB_H

#include <hiredis/async.h>
#include <stdbool.h>

/* Loads libhiredis once (thread-safe) with every function below; false,
 * and a warning naming the cause, when it cannot be. */
bool mcpx_hiredis_available(void);

/* Whether a call has loaded it (mcpx_hiredis_available() returned true). */
bool mcpx_hiredis_loaded(void);

/* Each is its hiredis namesake's; called only after
 * mcpx_hiredis_available() returned true. */
redisAsyncContext *mcpx_redisAsyncConnect(const char *ip, int port);
void mcpx_redisAsyncFree(redisAsyncContext *ac);
int mcpx_redisAsyncSetConnectCallback(redisAsyncContext *ac, redisConnectCallback *fn);
void mcpx_redisAsyncHandleRead(redisAsyncContext *ac);
void mcpx_redisAsyncHandleWrite(redisAsyncContext *ac);
int mcpx_redisAsyncCommandArgv(redisAsyncContext *ac, redisCallbackFn *fn, void *privdata,
                               int argc, const char **argv, const size_t *argvlen);

#endif
