/*
 * test_broker.c - the run channel's hold on what a run can make the server keep
 * (issue 21 A): a run that writes requests and never reads the answers is
 * not read either once a small queue of answers waits, so the bytes the
 * broker takes from the channel, and what it holds for the run (told to
 * who->held), stay bounded however much the run writes; once the run reads,
 * every request gets its answer. A real loop, turned by hand, and a
 * socketpair stand in for the server and the run.
 */
#include "broker.h"
#include "run_channel.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "broker_wire.h"
#include "channel_fixture.h"
#include "check.h"
#include "curl_lib.h"
#include "http_fixture.h"
#include "log.h"
#include "loop.h"

static uint64_t held_now, held_peak;

static void on_held(void *arg, uint64_t bytes)
{
	(void)arg;
	held_now = bytes;
	if (bytes > held_peak)
		held_peak = bytes;
}

/* Writes whole frames of an unknown op until the socket takes no more;
 * returns the frames written. A frame the socket took only in part is
 * finished with the loop turning, so the stream stays in step. */
static size_t write_frames(struct mcpx_loop *loop, int fd, size_t max)
{
	unsigned char frame[64];
	size_t len = channel_fixture_frame(frame, sizeof(frame), "{\"id\":1,\"op\":\"nope\"}");
	size_t n = 0;

	while (n < max) {
		ssize_t w = write(fd, frame, len);
		size_t off;

		if (w < 0)
			break;
		off = (size_t)w;
		for (int i = 0; off < len && i < 100000; i++) {
			mcpx_loop_turn(loop);
			w = write(fd, frame + off, len - off);
			if (w > 0)
				off += (size_t)w;
		}
		CHECK(off == len);
		n++;
	}
	return n;
}

/* Reads whole answers from fd, as many as are there; returns how many. */
static size_t read_answers(int fd, struct mcpx_wire_in *in, size_t *bad)
{
	char buf[65536];
	size_t n = 0;
	ssize_t r;

	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		for (size_t o = 0; o < (size_t)r;) {
			size_t used = 0;
			int rc = mcpx_wire_in_feed(in, buf + o, (size_t)r - o, &used);

			CHECK(rc >= 0);
			if (rc < 0)
				return n;
			o += used;
			if (rc == 1) {
				if (!strstr(mcpx_buf_str(&in->json), "\"bad_request\"") ||
				    !strstr(mcpx_buf_str(&in->json), "\"id\":1"))
					(*bad)++;
				n++;
				mcpx_wire_in_next(in);
			}
		}
	}
	return n;
}

/* The loopback server's answers for the egress tests. */
static void respond(struct http_fixture *fx, const struct http_fixture_req *req,
                    struct http_fixture_resp *resp)
{
	static char redirect[160];

	if (strcmp(req->path, "/ok/redirect") == 0) {
		snprintf(redirect, sizeof(redirect),
		         "HTTP/1.1 302 Found\r\nLocation: http://localhost:%d/elsewhere\r\n"
		         "Content-Length: 0\r\n\r\n",
		         fx->port);
		resp->piece[0] = redirect;
		return;
	}
	resp->piece[0] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
}

/* The run fetches url; the answer's JSON part (the caller frees). */
static char *fetch(struct channel_fixture *fx, const char *url)
{
	static unsigned id;
	struct mcpx_wire_in in;
	char json[256], buf[4096], *out = NULL;

	snprintf(json, sizeof(json), "{\"id\":%u,\"op\":\"fetch\",\"url\":\"%s\"}", ++id, url);
	channel_fixture_send(fx, json);
	mcpx_wire_in_init(&in, 1 << 20);
	for (int i = 0; i < 200000 && !out; i++) {
		ssize_t r = read(fx->fd, buf, sizeof(buf));

		for (size_t o = 0; r > 0 && o < (size_t)r && !out;) {
			size_t used = 0;

			if (mcpx_wire_in_feed(&in, buf + o, (size_t)r - o, &used) == 1)
				out = strdup(mcpx_buf_str(&in.json));
			o += used;
		}
		mcpx_loop_turn(fx->loop);
	}
	mcpx_wire_in_free(&in);
	CHECK(out != NULL);
	return out;
}

static void test_egress(void)
{
	struct mcpx_run_who who = {.run_id = "r2"};
	struct channel_fixture fx;
	struct mcpx_run_channel_run *run;
	struct http_fixture srv;
	char policy[1024], url[96], *a;
	int conns;

	if (!mcpx_curl_available()) {
		fprintf(stderr, "libcurl cannot be loaded: the egress tests are skipped\n");
		return;
	}
	REQUIRE(http_fixture_start(&srv, respond, NULL));
	snprintf(policy, sizeof(policy),
	         "{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://localhost:%d/ok/\", "
	         "\"allow_cidrs\": [\"127.0.0.0/8\", \"::1/128\"]}, "
	         "{\"name\": \"b\", \"url_prefix\": \"http://localhost:%d/b/\"}], "
	         "\"exec\": {\"egress\": [\"a\", \"b\"]}}",
	         srv.port, srv.port);
	channel_fixture_open(&fx, policy, true);
	run = channel_fixture_start(&fx, &who);

	/* The redirect leaves the rules: refused, and never requested. */
	snprintf(url, sizeof(url), "http://localhost:%d/ok/redirect", srv.port);
	a = fetch(&fx, url);
	CHECK(a && strstr(a, "\"reason\":\"redirect\""));
	free(a);
	CHECK_INT(http_fixture_count(&srv, "/elsewhere"), 0);

	/* Under rule a (loopback allowed) each fetch has its own connection;
	 * then rule b (no allow_cidrs) to the same host and port is refused
	 * at its connect, not given a's connection. */
	conns = http_fixture_conns(&srv);
	snprintf(url, sizeof(url), "http://localhost:%d/ok/plain", srv.port);
	for (int i = 0; i < 2; i++) {
		a = fetch(&fx, url);
		CHECK(a && strstr(a, "\"status\":200"));
		free(a);
	}
	CHECK_INT(http_fixture_conns(&srv) - conns, 2);
	snprintf(url, sizeof(url), "http://localhost:%d/b/plain", srv.port);
	a = fetch(&fx, url);
	CHECK(a && strstr(a, "\"reason\":\"address\""));
	free(a);
	CHECK_INT(http_fixture_count(&srv, "/b/plain"), 0);

	mcpx_run_channel_end(run);
	channel_fixture_close(&fx);
	http_fixture_stop(&srv);
}

int main(void)
{
	const char *json = "{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a.test/\"}], "
	                   "\"exec\": {\"egress\": [\"a\"], \"max_requests\": 1}}";
	struct mcpx_run_who who = {.run_id = "r1", .held = on_held};
	struct channel_fixture fx;
	struct mcpx_run_channel_run *run;
	struct mcpx_wire_in in;
	size_t written = 0, last = 0, answered = 0, bad = 0;

	/* Refusals past max_requests are counted, not audited: the log stays
	 * short. */
	mcpx_log_setup(MCPX_LOG_TEXT, MCPX_LOG_ERROR);
	channel_fixture_open(&fx, json, true);
	run = channel_fixture_start(&fx, &who);

	/* The run writes until the socket takes no more, the loop turns, and
	 * again: without the cap the broker empties the socket on every turn
	 * (and holds ~5 KiB per frame); with it, it stops once a queue of
	 * answers waits, and the run's writes block for good. */
	for (int round = 0; round < 5; round++) {
		last = write_frames(fx.loop, fx.fd, 20000);
		written += last;
		for (int i = 0; i < 20; i++)
			mcpx_loop_turn(fx.loop);
	}
	fprintf(stderr,
	        "frames written by a run that does not read: %zu (last round %zu); held at most "
	        "%llu bytes\n",
	        written, last, (unsigned long long)held_peak);
	CHECK_INT(last, 0);
	CHECK(held_peak > 0 && held_peak < 1u << 20);

	/* Once the run reads, every frame it wrote is answered. */
	mcpx_wire_in_init(&in, 1 << 20);
	for (int i = 0; i < 1000000 && answered < written; i++) {
		answered += read_answers(fx.fd, &in, &bad);
		mcpx_loop_turn(fx.loop);
	}
	CHECK_INT(answered, written);
	CHECK_INT(bad, 0);
	mcpx_wire_in_free(&in);
	CHECK(held_now < held_peak);

	/* Ids up to 2^53 - 1 come back exactly as sent, as integers (issue 21
	 * 7): before, 2^53 - 1 came back as 9.00719925474099e+15. */
	{
		static const char *ids[] = {"1125899906842625", "9007199254740991"};
		char json_id[64], buf[4096];

		for (size_t i = 0; i < 2; i++) {
			char want[64];
			ssize_t r = -1;

			snprintf(json_id, sizeof(json_id), "{\"id\":%s,\"op\":\"nope\"}", ids[i]);
			channel_fixture_send(&fx, json_id);
			for (int k = 0; k < 1000 && r <= 0; k++) {
				mcpx_loop_turn(fx.loop);
				r = read(fx.fd, buf, sizeof(buf) - 1);
			}
			CHECK(r > 8);
			buf[r > 0 ? r : 0] = '\0';
			snprintf(want, sizeof(want), "\"id\":%s,", ids[i]);
			CHECK(r > 8 && strstr(buf + 8, want) != NULL);
		}
	}

	mcpx_run_channel_end(run);
	channel_fixture_close(&fx);
	test_egress();
	CHECK_DONE();
}
