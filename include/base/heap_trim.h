/*
 * heap_trim.h - gives the heap's free pages back to the kernel while the
 * server is quiet.
 *
 * glibc keeps freed heap memory mapped (and resident) unless it sits at
 * the top of the heap: the per-run buffers of one busy minute (the run
 * budget's process lists, directory streams, request bodies) left an idle
 * server about 0.7 MiB above its start-up RSS. A timer on the loop looks
 * at the free bytes every MCPX_HEAP_TRIM_EVERY_US and, when more than
 * MCPX_HEAP_TRIM_MIN_FREE are free, calls malloc_trim(0), which releases
 * every whole free page (madvise) wherever it lies. Under load that is
 * once per interval, not once per call: the pages a call needs are then
 * faulted back once per interval at most. A heap unchanged since the last
 * trim is not trimmed again, so an idle server only looks.
 *
 * Ownership: the caller owns the struct (usually embedded); stop it with
 * mcpx_heap_trim_stop before the loop goes.
 */
#ifndef MCPX_HEAP_TRIM_H
#define MCPX_HEAP_TRIM_H

#include <stddef.h>

#include "loop.h"

#define MCPX_HEAP_TRIM_EVERY_US 1000000u
#define MCPX_HEAP_TRIM_MIN_FREE ((size_t)256 * 1024)

struct mcpx_heap_trim {
	struct mcpx_loop *loop;
	struct mcpx_timer timer;
	unsigned long trims;           /* how many times it released memory: for tests */
	size_t free_after, used_after; /* the heap's free and used bytes after the last trim */
};

void mcpx_heap_trim_start(struct mcpx_heap_trim *h, struct mcpx_loop *loop);
void mcpx_heap_trim_stop(struct mcpx_heap_trim *h);
/* One check now (what the timer does); returns whether it trimmed. */
int mcpx_heap_trim_now(struct mcpx_heap_trim *h);

#endif
