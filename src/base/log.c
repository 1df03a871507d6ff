/*
 * log.c - leveled log lines on stderr, one write(2) per line.
 *
 * Each line is built in a fixed buffer and written with a single write, so
 * lines never interleave with the audit records or with each other. Messages
 * are escaped for JSON; the logger itself never sees user data because its
 * callers pass metadata only.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum mcpx_log_format log_format = MCPX_LOG_JSON;
static enum mcpx_log_level log_min = MCPX_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void mcpx_log_setup(enum mcpx_log_format format, enum mcpx_log_level min_level)
{
	log_format = format;
	log_min = min_level;
}

/* Appends s to buf as JSON string content (no quotes), truncating safely. */
static size_t json_escape(char *buf, size_t cap, size_t off, const char *s)
{
	for (; *s && off + 7 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			buf[off++] = '\\';
			buf[off++] = (char)c;
		} else if (c < 0x20) {
			off += (size_t)snprintf(buf + off, cap - off, "\\u%04x", c);
		} else {
			buf[off++] = (char)c;
		}
	}
	return off;
}

static void write_all(const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, p, len);
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

void mcpx_log(enum mcpx_log_level level, const char *fields_json, const char *fmt, ...)
{
	char msg[1024], line[2048], ts[96];
	struct timespec now;
	struct tm tm;
	va_list ap;
	size_t off;

	if (level < log_min)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 now.tv_nsec / 1000000);

	if (log_format == MCPX_LOG_TEXT) {
		off = (size_t)snprintf(line, sizeof(line), "%s %-5s %s", ts, level_names[level], msg);
		if (off >= sizeof(line))
			off = sizeof(line) - 2;
		if (fields_json && off + 3 < sizeof(line))
			off += (size_t)snprintf(line + off, sizeof(line) - off - 1, " {%s}", fields_json);
		if (off > sizeof(line) - 2)
			off = sizeof(line) - 2;
	} else {
		off = (size_t)snprintf(line, sizeof(line), "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"",
				       ts, level_names[level]);
		off = json_escape(line, sizeof(line) - 4, off, msg);
		line[off++] = '"';
		if (fields_json && off + strlen(fields_json) + 3 < sizeof(line)) {
			line[off++] = ',';
			memcpy(line + off, fields_json, strlen(fields_json));
			off += strlen(fields_json);
		}
		line[off++] = '}';
	}
	line[off++] = '\n';
	write_all(line, off);
}

void mcpx_log_raw_line(const char *line, unsigned long len)
{
	char buf[4096];
	if (len + 1 > sizeof(buf)) {
		write_all(line, len);
		write_all("\n", 1);
		return;
	}
	memcpy(buf, line, len);
	buf[len] = '\n';
	write_all(buf, len + 1);
}
