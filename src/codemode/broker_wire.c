/*
 * broker_wire.c - frames on a run's broker channel (broker_wire.h).
 *
 * The reader is a small state machine over the three parts of a frame, fed
 * with whatever a read() returned; it never trusts a length before checking
 * it against its cap. The writer keeps a queue of frames and sends each
 * header, its JSON and a large body with one gathered sendmsg, without
 * copying them together.
 */
#include "broker_wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

struct mcpx_wire_frame {
	struct mcpx_wire_frame *next;
	unsigned char hdr[MCPX_WIRE_HEADER_LEN];
	char *json;
	size_t json_len;
	char *body;
	size_t body_len;
	size_t off; /* bytes of hdr + json + body already written */
	void *tag;
};

static uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

void mcpx_wire_in_init(struct mcpx_wire_in *in, size_t body_cap)
{
	memset(in, 0, sizeof(*in));
	in->body_cap = body_cap;
	mcpx_buf_init(&in->json, MCPX_WIRE_MAX_JSON);
	mcpx_buf_init(&in->body, body_cap);
}

void mcpx_wire_in_free(struct mcpx_wire_in *in)
{
	mcpx_buf_free(&in->json);
	mcpx_buf_free(&in->body);
}

void mcpx_wire_in_next(struct mcpx_wire_in *in)
{
	in->hdr_len = 0;
	in->json_len = in->body_len = 0;
	in->body_seen = 0;
	in->oversize = false;
	mcpx_buf_reset(&in->json);
	/* A large body's memory is not kept for the next, small frame. */
	mcpx_buf_free(&in->body);
}

int mcpx_wire_in_feed(struct mcpx_wire_in *in, const char *p, size_t n, size_t *used)
{
	size_t i = 0;

	while (in->hdr_len < MCPX_WIRE_HEADER_LEN && i < n)
		in->hdr[in->hdr_len++] = (unsigned char)p[i++];
	if (in->hdr_len < MCPX_WIRE_HEADER_LEN) {
		*used = i;
		return 0;
	}
	if (!in->json_len) {
		in->json_len = get_be32(in->hdr);
		in->body_len = get_be32(in->hdr + 4);
		if (in->json_len == 0 || in->json_len > MCPX_WIRE_MAX_JSON)
			return -EPROTO;
		in->oversize = in->body_len > in->body_cap;
	}
	if (in->json.len < in->json_len && i < n) {
		size_t take =
		    in->json_len - in->json.len < n - i ? in->json_len - in->json.len : n - i;

		if (mcpx_buf_add(&in->json, p + i, take) < 0)
			return -ENOMEM;
		i += take;
	}
	if (in->json.len == in->json_len && in->body_seen < in->body_len && i < n) {
		size_t take =
		    in->body_len - in->body_seen < n - i ? in->body_len - in->body_seen : n - i;

		if (!in->oversize && mcpx_buf_add(&in->body, p + i, take) < 0)
			return -ENOMEM;
		in->body_seen += take;
		i += take;
	}
	*used = i;
	return in->json.len == in->json_len && in->body_seen == in->body_len ? 1 : 0;
}

int mcpx_wire_out_push(struct mcpx_wire_out *out, const char *json, size_t json_len, char *body,
                       size_t body_len, void *tag)
{
	struct mcpx_wire_frame *f = calloc(1, sizeof(*f));

	if (!f || !(f->json = malloc(json_len ? json_len : 1)) || json_len > UINT32_MAX ||
	    body_len > UINT32_MAX) {
		if (f)
			free(f->json);
		free(f);
		free(body);
		return -ENOMEM;
	}
	put_be32(f->hdr, (uint32_t)json_len);
	put_be32(f->hdr + 4, (uint32_t)body_len);
	memcpy(f->json, json, json_len);
	f->json_len = json_len;
	f->body = body;
	f->body_len = body_len;
	f->tag = tag;
	if (out->tail)
		out->tail->next = f;
	else
		out->head = f;
	out->tail = f;
	out->queued++;
	out->bytes += MCPX_WIRE_HEADER_LEN + json_len + body_len;
	return 0;
}

static void pop_frame(struct mcpx_wire_out *out)
{
	struct mcpx_wire_frame *f = out->head;

	out->head = f->next;
	if (!out->head)
		out->tail = NULL;
	out->queued--;
	out->bytes -= MCPX_WIRE_HEADER_LEN + f->json_len + f->body_len - f->off;
	free(f->json);
	free(f->body);
	free(f);
}

/* The unwritten rest of the head frame as up to three iovecs. */
static int frame_iov(const struct mcpx_wire_frame *f, struct iovec iov[3])
{
	const struct {
		const void *p;
		size_t len;
	} parts[3] = {
	    {f->hdr, MCPX_WIRE_HEADER_LEN}, {f->json, f->json_len}, {f->body, f->body_len}};
	size_t skip = f->off;
	int n = 0;

	for (int i = 0; i < 3; i++) {
		if (skip >= parts[i].len) {
			skip -= parts[i].len;
			continue;
		}
		iov[n].iov_base = (char *)parts[i].p + skip;
		iov[n].iov_len = parts[i].len - skip;
		skip = 0;
		n++;
	}
	return n;
}

int mcpx_wire_out_flush(struct mcpx_wire_out *out, int fd, void (*sent)(void *tag, void *arg),
                        void *arg)
{
	while (out->head) {
		struct mcpx_wire_frame *f = out->head;
		struct iovec iov[3];
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)frame_iov(f, iov)};
		/* A run that closed its end must not raise SIGPIPE in the server. */
		ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		void *tag;

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		if (w < 0)
			return -errno;
		f->off += (size_t)w;
		out->bytes -= (size_t)w;
		if (f->off < MCPX_WIRE_HEADER_LEN + f->json_len + f->body_len)
			continue;
		tag = f->tag;
		pop_frame(out);
		if (sent)
			sent(tag, arg);
	}
	return 0;
}

void mcpx_wire_out_clear(struct mcpx_wire_out *out, void (*dropped)(void *tag, void *arg),
                         void *arg)
{
	while (out->head) {
		void *tag = out->head->tag;

		pop_frame(out);
		if (dropped)
			dropped(tag, arg);
	}
}
