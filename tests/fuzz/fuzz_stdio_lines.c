/*
 * fuzz_stdio_lines.c - the stdin framing of the stdio transport (mcpx_lines)
 * against a reference: whatever the bytes and however read() cuts them, the
 * framer must deliver exactly the lines a plain split on "\n" gives (trailing
 * CRs removed, empty lines skipped, lines over the cap dropped and reported
 * once), never a line over the cap, never one with a newline in it.
 *
 * Input: byte 0 picks the cap (1..64), byte 1 seeds the read sizes, the rest
 * is stdin.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport_stdio.h"

#define MAX_EVENTS 4096

/* One delivered line (or a drop) as the framer reported it. */
struct event {
	const char *line; /* NULL for a drop */
	size_t len;
};

struct log {
	struct event ev[MAX_EVENTS];
	size_t n;
	char *store; /* copies of the lines */
	size_t used, cap;
};

static void record(struct log *lg, const char *line, size_t len)
{
	if (lg->n >= MAX_EVENTS)
		abort();
	if (line) {
		memcpy(lg->store + lg->used, line, len);
		line = lg->store + lg->used;
		lg->used += len;
	}
	lg->ev[lg->n].line = line;
	lg->ev[lg->n].len = len;
	lg->n++;
}

static size_t cap_of;

static void on_line(void *arg, const char *line, size_t len)
{
	/* The contract: non-empty, within the cap, no newline, no trailing CR. */
	if (len == 0 || len > cap_of || memchr(line, '\n', len) || line[len - 1] == '\r')
		abort();
	record(arg, line, len);
}

static void on_drop(void *arg, int err)
{
	if (err != -E2BIG)
		abort();
	record(arg, NULL, 0);
}

/* The reference: split the whole input at once. */
static void reference(const char *p, size_t n, size_t cap, struct log *lg)
{
	while (n > 0 || p) {
		const char *nl = n ? memchr(p, '\n', n) : NULL;
		size_t len = nl ? (size_t)(nl - p) : n;

		if (len > cap) {
			record(lg, NULL, 0);
		} else {
			size_t l = len;
			while (l && p[l - 1] == '\r')
				l--;
			if (l)
				record(lg, p, l);
		}
		if (!nl)
			break;
		p = nl + 1;
		n -= len + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct log got, want;
	struct mcpx_lines l;
	const char *in;
	size_t n, off = 0;
	unsigned seed;

	if (size < 2)
		return 0;
	cap_of = (size_t)(data[0] % 64) + 1;
	seed = data[1];
	in = (const char *)data + 2;
	n = size - 2;
	if (n / 2 + 1 > MAX_EVENTS)
		return 0;
	memset(&got, 0, offsetof(struct log, store));
	memset(&want, 0, offsetof(struct log, store));
	got.store = malloc(n + 1);
	want.store = malloc(n + 1);
	got.used = want.used = 0;

	mcpx_lines_init(&l, cap_of, on_line, on_drop, &got);
	while (off < n) {
		/* Read sizes from 1 to 17 bytes, in a pattern the input picks. */
		size_t step = (seed = seed * 1103515245u + 12345u) >> 16;
		step = step % 17 + 1;
		if (step > n - off)
			step = n - off;
		mcpx_lines_feed(&l, in + off, step);
		off += step;
	}
	mcpx_lines_finish(&l);
	mcpx_lines_free(&l);
	reference(in, n, cap_of, &want);

	if (got.n != want.n)
		abort();
	for (size_t i = 0; i < got.n; i++) {
		const struct event *a = &got.ev[i], *b = &want.ev[i];
		if ((a->line == NULL) != (b->line == NULL) || a->len != b->len ||
		    (a->line && memcmp(a->line, b->line, a->len) != 0))
			abort();
	}
	free(got.store);
	free(want.store);
	return 0;
}
