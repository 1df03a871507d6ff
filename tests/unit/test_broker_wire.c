/*
 * test_broker_wire.c - the broker channel's framing: frames split anywhere
 * and frames packed together come out whole; an oversize body is dropped
 * without losing step; bad lengths are protocol errors; queued frames are
 * written in order through a full socket, each reported once sent.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker_wire.h"
#include "check.h"

static size_t frame(char *out, const char *json, const char *body, size_t blen)
{
	size_t jl = strlen(json);

	out[0] = (char)(jl >> 24), out[1] = (char)(jl >> 16), out[2] = (char)(jl >> 8),
	out[3] = (char)jl;
	out[4] = (char)(blen >> 24), out[5] = (char)(blen >> 16), out[6] = (char)(blen >> 8),
	out[7] = (char)blen;
	memcpy(out + 8, json, jl);
	memcpy(out + 8 + jl, body, blen);
	return 8 + jl + blen;
}

/* Feeds data in pieces of step bytes; collects "json|body|oversize" lines. */
static int feed_all(struct mcpx_wire_in *in, const char *data, size_t len, size_t step, char *log,
                    size_t cap)
{
	size_t off = 0;

	log[0] = '\0';
	while (off < len) {
		size_t n = len - off < step ? len - off : step, used = 0, o = 0;

		while (o < n) {
			int rc = mcpx_wire_in_feed(in, data + off + o, n - o, &used);

			if (rc < 0)
				return rc;
			o += used;
			if (rc == 1) {
				size_t l = strlen(log);

				snprintf(log + l, cap - l, "%s|%.*s|%d\n", mcpx_buf_str(&in->json),
				         (int)in->body.len, in->body.data ? in->body.data : "",
				         in->oversize);
				mcpx_wire_in_next(in);
			}
		}
		off += n;
	}
	return 0;
}

static void test_reader(void)
{
	char data[512], log[512];
	size_t len = 0;
	struct mcpx_wire_in in;

	len += frame(data + len, "{\"id\":1}", "body-one", 8);
	len += frame(data + len, "{\"id\":2}", "", 0);
	len += frame(data + len, "{\"id\":3}", "0123456789abcdef", 16); /* over the cap of 10 */
	len += frame(data + len, "{\"id\":4}", "ok", 2);
	for (size_t step = 1; step <= len; step = step * 2 + 1) {
		mcpx_wire_in_init(&in, 10);
		CHECK_INT(feed_all(&in, data, len, step, log, sizeof(log)), 0);
		CHECK_STR(log,
		          "{\"id\":1}|body-one|0\n{\"id\":2}||0\n{\"id\":3}||1\n{\"id\":4}|ok|0\n");
		mcpx_wire_in_free(&in);
	}

	/* An empty or oversized JSON part cannot be skipped safely. */
	mcpx_wire_in_init(&in, 10);
	memset(data, 0, 8);
	CHECK_INT(feed_all(&in, data, 8, 8, log, sizeof(log)), -EPROTO);
	mcpx_wire_in_free(&in);
	mcpx_wire_in_init(&in, 10);
	memcpy(data, "\x00\x01\x00\x01\x00\x00\x00\x00", 8);
	CHECK_INT(feed_all(&in, data, 8, 3, log, sizeof(log)), -EPROTO);
	mcpx_wire_in_free(&in);
	mcpx_wire_in_init(&in, 10);
	memcpy(data, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
	CHECK_INT(feed_all(&in, data, 8, 8, log, sizeof(log)), -EPROTO);
	mcpx_wire_in_free(&in);
}

static void sent_cb(void *tag, void *arg)
{
	char *order = arg;
	size_t l = strlen(order);

	order[l] = (char)(size_t)tag;
	order[l + 1] = '\0';
}

static void test_writer(void)
{
	struct mcpx_wire_out out = {0};
	struct mcpx_wire_in in;
	char order[8] = "", log[256];
	size_t big = 1 << 20, got = 0;
	char *body = malloc(big), *buf = malloc(big + 4096);
	int sv[2], rc, sndbuf = 4096;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	memset(body, 'b', big);
	CHECK_INT(mcpx_wire_out_push(&out, "{\"id\":1}", 8, body, big, (void *)'1'), 0);
	CHECK_INT(mcpx_wire_out_push(&out, "{\"id\":2}", 8, NULL, 0, (void *)'2'), 0);
	CHECK_INT(out.queued, 2);
	/* The bytes still to write: what the broker's cap counts. */
	CHECK_INT(out.bytes, 8 + 8 + big + 8 + 8);
	/* The socket fills up long before a megabyte: the rest waits. */
	rc = mcpx_wire_out_flush(&out, sv[0], sent_cb, order);
	CHECK_INT(rc, 1);
	CHECK_STR(order, "");
	CHECK(out.bytes > 16 && out.bytes < 8 + 8 + big + 8 + 8);
	mcpx_wire_in_init(&in, big);
	log[0] = '\0';
	while (rc == 1 || got < big + 8 + 8 + 8 + 8) {
		struct pollfd p = {sv[1], POLLIN, 0};
		ssize_t n;

		CHECK(poll(&p, 1, 10000) == 1);
		n = read(sv[1], buf, 4096);
		if (n <= 0)
			break;
		got += (size_t)n;
		for (size_t o = 0; o < (size_t)n;) {
			size_t used = 0;
			int r = mcpx_wire_in_feed(&in, buf + o, (size_t)n - o, &used);

			CHECK(r >= 0);
			o += used;
			if (r == 1) {
				size_t l = strlen(log);

				snprintf(log + l, sizeof(log) - l, "%s:%zu ",
				         mcpx_buf_str(&in.json), in.body.len);
				mcpx_wire_in_next(&in);
			}
		}
		if (rc == 1)
			rc = mcpx_wire_out_flush(&out, sv[0], sent_cb, order);
	}
	CHECK_INT(rc, 0);
	CHECK_STR(order, "12");
	CHECK_INT(out.bytes, 0);
	CHECK_STR(log, "{\"id\":1}:1048576 {\"id\":2}:0 ");
	mcpx_wire_in_free(&in);

	/* A closed peer is an error, and clearing drops what is queued. */
	CHECK_INT(mcpx_wire_out_push(&out, "{}", 2, NULL, 0, (void *)'3'), 0);
	close(sv[1]);
	CHECK_INT(mcpx_wire_out_flush(&out, sv[0], sent_cb, order), -EPIPE);
	mcpx_wire_out_clear(&out, sent_cb, order);
	CHECK_STR(order, "123");
	CHECK_INT(out.queued, 0);
	CHECK_INT(out.bytes, 0);
	close(sv[0]);
	free(buf);
}

int main(void)
{
	test_reader();
	test_writer();
	CHECK_DONE();
}
