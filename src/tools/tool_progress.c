/*
 * tool_progress.c - a run's events as MCP notifications for its call
 * (tool_progress.h): log messages when it is queued and when it starts,
 * and the tail of its output as progress (or only its size, for a quiet
 * relay), at most every MCPX_PROGRESS_INTERVAL_US and only when the output
 * grew.
 *
 * It does not decide whether the client gets them: the core drops log
 * messages below the session's level and progress without a token.
 */
#include "tool_progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "tool.h"
#include "utf8.h"

char *mcpx_progress_text(const char *buf, size_t len)
{
	size_t n, nuls = 0, o = 0;
	char *s = mcpx_utf8_sanitize(buf, len, &n), *t;

	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++)
		nuls += s[i] == '\0';
	if (!nuls)
		return s;
	t = malloc(n + nuls * 2 + 1);
	if (t) {
		for (size_t i = 0; i < n; i++) {
			if (s[i] == '\0') {
				memcpy(t + o, "\xEF\xBF\xBD", 3);
				o += 3;
			} else {
				t[o++] = s[i];
			}
		}
		t[o] = '\0';
	}
	free(s);
	return t;
}

static void relay_output(struct mcpx_progress *p, const struct mcpx_job *job, size_t bytes)
{
	const char *out = NULL;
	size_t n, start;
	uint64_t now;
	char *tail;

	if (!mcpx_call_has_progress(p->call) || !job)
		return;
	now = mcpx_now_us();
	if (p->last_us && now - p->last_us < MCPX_PROGRESS_INTERVAL_US)
		return;
	if (bytes <= p->last_bytes)
		return;

	/* The byte count only grows, which is what progress must do. */
	if (p->quiet) {
		mcpx_call_progress(p->call, (double)bytes, NULL);
	} else {
		n = mcpx_job_output(job, &out);
		start = n > MCPX_PROGRESS_TAIL_BYTES ? n - MCPX_PROGRESS_TAIL_BYTES : 0;
		/* Start on a character boundary, not inside a multi-byte one. */
		while (start < n && start > 0 && ((unsigned char)out[start] & 0xC0) == 0x80)
			start++;
		tail = mcpx_progress_text(out ? out + start : "", out ? n - start : 0);
		mcpx_call_progress(p->call, (double)bytes, tail ? tail : "");
		free(tail);
	}
	p->last_us = now;
	p->last_bytes = bytes;
}

void mcpx_progress_event(struct mcpx_progress *p, const struct mcpx_job *job,
                         enum mcpx_job_event ev, size_t pos)
{
	char msg[64];

	if (!p->call)
		return;
	switch (ev) {
	case MCPX_JOB_QUEUED:
		snprintf(msg, sizeof(msg), "queued at position %zu", pos);
		mcpx_call_log(p->call, MCPX_LEVEL_INFO, msg);
		break;
	case MCPX_JOB_STARTED:
		mcpx_call_log(p->call, MCPX_LEVEL_INFO, "execution started");
		break;
	case MCPX_JOB_OUTPUT:
		relay_output(p, job, pos);
		break;
	}
}
