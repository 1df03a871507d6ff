/*
 * channel_fixture.h - the set-up the run channel's unit tests share
 * (test_run_channel.c, test_broker.c): a policy file in a fresh temporary
 * directory, a loop turned by hand, the policy store, a run channel (with
 * the egress broker serving "fetch" when asked for), and one run started
 * on a socketpair, whose other end the test plays the run on. Frames are
 * written as broker_wire.h describes.
 *
 * Ownership: everything in struct channel_fixture is the fixture's;
 * channel_fixture_close() frees it in the server's order (app.c: the
 * channel, the broker, the store, the loop) and removes the directory.
 * Failures are CHECKs (check.h): a test that cannot be set up fails.
 */
#ifndef MCPX_CHANNEL_FIXTURE_H
#define MCPX_CHANNEL_FIXTURE_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker.h"
#include "broker_wire.h"
#include "check.h"
#include "curl_loop.h"
#include "loop.h"
#include "policy.h"
#include "run_channel.h"

struct channel_fixture {
	char dir[64], path[96];
	struct mcpx_loop *loop;
	struct mcpx_policy_store *store;
	struct mcpx_curl_loop *http; /* the broker's transport */
	struct mcpx_broker *broker;  /* NULL unless asked for */
	struct mcpx_run_channel *rc;
	int fd; /* the run's end of the socketpair; -1 before a run starts */
};

/* Writes policy_json as the policy and opens the loop, the store and the
 * channel; with_broker: the egress broker serves "fetch" on it. */
static inline void channel_fixture_open(struct channel_fixture *fx, const char *policy_json,
                                        bool with_broker)
{
	const struct mcpx_policy_opts opts = {.credentials_allowed = true};
	const struct mcpx_broker_opts bo = {0};
	struct mcpx_err err = {{0}};
	size_t len = strlen(policy_json);
	int f;

	memset(fx, 0, sizeof(*fx));
	fx->fd = -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/mcpx-test-channel-XXXXXX");
	CHECK(mkdtemp(fx->dir) != NULL);
	snprintf(fx->path, sizeof(fx->path), "%s/policy.json", fx->dir);
	f = open(fx->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(f >= 0 && write(f, policy_json, len) == (ssize_t)len);
	if (f >= 0)
		close(f);
	fx->loop = mcpx_loop_new();
	CHECK(fx->loop != NULL);
	CHECK_INT(mcpx_policy_store_open(fx->path, &opts, &fx->store, &err), 0);
	if (with_broker) {
		fx->http = mcpx_curl_loop_new(fx->loop, "test");
		CHECK_INT(mcpx_broker_new(fx->http, fx->store, &bo, &fx->broker, &err), 0);
	}
	fx->rc = mcpx_run_channel_new(fx->loop, fx->store);
	CHECK(fx->rc != NULL);
	if (with_broker)
		CHECK_INT(mcpx_broker_serve(fx->broker, fx->rc), 0);
}

/* Starts who's run on a socketpair (the channel takes one end); the test
 * plays the run on fx->fd. */
static inline struct mcpx_run_channel_run *channel_fixture_start(struct channel_fixture *fx,
                                                                 const struct mcpx_run_who *who)
{
	struct mcpx_run_channel_run *run;
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
	run = mcpx_run_channel_start(fx->rc, &sv[0], who);
	CHECK(run != NULL && sv[0] == -1);
	fx->fd = sv[1];
	return run;
}

/* One frame of json with no body into frame (cap bytes); its length. */
static inline size_t channel_fixture_frame(unsigned char *frame, size_t cap, const char *json)
{
	size_t n = strlen(json);

	CHECK(n < 256 && MCPX_WIRE_HEADER_LEN + n <= cap);
	memset(frame, 0, MCPX_WIRE_HEADER_LEN);
	frame[3] = (unsigned char)n;
	memcpy(frame + MCPX_WIRE_HEADER_LEN, json, n);
	return MCPX_WIRE_HEADER_LEN + n;
}

/* Writes one frame of json (no body) as the run. */
static inline void channel_fixture_send(struct channel_fixture *fx, const char *json)
{
	unsigned char frame[MCPX_WIRE_HEADER_LEN + 256];
	size_t n = channel_fixture_frame(frame, sizeof(frame), json);

	CHECK(write(fx->fd, frame, n) == (ssize_t)n);
}

static inline void channel_fixture_close(struct channel_fixture *fx)
{
	if (fx->fd >= 0)
		close(fx->fd);
	mcpx_run_channel_free(fx->rc);
	mcpx_broker_free(fx->broker);
	mcpx_curl_loop_free(fx->http);
	mcpx_policy_store_free(fx->store);
	if (fx->loop)
		mcpx_loop_free(fx->loop);
	unlink(fx->path);
	rmdir(fx->dir);
}

#endif
