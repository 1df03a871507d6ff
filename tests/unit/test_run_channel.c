/*
 * test_run_channel.c - the run channel's op table (issue 24, Shape): frames
 * reach the handler of their "op"; a handler's per-op limits (max_in_flight,
 * max_per_run) are enforced by the table before the handler sees a frame;
 * an op nobody handles is refused with the names the table knows; ops
 * still unanswered when the run ends are cancelled, and each handler hears
 * of the run's end with its run data. A real loop, turned by hand, and a
 * socketpair stand in for the server and the run.
 */
#include "run_channel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker_wire.h"
#include "channel_fixture.h"
#include "check.h"
#include "log.h"
#include "loop.h"

static struct mcpx_run_op *held_op; /* the "hold" op the test answers */
static unsigned hold_calls, wait_calls, cancels, run_ends, run_data_freed;
static char ended_run_id[64];

static void on_hold(void *arg, struct mcpx_run_op *q, const char *name, const cJSON *msg,
                    const char *body, size_t len, bool oversize)
{
	(void)arg, (void)name, (void)msg, (void)body, (void)len, (void)oversize;
	hold_calls++;
	held_op = q;
}

static void on_wait(void *arg, struct mcpx_run_op *q, const char *name, const cJSON *msg,
                    const char *body, size_t len, bool oversize)
{
	void **rd = mcpx_run_op_run_data(q);

	(void)arg, (void)name, (void)msg, (void)body, (void)len, (void)oversize;
	wait_calls++;
	/* Per-run state of the handler's own, handed back at the run's end. */
	if (!*rd)
		*rd = malloc(16);
}

static void on_cancel(void *arg, struct mcpx_run_op *q)
{
	(void)arg, (void)q;
	cancels++;
}

static void on_run_end(void *arg, const struct mcpx_run_who *who, void *run_data)
{
	(void)arg;
	run_ends++;
	snprintf(ended_run_id, sizeof(ended_run_id), "%s", who->run_id);
	if (run_data) {
		run_data_freed++;
		free(run_data);
	}
}

/* Turns the loop until one answer arrives (or a while passes); its JSON,
 * or "" for none. */
static const char *answer(struct mcpx_loop *loop, int fd, struct mcpx_wire_in *in)
{
	static char text[1024];
	char buf[4096];

	text[0] = '\0';
	for (int i = 0; i < 200; i++) {
		ssize_t r;

		mcpx_loop_turn(loop);
		r = read(fd, buf, sizeof(buf));
		for (size_t o = 0; r > 0 && o < (size_t)r;) {
			size_t used = 0;
			int rc = mcpx_wire_in_feed(in, buf + o, (size_t)r - o, &used);

			CHECK(rc >= 0);
			if (rc < 0)
				return text;
			o += used;
			if (rc == 1) {
				snprintf(text, sizeof(text), "%s", mcpx_buf_str(&in->json));
				mcpx_wire_in_next(in);
				CHECK(o == (size_t)r); /* one answer at a time here */
				return text;
			}
		}
	}
	return text;
}

int main(void)
{
	const char *json = "{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a.test/\"}], "
	                   "\"exec\": {\"egress\": [\"a\"]}}";
	const struct mcpx_run_op_handler hold = {.name = "hold",
	                                         .op = on_hold,
	                                         .cancel = on_cancel,
	                                         .run_end = on_run_end,
	                                         .max_per_run = 3,
	                                         .max_in_flight = 1};
	const struct mcpx_run_op_handler wait = {
	    .name = "wait", .op = on_wait, .cancel = on_cancel, .run_end = on_run_end};
	struct mcpx_run_who who = {.run_id = "r1"};
	struct channel_fixture fx;
	struct mcpx_run_channel_run *run;
	struct mcpx_wire_in in;
	const char *a;

	mcpx_log_setup(MCPX_LOG_TEXT, MCPX_LOG_ERROR);
	channel_fixture_open(&fx, json, false);
	CHECK(mcpx_run_channel_exec_wants(fx.rc));
	CHECK_INT(mcpx_run_channel_add_op(fx.rc, &hold), 0);
	CHECK_INT(mcpx_run_channel_add_op(fx.rc, &wait), 0);
	run = channel_fixture_start(&fx, &who);
	mcpx_wire_in_init(&in, 1 << 20);

	/* The first "hold" reaches its handler and waits for its answer. */
	channel_fixture_send(&fx, "{\"id\":1,\"op\":\"hold\"}");
	CHECK_STR(answer(fx.loop, fx.fd, &in), "");
	CHECK_INT(hold_calls, 1);
	CHECK(held_op != NULL);
	if (held_op) {
		CHECK_STR(mcpx_run_op_who(held_op)->run_id, "r1");
		CHECK_INT(mcpx_run_op_count(held_op), 1);
		CHECK_INT(mcpx_run_op_in_flight(held_op), 1);
	}

	/* A second one while the first is in flight: refused by the table
	 * (max_in_flight 1), the handler never sees it. */
	channel_fixture_send(&fx, "{\"id\":2,\"op\":\"hold\"}");
	a = answer(fx.loop, fx.fd, &in);
	CHECK(strstr(a, "\"id\":2") && strstr(a, "\"reason\":\"in_flight\""));
	CHECK_INT(hold_calls, 1);

	/* The handler answers the first; the id comes back first, exactly. */
	mcpx_run_op_answer(held_op, cJSON_CreateObject(), NULL, 0);
	held_op = NULL;
	a = answer(fx.loop, fx.fd, &in);
	CHECK_STR(a, "{\"id\":1}");

	/* Room again: the third reaches the handler; the fourth is past
	 * max_per_run 3 (refusals count). */
	channel_fixture_send(&fx, "{\"id\":3,\"op\":\"hold\"}");
	CHECK_STR(answer(fx.loop, fx.fd, &in), "");
	CHECK_INT(hold_calls, 2);
	mcpx_run_op_answer(held_op, cJSON_CreateObject(), NULL, 0);
	held_op = NULL;
	CHECK_STR(answer(fx.loop, fx.fd, &in), "{\"id\":3}");
	channel_fixture_send(&fx, "{\"id\":4,\"op\":\"hold\"}");
	a = answer(fx.loop, fx.fd, &in);
	CHECK(strstr(a, "\"id\":4") && strstr(a, "\"reason\":\"run_limit\""));
	CHECK_INT(hold_calls, 2);

	/* An op nobody handles, and one without an op: refused here, naming
	 * the ops the table has. */
	channel_fixture_send(&fx, "{\"id\":5,\"op\":\"nope\"}");
	a = answer(fx.loop, fx.fd, &in);
	CHECK(strstr(a, "\"id\":5") && strstr(a, "\"reason\":\"bad_request\"") &&
	      strstr(a, "hold wait"));
	channel_fixture_send(&fx, "{\"id\":6}");
	a = answer(fx.loop, fx.fd, &in);
	CHECK(strstr(a, "\"id\":6") && strstr(a, "\"reason\":\"bad_request\""));

	/* An op left unanswered when the run ends is cancelled; every handler
	 * hears of the end, the one with run data gets it back to free. */
	channel_fixture_send(&fx, "{\"id\":7,\"op\":\"wait\"}");
	CHECK_STR(answer(fx.loop, fx.fd, &in), "");
	CHECK_INT(wait_calls, 1);
	mcpx_run_channel_end(run);
	CHECK_INT(cancels, 1);
	CHECK_INT(run_ends, 2);
	CHECK_INT(run_data_freed, 1);
	CHECK_STR(ended_run_id, "r1");

	mcpx_wire_in_free(&in);
	channel_fixture_close(&fx);
	CHECK_DONE();
}
