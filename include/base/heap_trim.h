/*
 * heap_trim.h - gives the heap's free pages back to the kernel while the
 * server is quiet.
 *
 * glibc keeps freed heap memory mapped (and resident) unless it sits at
 * the top of the heap: the per-run buffers of one busy minute (the run
 * budget's process lists, directory streams, request bodies) left an idle
 * server about 0.7 MiB above its start-up RSS. A timer on the loop looks
 * at the heap every MCPX_HEAP_TRIM_EVERY_US and, when the server was quiet
 * since the last look (the heap unchanged, next to no CPU used) and more than
 * MCPX_HEAP_TRIM_MIN_FREE of it is free, calls malloc_trim(0), which
 * releases every whole free page (madvise) wherever it lies. A busy server
 * is never trimmed (the next calls would fault the pages back: measured,
 * 10-20 page faults per call when it trimmed once a second under load),
 * and a trimmed heap is not trimmed again until it has changed.
 *
 * Ownership: the caller owns the struct (usually embedded); stop it with
 * mcpx_heap_trim_stop before the loop goes.
 */
#ifndef MCPX_HEAP_TRIM_H
#define MCPX_HEAP_TRIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"

#define MCPX_HEAP_TRIM_EVERY_US 500000u
#define MCPX_HEAP_TRIM_MIN_FREE ((size_t)256 * 1024)
/* Quiet: less server CPU than this between two looks (an idle server uses
 * tens of microseconds; one call, a millisecond or more). */
#define MCPX_HEAP_TRIM_QUIET_CPU_US 2000u

struct mcpx_heap_trim {
	struct mcpx_loop *loop;
	struct mcpx_timer timer;
	unsigned long trims;         /* how many times it released memory: for tests */
	size_t free_seen, used_seen; /* the heap's free and used bytes at the last look */
	uint64_t cpu_seen_us;        /* the server's CPU time then */
	bool trimmed;                /* and it was trimmed as it is */
};

void mcpx_heap_trim_start(struct mcpx_heap_trim *h, struct mcpx_loop *loop);
void mcpx_heap_trim_stop(struct mcpx_heap_trim *h);
/* One check now (what the timer does); returns whether it trimmed. */
int mcpx_heap_trim_now(struct mcpx_heap_trim *h);

#endif
