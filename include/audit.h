/*
 * audit.h - one JSON line per execution on stderr, metadata only.
 *
 * The record carries who asked (request id, caller), what was run only as a
 * SHA-256 and a size, and how it ended. Code, stdin, output and header values
 * never reach it: the struct has no field that could carry them.
 */
#ifndef MCPX_AUDIT_H
#define MCPX_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mcpx_audit_rec {
	const char *request_id;
	const char *caller;
	char code_sha256[65];
	size_t code_bytes;
	size_t stdin_bytes;
	const char *status; /* "ok", "timeout", "killed", "cancelled", "failed", "expired", "shutdown" */
	int exit_code;
	int signal;
	const char *limit;
	uint64_t wall_ms;
	uint64_t cpu_ms;
	uint64_t max_rss_kb;
	uint64_t queue_wait_ms;
	size_t output_bytes;
	bool truncated;
	bool warm;
};

void mcpx_audit_log(const struct mcpx_audit_rec *rec);

#endif
