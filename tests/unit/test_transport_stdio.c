/*
 * test_transport_stdio.c - the stdin framing (mcpx_lines) on its own: lines
 * split across reads, CRLF, empty lines, the last line without a newline,
 * and an over-long line dropped up to its newline and reported once.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "transport_stdio.h"

struct seen {
	char lines[8][64];
	int n;
	int drops;
	int last_err;
};

static void on_line(void *arg, const char *line, size_t len)
{
	struct seen *s = arg;

	if (s->n < 8 && len < sizeof(s->lines[0]))
		memcpy(s->lines[s->n], line, len);
	s->n++;
}

static void on_drop(void *arg, int err)
{
	struct seen *s = arg;

	s->drops++;
	s->last_err = err;
}

/* Feeds text in pieces of `step` bytes. */
static void feed(struct mcpx_lines *l, const char *text, size_t step)
{
	size_t n = strlen(text);

	for (size_t i = 0; i < n; i += step)
		mcpx_lines_feed(l, text + i, n - i < step ? n - i : step);
}

int main(void)
{
	static const char input[] = "one\r\n\n\r\ntwo\n123456789012\nthree\nlast";
	struct mcpx_lines l;

	/* Whatever the read sizes, the same lines come out. */
	for (size_t step = 1; step <= sizeof(input); step++) {
		struct seen s;

		memset(&s, 0, sizeof(s));
		mcpx_lines_init(&l, 10, on_line, on_drop, &s);
		feed(&l, input, step);
		CHECK_INT(s.n, 3);
		mcpx_lines_finish(&l);
		CHECK_INT(s.n, 4);
		CHECK_STR(s.lines[0], "one");
		CHECK_STR(s.lines[1], "two");
		CHECK_STR(s.lines[2], "three");
		CHECK_STR(s.lines[3], "last");
		/* The 12-byte line passed the cap of 10: dropped, reported once. */
		CHECK_INT(s.drops, 1);
		CHECK_INT(s.last_err, -E2BIG);
		mcpx_lines_free(&l);
	}

	/* A line exactly at the cap passes; a dropped line left open at EOF is
	 * not delivered. */
	{
		struct seen s;

		memset(&s, 0, sizeof(s));
		mcpx_lines_init(&l, 4, on_line, on_drop, &s);
		feed(&l, "abcd\nabcdefgh", 3);
		mcpx_lines_finish(&l);
		CHECK_INT(s.n, 1);
		CHECK_STR(s.lines[0], "abcd");
		CHECK_INT(s.drops, 1);
		/* The framer is usable again after EOF. */
		feed(&l, "x\n", 1);
		CHECK_INT(s.n, 2);
		CHECK_STR(s.lines[1], "x");
		mcpx_lines_free(&l);
	}
	CHECK_DONE();
}
