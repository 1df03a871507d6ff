/*
 * sse.c - incremental text/event-stream parser (see sse.h).
 *
 * It splits the stream into lines, interprets the event: and data: fields,
 * ignores comments, id: and retry:, and hands each finished event to the
 * callback. It does not reconnect, track Last-Event-ID or parse the data:
 * the Streamable HTTP reply to one POST is a single finite stream.
 */
#include "sse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends (s, n) to a growable buffer, keeping room for a NUL, never past
 * max bytes of content. */
static int buf_append(char **buf, size_t *len, size_t *cap, size_t max, const char *s, size_t n)
{
	if (n > max || *len > max - n)
		return -E2BIG;
	if (*len + n + 1 > *cap) {
		size_t ncap = *cap ? *cap : 256;
		char *nb;

		while (ncap < *len + n + 1)
			ncap *= 2;
		nb = realloc(*buf, ncap);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = ncap;
	}
	if (n)
		memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

static int dispatch(struct sse_parser *p)
{
	int rc = 0;

	/* "If the data buffer is an empty string, set the data buffer and the
	 * event type buffer to the empty string and return." */
	if (p->have_data) {
		/* The data lines were joined with a trailing LF each; the last
		 * one is not part of the data. */
		if (p->data_len && p->data[p->data_len - 1] == '\n')
			p->data[--p->data_len] = '\0';
		rc = p->on_event(p->arg, p->event[0] ? p->event : "message", p->data ? p->data : "",
		                 p->data_len);
	}
	p->data_len = 0;
	if (p->data)
		p->data[0] = '\0';
	p->have_data = false;
	p->event[0] = '\0';
	return rc;
}

static int process_line(struct sse_parser *p, const char *line, size_t len)
{
	const char *colon, *value;
	size_t name_len, value_len;
	int rc;

	if (!p->started) {
		/* A UTF-8 byte order mark may start the stream; the spec drops
		 * it. */
		p->started = true;
		if (len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) {
			line += 3;
			len -= 3;
		}
	}
	if (len == 0)
		return dispatch(p);
	if (line[0] == ':')
		return 0; /* a comment, e.g. a keepalive */
	colon = memchr(line, ':', len);
	name_len = colon ? (size_t)(colon - line) : len;
	value = colon ? colon + 1 : line + len;
	value_len = len - (size_t)(value - line);
	if (value_len && value[0] == ' ') {
		value++;
		value_len--;
	}
	if (name_len == 4 && !memcmp(line, "data", 4)) {
		rc = buf_append(&p->data, &p->data_len, &p->data_cap, p->max, value, value_len);
		if (rc == 0)
			rc = buf_append(&p->data, &p->data_len, &p->data_cap, p->max, "\n", 1);
		p->have_data = true;
		return rc;
	}
	if (name_len == 5 && !memcmp(line, "event", 5)) {
		/* A name longer than any we act on can only mean "not a
		 * message"; it is kept as an unknown type, never truncated into
		 * a known one. */
		if (value_len < sizeof(p->event)) {
			memcpy(p->event, value, value_len);
			p->event[value_len] = '\0';
		} else {
			snprintf(p->event, sizeof(p->event), "#unknown");
		}
	}
	return 0;
}

int sse_feed(struct sse_parser *p, const char *buf, size_t len)
{
	size_t i = 0;
	int rc;

	while (i < len) {
		size_t j = i;

		if (p->after_cr) {
			p->after_cr = false;
			if (buf[i] == '\n') {
				i++;
				continue;
			}
		}
		while (j < len && buf[j] != '\n' && buf[j] != '\r')
			j++;
		rc = buf_append(&p->line, &p->line_len, &p->line_cap, p->max, buf + i, j - i);
		if (rc < 0)
			return rc;
		if (j == len)
			break; /* the line continues in the next chunk */
		p->after_cr = buf[j] == '\r';
		rc = process_line(p, p->line ? p->line : "", p->line_len);
		p->line_len = 0;
		if (rc < 0)
			return rc;
		i = j + 1;
	}
	return 0;
}

int sse_finish(struct sse_parser *p)
{
	int rc = 0;

	if (p->line_len) {
		rc = process_line(p, p->line, p->line_len);
		p->line_len = 0;
	}
	if (rc == 0)
		rc = dispatch(p);
	return rc;
}

void sse_free(struct sse_parser *p)
{
	free(p->line);
	free(p->data);
	p->line = p->data = NULL;
	p->line_len = p->line_cap = p->data_len = p->data_cap = 0;
}
