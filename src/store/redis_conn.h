/*
 * redis_conn.h - one connection to Redis/Valkey through hiredis's async API
 * on the server's loop, kept up by itself.
 *
 * Debian's hiredis is 0.14.1: its async API has no timeouts and resolves
 * host names with a blocking getaddrinfo. So names are resolved on a worker
 * thread and hiredis is handed an address; connecting (with AUTH and
 * SELECT) has a deadline of its own; the loop watches a dup() of hiredis's
 * socket (loop.h) and calls hiredis's read and write handlers. A connection
 * that fails or drops is tried again with a backoff (100 ms doubling to
 * 5 s), and at once when a command is waiting.
 *
 * Commands are sent only while the connection is ready (authenticated).
 * Each command's reply comes to its callback inside hiredis; a reply of
 * NULL means the connection went away before it came (the command may or
 * may not have been carried out).
 *
 * No loop turn reads more than about 1 MiB from the socket, and a reply
 * larger than the owner said it asks for drops the connection, so no reply
 * holds the loop long.
 *
 * What it does not do: queue commands while down (the store's backend
 * does), time single commands out (ditto: it calls mcpx_redis_conn_drop),
 * or log the address or the password (messages name neither).
 */
#ifndef MCPX_REDIS_CONN_H
#define MCPX_REDIS_CONN_H

#include <hiredis/async.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "loop.h"
#include "store_spec.h"

struct mcpx_redis_conn;

struct mcpx_redis_conn_cbs {
	/* The connection is up and authenticated: send what waits. */
	void (*ready)(void *arg);
	/* A connection attempt failed, or an established one went away:
	 * why names the reason (no address, no password). */
	void (*down)(void *arg, const char *why);
};

/* Reads the password file (if the spec names one), then starts
 * connecting. max_reply: the largest reply the owner asks for (bytes, its
 * framing aside); one that grows past it drops the connection. Returns 0
 * or -errno with err set. */
int mcpx_redis_conn_new(struct mcpx_loop *loop, const struct mcpx_store_spec *spec,
                        uint32_t connect_timeout_ms, size_t max_reply,
                        const struct mcpx_redis_conn_cbs *cbs, void *arg,
                        struct mcpx_redis_conn **out, struct mcpx_err *err);

/* Drops the connection (every pending reply comes back NULL, inside this
 * call) and frees c. */
void mcpx_redis_conn_free(struct mcpx_redis_conn *c);

bool mcpx_redis_conn_ready(const struct mcpx_redis_conn *c);

/* Connects now if down and no attempt is running. */
void mcpx_redis_conn_kick(struct mcpx_redis_conn *c);

/* Sends one command (argv/lens as hiredis's redisAsyncCommandArgv) whose
 * reply goes to fn(ac, reply, privdata). 0, -ENOTCONN when not ready,
 * -ENOMEM. */
int mcpx_redis_conn_command(struct mcpx_redis_conn *c, redisCallbackFn *fn, void *privdata,
                            int argc, const char **argv, const size_t *lens);

/* Drops the connection from the next loop turn (a command overdue: the
 * server hangs) and reconnects. */
void mcpx_redis_conn_drop(struct mcpx_redis_conn *c, const char *why);

#endif
