/*
 * redis_rop.c - what every Redis store op's code uses (redis_rop.h): its
 * commands built and sent on the backend's connection, its replies read,
 * an error reply made the op's error, its large buffers freed on the
 * backend's worker thread.
 *
 * Replies that are errors become -EIO with the error's first word, never
 * the rest of what the server said.
 *
 * What it does not do: choose commands (redis_ops.c, redis_get.c,
 * redis_records.c), or count replies and end ops (store_redis.c).
 */
#include "redis_rop.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offload.h"

struct free_task {
	struct mcpx_offload_task t;
	void *p;
};

static void free_work(struct mcpx_offload_task *t)
{
	free(((struct free_task *)t)->p);
}

static void free_done(struct mcpx_offload_task *t)
{
	if (t->cancelled)
		free(((struct free_task *)t)->p);
	free(t);
}

void mcpx_redis_free_blob(struct mcpx_redis_rop *r, void *p, size_t len)
{
	struct free_task *f;

	if (!p)
		return;
	if (len <= r->piece || !r->io->freer || !(f = calloc(1, sizeof(*f)))) {
		free(p);
		return;
	}
	f->t.work = free_work;
	f->t.done = free_done;
	f->p = p;
	mcpx_offload_submit(r->io->freer, &f->t);
}

void mcpx_redis_drop(struct mcpx_redis_rop *r, const char *why)
{
	mcpx_redis_conn_drop(r->io->conn, why);
}

int mcpx_redis_send(struct mcpx_redis_rop *r, int argc, const char **argv, const size_t *lens)
{
	int rc = mcpx_redis_conn_command(r->io->conn, r->io->on_reply, r, argc, argv, lens);

	if (rc == 0) {
		r->sent++;
		r->last_us = mcpx_now_us();
	}
	return rc;
}

void mcpx_redis_arg(struct mcpx_redis_cmd *c, const char *s, size_t len)
{
	c->argv[c->argc] = s;
	c->lens[c->argc++] = len;
}

void mcpx_redis_args(struct mcpx_redis_cmd *c, const char *s)
{
	mcpx_redis_arg(c, s, strlen(s));
}

void mcpx_redis_argf(struct mcpx_redis_cmd *c, const char *fmt, ...)
{
	char *b = c->bufs[c->nb++];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b, sizeof(c->bufs[0]), fmt, ap);
	va_end(ap);
	mcpx_redis_args(c, b);
}

void mcpx_redis_argk(struct mcpx_redis_cmd *c, const struct mcpx_store_op *op, const char *part,
                     const char *name)
{
	mcpx_redis_argf(c, "mcpx:v1:{%s:%s}:%s%s", op->key.kind, op->key.caller, part, name);
}

void mcpx_redis_eval_head(struct mcpx_redis_cmd *c, const char *script, int nkeys)
{
	mcpx_redis_args(c, "EVAL");
	mcpx_redis_args(c, script);
	mcpx_redis_argf(c, "%d", nkeys);
}

void mcpx_redis_eval(struct mcpx_redis_cmd *c, const struct mcpx_store_op *op, const char *script,
                     const char *const *parts, int nkeys)
{
	mcpx_redis_eval_head(c, script, nkeys);
	for (int i = 0; i < nkeys; i++) {
		size_t n = strlen(parts[i]);

		mcpx_redis_argk(c, op, parts[i], n && parts[i][n - 1] == ':' ? op->key.name : "");
	}
}

int mcpx_redis_cmd_send(struct mcpx_redis_rop *r, struct mcpx_redis_cmd *c)
{
	int rc = mcpx_redis_send(r, c->argc, c->argv, c->lens);

	if (rc < 0) {
		r->failed = true;
		r->done_sending = true;
		mcpx_store_op_fail(r->op, -ENOTCONN, "the store is unreachable");
	}
	return rc;
}

/* An error reply, or a reply of another type than expected. */
void mcpx_redis_fail_reply(struct mcpx_redis_rop *r, const redisReply *rep)
{
	size_t n;

	r->failed = true;
	if (rep->type != REDIS_REPLY_ERROR || !rep->str) {
		mcpx_store_op_fail(r->op, -EIO, "the store answered something unexpected");
		return;
	}
	n = strcspn(rep->str, " ");
	if (n > 32)
		n = 32;
	if (strncmp(rep->str, "LOADING", 7) == 0)
		mcpx_store_op_fail(r->op, -ENOTCONN, "the store is starting (LOADING)");
	else if (strncmp(rep->str, "OOM", 3) == 0)
		mcpx_store_op_fail(r->op, -EIO, "the store is out of memory (OOM)");
	else
		mcpx_store_op_fail(r->op, -EIO, "the store refused the operation (%.*s)", (int)n,
		                   rep->str);
}

int64_t mcpx_redis_elem_int(const redisReply *rep, size_t i)
{
	if (rep->type != REDIS_REPLY_ARRAY || i >= rep->elements)
		return 0;
	if (rep->element[i]->type == REDIS_REPLY_INTEGER)
		return rep->element[i]->integer;
	if (rep->element[i]->type == REDIS_REPLY_STRING)
		return (int64_t)strtoll(rep->element[i]->str, NULL, 10);
	return 0;
}

const redisReply *mcpx_redis_elem_str(const redisReply *rep, size_t i)
{
	if (rep->type != REDIS_REPLY_ARRAY || i >= rep->elements ||
	    rep->element[i]->type != REDIS_REPLY_STRING)
		return NULL;
	return rep->element[i];
}
