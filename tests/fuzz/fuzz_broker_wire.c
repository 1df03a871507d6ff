/*
 * fuzz_broker_wire.c - the framing of a run's broker channel
 * (broker_wire.h), the bytes a run controls completely.
 *
 * The input is fed to mcpx_wire_in in chunks whose sizes come from the
 * input itself (byte 0 seeds them), as read() might return them, and every
 * frame it yields is compared with an independent reading of the same bytes
 * (the header's two big-endian lengths, the JSON, the body). Beyond the
 * sanitizers it checks: a frame that differs from that reading; a body kept
 * that is larger than the reader's cap, or dropped that is not; a JSON part
 * that is empty or over MCPX_WIRE_MAX_JSON and not refused (-EPROTO); bytes
 * consumed out of order. Each good frame is then written back through
 * mcpx_wire_out over a socketpair and read again, which must give the same
 * frame (the writer's partial writes included: the socket buffer is small).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker_wire.h"

#define BODY_CAP 4096

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void sent(void *tag, void *arg)
{
	(*(int *)arg)++;
	(void)tag;
}

/* Writes one frame through mcpx_wire_out and reads it back. */
static void round_trip(const char *json, size_t jl, const char *body, size_t bl)
{
	struct mcpx_wire_out out = {0};
	struct mcpx_wire_in in;
	int sv[2], n_sent = 0, rc = 1, got = 0;
	char *copy = bl ? malloc(bl) : NULL, buf[512];
	int sz = 4096;

	if ((bl && !copy) || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		free(copy);
		return;
	}
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (bl)
		memcpy(copy, body, bl);
	if (mcpx_wire_out_push(&out, json, jl, copy, bl, NULL) < 0)
		abort();
	mcpx_wire_in_init(&in, BODY_CAP);
	while (!got) {
		ssize_t r;

		if (rc > 0 && (rc = mcpx_wire_out_flush(&out, sv[0], sent, &n_sent)) < 0)
			abort();
		r = read(sv[1], buf, sizeof(buf));
		if (r <= 0)
			abort();
		for (size_t off = 0; off < (size_t)r;) {
			size_t used = 0;
			int f = mcpx_wire_in_feed(&in, buf + off, (size_t)r - off, &used);

			if (f < 0 || (f == 0 && used != (size_t)r - off) || (got && used))
				abort();
			off += used;
			if (f == 1) {
				if (got || in.json.len != jl ||
				    memcmp(in.json.data, json, jl) != 0 ||
				    in.oversize != (bl > BODY_CAP) ||
				    (!in.oversize && (in.body.len != bl ||
				                      (bl && memcmp(in.body.data, body, bl) != 0))))
					abort();
				got = 1;
			}
		}
	}
	if (mcpx_wire_out_flush(&out, sv[0], sent, &n_sent) != 0 || n_sent != 1 || out.queued)
		abort();
	mcpx_wire_in_free(&in);
	close(sv[0]);
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mcpx_wire_in in;
	size_t pos = 1, ref = 1; /* bytes fed, bytes of the reference reading */
	unsigned seed;
	int frames = 0;

	if (size < 1 || size > 1 << 20)
		return 0;
	seed = data[0];
	mcpx_wire_in_init(&in, BODY_CAP);
	while (pos < size) {
		size_t chunk = 1 + (seed = seed * 1103515245u + 12345u) % 97, used = 0;
		int rc;

		if (chunk > size - pos)
			chunk = size - pos;
		rc = mcpx_wire_in_feed(&in, (const char *)data + pos, chunk, &used);
		if (used > chunk)
			abort();
		if (rc == -EPROTO) {
			uint32_t jl;

			/* Only a header naming an empty or too large JSON part. */
			if (size - ref < 8)
				abort();
			jl = be32(data + ref);
			if (jl != 0 && jl <= MCPX_WIRE_MAX_JSON)
				abort();
			break;
		}
		if (rc < 0)
			break; /* -ENOMEM */
		pos += used;
		if (rc == 0 && used != chunk)
			abort();
		if (rc == 1) {
			uint32_t jl = be32(data + ref), bl = be32(data + ref + 4);

			if (jl == 0 || jl > MCPX_WIRE_MAX_JSON || ref + 8 + jl + bl != pos ||
			    in.json.len != jl || memcmp(in.json.data, data + ref + 8, jl) != 0 ||
			    in.oversize != (bl > BODY_CAP) ||
			    (!in.oversize &&
			     (in.body.len != bl ||
			      (bl && memcmp(in.body.data, data + ref + 8 + jl, bl)))))
				abort();
			if (frames++ < 4)
				round_trip(in.json.data, jl, in.body.data, in.oversize ? 0 : bl);
			ref = pos;
			mcpx_wire_in_next(&in);
		}
	}
	mcpx_wire_in_free(&in);
	return 0;
}
