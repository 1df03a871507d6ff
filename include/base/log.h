/*
 * log.h - a tiny logging API: leveled lines on stderr, JSON or text.
 *
 * stdout belongs to the MCP stdio transport, so nothing here ever writes to
 * it. Messages are metadata only; callers never pass code, stdin, output or
 * header values (the audit log in audit.h has the same rule).
 */
#ifndef MCPX_LOG_H
#define MCPX_LOG_H

enum mcpx_log_level { MCPX_LOG_DEBUG, MCPX_LOG_INFO, MCPX_LOG_WARN, MCPX_LOG_ERROR };
enum mcpx_log_format { MCPX_LOG_JSON, MCPX_LOG_TEXT };

void mcpx_log_setup(enum mcpx_log_format format, enum mcpx_log_level min_level);

/* One line: level, message, then optional pre-rendered JSON members (without
 * braces, e.g. "\"queue\":3"), or NULL. */
void mcpx_log(enum mcpx_log_level level, const char *fields_json, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Writes one complete JSON object as its own stderr line (the audit record);
 * in text format it is written as is. */
void mcpx_log_raw_line(const char *line, unsigned long len);

#define mcpx_debug(...) mcpx_log(MCPX_LOG_DEBUG, NULL, __VA_ARGS__)
#define mcpx_info(...) mcpx_log(MCPX_LOG_INFO, NULL, __VA_ARGS__)
#define mcpx_warn(...) mcpx_log(MCPX_LOG_WARN, NULL, __VA_ARGS__)
#define mcpx_error(...) mcpx_log(MCPX_LOG_ERROR, NULL, __VA_ARGS__)

#endif
