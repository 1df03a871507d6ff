/*
 * buf.c - the capped growable buffer (buf.h).
 *
 * Growth doubles the allocation up to the cap (plus the terminator), so a
 * buffer that is filled byte by byte costs O(n) copies, and no allocation is
 * ever larger than the cap allows.
 */
#include "buf.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mcpx_buf_init(struct mcpx_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	b->max = max;
}

/* Makes room for n more bytes and the terminator. */
static int reserve(struct mcpx_buf *b, size_t n)
{
	size_t need, want;
	char *p;

	if (n > b->max - b->len)
		return -E2BIG;
	need = b->len + n + 1;
	if (need <= b->alloc)
		return 0;
	want = b->alloc ? b->alloc : 256;
	while (want < need)
		want = want > (SIZE_MAX / 2) ? need : want * 2;
	if (want > b->max + 1)
		want = b->max + 1;
	p = realloc(b->data, want);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->alloc = want;
	return 0;
}

int mcpx_buf_add(struct mcpx_buf *b, const void *p, size_t n)
{
	int rc = reserve(b, n);

	if (rc < 0)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

char *mcpx_buf_room(struct mcpx_buf *b, size_t n)
{
	return reserve(b, n) < 0 ? NULL : b->data + b->len;
}

void mcpx_buf_commit(struct mcpx_buf *b, size_t n)
{
	if (!b->data || n > b->alloc - 1 - b->len)
		return;
	b->len += n;
	b->data[b->len] = '\0';
}

long mcpx_buf_add_some(struct mcpx_buf *b, const void *p, size_t n)
{
	size_t room = b->max - b->len;
	int rc;

	if (n > room)
		n = room;
	if (n > (size_t)LONG_MAX)
		n = (size_t)LONG_MAX;
	rc = mcpx_buf_add(b, p, n);
	return rc < 0 ? rc : (long)n;
}

int mcpx_buf_adds(struct mcpx_buf *b, const char *s)
{
	return mcpx_buf_add(b, s, strlen(s));
}

int mcpx_buf_vaddf(struct mcpx_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n, rc;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return -EINVAL;
	rc = reserve(b, (size_t)n);
	if (rc < 0)
		return rc;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int mcpx_buf_addf(struct mcpx_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = mcpx_buf_vaddf(b, fmt, ap);
	va_end(ap);
	return rc;
}

const char *mcpx_buf_str(const struct mcpx_buf *b)
{
	return b->data ? b->data : "";
}

void mcpx_buf_reset(struct mcpx_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *mcpx_buf_take(struct mcpx_buf *b, size_t *len)
{
	char *p = b->len ? b->data : NULL;

	if (len)
		*len = b->len;
	if (!p)
		free(b->data);
	mcpx_buf_init(b, b->max);
	return p;
}

void mcpx_buf_free(struct mcpx_buf *b)
{
	free(b->data);
	mcpx_buf_init(b, b->max);
}
