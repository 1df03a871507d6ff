/*
 * tool_progress.h - what a tool call tells its client while its run waits
 * and runs: the queue position and the start as notifications/message, the
 * output so far as rate-limited notifications/progress (when the request
 * carried a progressToken). Shared by the tools that run code (tool_exec.c,
 * tool_function.c) so every run reports alike.
 */
#ifndef MCPX_TOOL_PROGRESS_H
#define MCPX_TOOL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor.h"

struct mcpx_call;

/* Progress notifications at most every 250 ms (about 4 per second): enough
 * to show a long run is alive, few enough not to flood the client ("Both
 * parties SHOULD implement rate limiting", basic/utilities/progress). */
#define MCPX_PROGRESS_INTERVAL_US 250000
/* How much of the latest output a progress message carries. */
#define MCPX_PROGRESS_TAIL_BYTES 200

/* One call's relay; zeroed, then call set. */
struct mcpx_progress {
	struct mcpx_call *call;
	/* Progress counts the output without quoting it: a function's prints
	 * are its author's, not part of its result. */
	bool quiet;
	uint64_t last_us;
	size_t last_bytes;
};

/* Relays the executor's event ev (executor.h) about job to the call. job
 * may be NULL (no output is relayed then). */
void mcpx_progress_event(struct mcpx_progress *p, const struct mcpx_job *job,
                         enum mcpx_job_event ev, size_t pos);

/* The progress message for output bytes: valid UTF-8, NUL bytes (which
 * would cut a C string short) shown as U+FFFD. Caller frees; NULL when out
 * of memory. */
char *mcpx_progress_text(const char *buf, size_t len);

#endif
