/*
 * run_channel.c - a run's channel on the loop, and the op table that routes
 * its requests (run_channel.h).
 *
 * Each run holds the server end of its channel, a reference to the policy
 * it started with, its frame reader and answer queue, and its ops in
 * flight. A frame is parsed here only as far as its "id" and "op"; the rest
 * is the handler's. This module never performs a request itself, so the
 * caps it enforces (the answer queue, the body size, per-op limits) hold
 * alike for egress, function calls and upstream calls.
 *
 * Lifetimes: an op is freed when its answer has been written to the channel
 * (so the run's in-flight counts cover answers it has not read yet), or
 * when its run closes. Work that must not happen inside a callback of the
 * same object (closing a run after a write error) is deferred to a
 * zero-delay timer.
 */
#include "run_channel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker_wire.h"
#include "caller.h"
#include "log.h"
#include "loop.h"
#include "policy.h"

#define READ_ROUNDS 16
#define READ_CHUNK 65536
/* Answers a run may leave unread before its channel is no longer read: a
 * run that writes requests and never reads what comes back then finds its
 * own writes blocked (the socket's buffers fill) instead of making the
 * server queue an answer, and the request it answers, per frame. Every
 * request counts, a refusal as much as a fetch. */
#define OUT_MAX_FRAMES 64u
#define OUT_MAX_BYTES (64u * 1024u)

struct mcpx_run_channel {
	struct mcpx_loop *loop;
	struct mcpx_policy_store *store;
	struct mcpx_run_channel_run *runs;
	struct mcpx_run_op_handler ops[MCPX_RUN_CHANNEL_MAX_OPS];
	size_t n_ops;
};

/* What a run counts of one op of the table. */
struct op_count {
	unsigned total, in_flight;
	void *run_data; /* the handler's */
};

struct mcpx_run_channel_run {
	struct mcpx_run_channel *rc;
	struct mcpx_run_channel_run *next;
	struct mcpx_policy *policy; /* the version the run started with */
	char run_id[33], request_id[129], caller[MCPX_CALLER_MAX], profile[65];
	struct mcpx_run_who who; /* its strings point at the arrays above */
	struct mcpx_watch ch;
	bool ch_open, read_eof, ended, closing, want_write;
	struct mcpx_timer close_timer;
	struct mcpx_wire_in in;
	struct mcpx_wire_out out;
	/* Bytes read from the channel and not yet framed: framing stops while
	 * the answers queue is full and resumes (resume_timer) once it has
	 * drained, so at most one read's worth waits here. */
	char pending[READ_CHUNK];
	size_t pend_off, pend_len;
	struct mcpx_timer resume_timer;
	uint64_t held; /* what the server holds for the run, last told */
	struct mcpx_run_op *ops;
	struct op_count counts[MCPX_RUN_CHANNEL_MAX_OPS];
	unsigned unknown_in_flight; /* refusals of ops nobody handles */
};

struct mcpx_run_op {
	struct mcpx_run_channel_run *run;
	struct mcpx_run_op *next;
	double id;
	size_t slot; /* in the table; MCPX_RUN_CHANNEL_MAX_OPS: no handler */
	bool answered;
	uint64_t held;
	void *data; /* the handler's */
};

static void close_later(struct mcpx_run_channel_run *r, const char *why);
static void update_held(struct mcpx_run_channel_run *r);

/* ---- ops: bookkeeping and answers ------------------------------------------ */

static void op_free(struct mcpx_run_op *q)
{
	struct mcpx_run_channel_run *r = q->run;

	for (struct mcpx_run_op **pp = &r->ops; *pp; pp = &(*pp)->next) {
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	}
	if (q->slot < MCPX_RUN_CHANNEL_MAX_OPS)
		r->counts[q->slot].in_flight--;
	else
		r->unknown_in_flight--;
	free(q);
	update_held(r);
}

static void answer_sent(void *tag, void *arg)
{
	(void)arg;
	op_free(tag);
}

/* What the server holds for r now: the run itself, its ops and what their
 * handlers hold for them, the answers not yet written and the bytes read
 * but not yet framed. */
static uint64_t held_now(const struct mcpx_run_channel_run *r)
{
	uint64_t n =
	    sizeof(*r) + r->in.json.alloc + r->in.body.alloc + r->out.bytes + r->out.queued * 64u;

	for (const struct mcpx_run_op *q = r->ops; q; q = q->next)
		n += sizeof(*q) + q->held;
	return n;
}

/* Tells the run's starter what the server holds for it, which charges it
 * to the run's memory budget: the server's memory a run causes is the
 * run's. */
static void update_held(struct mcpx_run_channel_run *r)
{
	uint64_t n;

	if (!r->who.held || r->ended)
		return;
	n = held_now(r);
	if (n != r->held) {
		r->held = n;
		r->who.held(r->who.held_arg, n);
	}
}

static bool out_full(const struct mcpx_run_channel_run *r)
{
	return r->out.queued >= OUT_MAX_FRAMES || r->out.bytes >= OUT_MAX_BYTES;
}

/* Reads while the answers queue has room, writes while it holds any. */
static void set_events(struct mcpx_run_channel_run *r)
{
	bool read = !r->read_eof && !r->closing && !out_full(r);

	if (r->ch_open)
		mcpx_loop_set_events(&r->ch, (read ? MCPX_EV_READ : 0) |
		                                 (r->want_write ? MCPX_EV_WRITE : 0));
}

static void flush_channel(struct mcpx_run_channel_run *r)
{
	int rc;

	if (r->closing || !r->ch_open)
		return;
	rc = mcpx_wire_out_flush(&r->out, r->ch.fd, answer_sent, r);
	if (rc < 0) {
		close_later(r, NULL); /* the run closed its end */
		return;
	}
	r->want_write = rc == 1;
	set_events(r);
	/* Bytes already read wait for room: framed on the next iteration,
	 * outside whatever callback answered. */
	if (!out_full(r) && r->pend_off < r->pend_len && !r->resume_timer.armed)
		mcpx_timer_start(r->rc->loop, &r->resume_timer, 0);
}

/* The request's id, echoed exactly: an integer of up to 2^53 - 1
 * (valid_id), written as one. cJSON would print a number past 2^31 as a
 * double with 15 significant digits (9.00719925474099e+15), which the run
 * could not match with the id it sent. Returns false when out of memory. */
static bool add_id(cJSON *m, double id)
{
	char text[32];
	cJSON *item;

	snprintf(text, sizeof(text), "%llu", (unsigned long long)id);
	if (!(item = cJSON_AddRawToObject(m, "id", text)))
		return false;
	/* First, where a reader of the frame looks for it. */
	cJSON_DetachItemViaPointer(m, item);
	return cJSON_InsertItemInArray(m, 0, item);
}

void mcpx_run_op_answer(struct mcpx_run_op *q, cJSON *msg, char *body, size_t len)
{
	struct mcpx_run_channel_run *r = q->run;
	char *text;

	q->answered = true;
	q->held = 0;
	if (msg && !add_id(msg, q->id)) {
		cJSON_Delete(msg);
		msg = NULL;
	}
	text = msg ? cJSON_PrintUnformatted(msg) : NULL;
	cJSON_Delete(msg);
	if (r->closing) {
		/* The run is going: the close frees q. */
		free(body);
		free(text);
		return;
	}
	if (!text || mcpx_wire_out_push(&r->out, text, strlen(text), body, len, q) < 0) {
		if (!text)
			free(body);
		free(text);
		close_later(r, "out of memory");
		return;
	}
	free(text);
	update_held(r);
	flush_channel(r);
}

/* Refuses q here, before any handler: {"error": "denied"}. */
static void refuse(struct mcpx_run_op *q, const char *reason, const char *message)
{
	cJSON *m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "error", "denied");
	cJSON_AddStringToObject(m, "reason", reason);
	cJSON_AddStringToObject(m, "message", message);
	mcpx_run_op_answer(q, m, NULL, 0);
}

/* ---- dispatch ---------------------------------------------------------------- */

static bool valid_id(const cJSON *id)
{
	return cJSON_IsNumber(id) && id->valuedouble >= 0 &&
	       id->valuedouble <= 9007199254740991.0 &&
	       id->valuedouble == (double)(long long)id->valuedouble;
}

static size_t slot_of(const struct mcpx_run_channel *rc, const cJSON *op)
{
	if (cJSON_IsString(op))
		for (size_t i = 0; i < rc->n_ops; i++)
			if (rc->ops[i].op && strcmp(rc->ops[i].name, op->valuestring) == 0)
				return i;
	return MCPX_RUN_CHANNEL_MAX_OPS;
}

/* An op nobody handles: the refusal names the ones this server knows. */
static void refuse_unknown(struct mcpx_run_op *q)
{
	const struct mcpx_run_channel *rc = q->run->rc;
	char msg[256];
	size_t n = (size_t)snprintf(msg, sizeof(msg), "unknown operation (this server knows");

	for (size_t i = 0; i < rc->n_ops && n < sizeof(msg); i++)
		if (rc->ops[i].op)
			n += (size_t)snprintf(msg + n, sizeof(msg) - n, " %s", rc->ops[i].name);
	if (n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - n, ")");
	refuse(q, "bad_request", msg);
}

static void dispatch(struct mcpx_run_op *q, const cJSON *msg, const cJSON *op)
{
	struct mcpx_run_channel_run *r = q->run;
	const struct mcpx_run_op_handler *h;
	struct op_count *c;
	char text[160];

	if (q->slot == MCPX_RUN_CHANNEL_MAX_OPS) {
		r->unknown_in_flight++;
		refuse_unknown(q);
		return;
	}
	h = &r->rc->ops[q->slot];
	c = &r->counts[q->slot];
	c->total++;
	c->in_flight++;
	if (h->max_per_run && c->total > h->max_per_run) {
		snprintf(text, sizeof(text), "this run made its %u %s requests", h->max_per_run,
		         h->name);
		if (h->refuse)
			h->refuse(h->arg, q, msg, "run_limit", h->max_per_run);
		else
			refuse(q, "run_limit", text);
	} else if (h->max_in_flight && c->in_flight > h->max_in_flight) {
		snprintf(text, sizeof(text), "%u %s requests of this run are already in flight",
		         h->max_in_flight, h->name);
		if (h->refuse)
			h->refuse(h->arg, q, msg, "in_flight", h->max_in_flight);
		else
			refuse(q, "in_flight", text);
	} else {
		h->op(h->arg, q, op->valuestring, msg, r->in.body.data, r->in.body.len,
		      r->in.oversize);
	}
}

static void handle_frame(struct mcpx_run_channel_run *r)
{
	cJSON *msg = cJSON_ParseWithLength(r->in.json.data, r->in.json.len);
	const cJSON *id = cJSON_IsObject(msg) ? cJSON_GetObjectItemCaseSensitive(msg, "id") : NULL;
	const cJSON *op;
	struct mcpx_run_op *q;

	if (!valid_id(id)) {
		cJSON_Delete(msg);
		close_later(r, "a message without a valid id");
		return;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		cJSON_Delete(msg);
		close_later(r, "out of memory");
		return;
	}
	op = cJSON_GetObjectItemCaseSensitive(msg, "op");
	q->run = r;
	q->id = id->valuedouble;
	q->slot = slot_of(r->rc, op);
	q->next = r->ops;
	r->ops = q;
	update_held(r);
	/* q may be gone once dispatch returns (answered and written). */
	dispatch(q, msg, op);
	cJSON_Delete(msg);
}

/* ---- runs and their channels ------------------------------------------------- */

static void cancel_all(struct mcpx_run_channel_run *r)
{
	/* Queued answers go first: their tags are the ops freed below. */
	mcpx_wire_out_clear(&r->out, NULL, NULL);
	while (r->ops) {
		struct mcpx_run_op *q = r->ops;

		/* An op not answered yet: its handler forgets it first. */
		if (!q->answered && q->slot < MCPX_RUN_CHANNEL_MAX_OPS &&
		    r->rc->ops[q->slot].cancel)
			r->rc->ops[q->slot].cancel(r->rc->ops[q->slot].arg, q);
		op_free(q);
	}
}

static void run_free(struct mcpx_run_channel_run *r)
{
	mcpx_wire_in_free(&r->in);
	mcpx_policy_unref(r->policy);
	free(r);
}

static void close_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_run_channel_run *r = t->arg;

	mcpx_timer_cancel(&r->resume_timer);
	cancel_all(r);
	if (r->ch_open)
		mcpx_loop_unwatch(&r->ch);
}

/* Stops serving r (the channel is closed, its ops cancelled) on the next
 * loop iteration, outside whatever callback noticed the problem. */
static void close_later(struct mcpx_run_channel_run *r, const char *why)
{
	if (r->closing || r->ended)
		return;
	r->closing = true;
	if (why)
		mcpx_warn("run channel: run %s: %s; its channel is closed", r->run_id, why);
	r->close_timer.fn = close_timer_cb;
	r->close_timer.arg = r;
	mcpx_timer_start(r->rc->loop, &r->close_timer, 0);
}

/* Frames the bytes read so far, one request at a time, while the answers
 * queue has room: what is left waits in r->pending. */
static void feed(struct mcpx_run_channel_run *r)
{
	while (r->pend_off < r->pend_len && !r->closing && !out_full(r)) {
		size_t used = 0;
		int rc = mcpx_wire_in_feed(&r->in, r->pending + r->pend_off,
		                           r->pend_len - r->pend_off, &used);

		r->pend_off += used;
		if (rc < 0) {
			close_later(r, rc == -ENOMEM ? "out of memory" : "a malformed frame");
			return;
		}
		if (rc == 1) {
			handle_frame(r);
			mcpx_wire_in_next(&r->in);
		}
	}
	if (r->pend_off == r->pend_len)
		r->pend_off = r->pend_len = 0;
}

static void read_channel(struct mcpx_run_channel_run *r)
{
	/* Bounded per wake-up, so one chatty run cannot starve the loop. */
	for (int i = 0; i < READ_ROUNDS && !r->closing; i++) {
		ssize_t n;

		feed(r);
		if (r->pend_len || r->closing)
			break; /* the answers queue is full: the rest waits */
		n = read(r->ch.fd, r->pending, sizeof(r->pending));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			/* The run closed its end (or exited): nobody is left to
			 * answer. */
			r->read_eof = true;
			mcpx_loop_set_events(&r->ch, 0);
			close_later(r, NULL);
			return;
		}
		r->pend_len = (size_t)n;
	}
	feed(r);
	set_events(r);
	update_held(r);
}

static void resume_cb(struct mcpx_timer *t)
{
	struct mcpx_run_channel_run *r = t->arg;

	if (!r->closing && r->ch_open)
		read_channel(r);
}

static void channel_cb(struct mcpx_watch *w, int events)
{
	struct mcpx_run_channel_run *r = w->arg;

	if (events & MCPX_EV_CLOSED) {
		r->ch_open = false;
		if (r->ended)
			run_free(r);
		else
			close_later(r, NULL);
		return;
	}
	if (events & MCPX_EV_WRITE)
		flush_channel(r);
	if ((events & MCPX_EV_READ) && !r->closing)
		read_channel(r);
}

bool mcpx_run_channel_exec_wants(const struct mcpx_run_channel *rc)
{
	const struct mcpx_policy *p = rc ? mcpx_policy_store_current(rc->store) : NULL;

	if (!p)
		return false;
	if (p->exec.n_rules > 0 || mcpx_policy_exec_calls(p))
		return true;
	/* A profile may grant exec more than the top level does. */
	for (size_t i = 0; i < p->n_profiles; i++)
		if (p->profiles[i].has_exec &&
		    (p->profiles[i].exec.n_rules > 0 || p->profiles[i].exec.n_upstreams > 0))
			return true;
	return false;
}

struct mcpx_run_channel_run *mcpx_run_channel_start(struct mcpx_run_channel *rc, int *fd,
                                                    const struct mcpx_run_who *who)
{
	const struct mcpx_profile *pr;
	struct mcpx_run_channel_run *r;

	if (!rc || *fd < 0 || !(r = calloc(1, sizeof(*r))))
		return NULL;
	r->rc = rc;
	r->policy =
	    mcpx_policy_ref(who->policy ? who->policy : mcpx_policy_store_current(rc->store));
	pr = mcpx_policy_profile_for(r->policy, who->caller);
	snprintf(r->profile, sizeof(r->profile), "%s", pr ? pr->name : "");
	snprintf(r->run_id, sizeof(r->run_id), "%s", who->run_id ? who->run_id : "");
	snprintf(r->request_id, sizeof(r->request_id), "%s",
	         who->request_id ? who->request_id : "");
	snprintf(r->caller, sizeof(r->caller), "%s", who->caller ? who->caller : "");
	r->who = *who;
	r->who.run_id = r->run_id;
	r->who.request_id = r->request_id;
	r->who.caller = r->caller;
	r->who.profile = r->profile;
	r->who.policy = r->policy;
	/* exec's own runs are served under their caller's profile's grant
	 * (the top-level one without a profile); a function's under its own. */
	r->who.grant =
	    who->policy && who->grant ? who->grant : mcpx_policy_exec_grant(r->policy, who->caller);
	mcpx_wire_in_init(&r->in, MCPX_RUN_CHANNEL_MAX_BODY);
	r->ch.fd = *fd;
	r->ch.fn = channel_cb;
	r->ch.arg = r;
	r->resume_timer.fn = resume_cb;
	r->resume_timer.arg = r;
	if (mcpx_loop_watch(rc->loop, &r->ch) < 0) {
		run_free(r);
		return NULL;
	}
	*fd = -1; /* the loop owns it now */
	r->ch_open = true;
	r->next = rc->runs;
	rc->runs = r;
	return r;
}

void mcpx_run_channel_end(struct mcpx_run_channel_run *r)
{
	struct mcpx_run_channel_run **pp;

	if (!r)
		return;
	r->ended = true;
	mcpx_timer_cancel(&r->close_timer);
	mcpx_timer_cancel(&r->resume_timer);
	cancel_all(r);
	for (size_t i = 0; i < r->rc->n_ops; i++)
		if (r->rc->ops[i].run_end)
			r->rc->ops[i].run_end(r->rc->ops[i].arg, &r->who, r->counts[i].run_data);
	for (pp = &r->rc->runs; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	if (r->ch_open)
		mcpx_loop_unwatch(&r->ch); /* frees r at MCPX_EV_CLOSED */
	else
		run_free(r);
}

/* ---- the table and the op handle ---------------------------------------------- */

int mcpx_run_channel_add_op(struct mcpx_run_channel *rc, const struct mcpx_run_op_handler *h)
{
	for (size_t i = 0; i < rc->n_ops; i++) {
		if (strcmp(rc->ops[i].name, h->name) == 0) {
			rc->ops[i] = *h;
			return 0;
		}
	}
	if (rc->n_ops == MCPX_RUN_CHANNEL_MAX_OPS)
		return -ENOSPC;
	rc->ops[rc->n_ops++] = *h;
	return 0;
}

void mcpx_run_channel_remove_op(struct mcpx_run_channel *rc, const char *name)
{
	for (size_t i = 0; rc && i < rc->n_ops; i++) {
		if (strcmp(rc->ops[i].name, name) == 0) {
			/* The slot stays (ops in flight name it), without a
			 * handler: new frames of the op are unknown, and its
			 * owner (going away) is never called again. */
			rc->ops[i] = (struct mcpx_run_op_handler){.name = rc->ops[i].name};
			return;
		}
	}
}

const struct mcpx_run_who *mcpx_run_op_who(const struct mcpx_run_op *q)
{
	return &q->run->who;
}

unsigned mcpx_run_op_count(const struct mcpx_run_op *q)
{
	return q->slot < MCPX_RUN_CHANNEL_MAX_OPS ? q->run->counts[q->slot].total : 0;
}

unsigned mcpx_run_op_in_flight(const struct mcpx_run_op *q)
{
	return q->slot < MCPX_RUN_CHANNEL_MAX_OPS ? q->run->counts[q->slot].in_flight : 0;
}

void **mcpx_run_op_data(struct mcpx_run_op *q)
{
	return &q->data;
}

void **mcpx_run_op_run_data(struct mcpx_run_op *q)
{
	return &q->run->counts[q->slot < MCPX_RUN_CHANNEL_MAX_OPS ? q->slot : 0].run_data;
}

void mcpx_run_op_hold(struct mcpx_run_op *q, uint64_t bytes)
{
	q->held = bytes;
	update_held(q->run);
}

/* ---- the module ----------------------------------------------------------------- */

struct mcpx_run_channel *mcpx_run_channel_new(struct mcpx_loop *loop,
                                              struct mcpx_policy_store *store)
{
	struct mcpx_run_channel *rc = calloc(1, sizeof(*rc));

	if (!rc)
		return NULL;
	rc->loop = loop;
	rc->store = store;
	return rc;
}

void mcpx_run_channel_free(struct mcpx_run_channel *rc)
{
	if (!rc)
		return;
	while (rc->runs)
		mcpx_run_channel_end(rc->runs);
	free(rc);
}
