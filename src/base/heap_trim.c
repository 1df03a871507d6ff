/*
 * heap_trim.c - malloc_trim when the heap holds enough free memory
 * (heap_trim.h).
 *
 * mallinfo2 sums the free chunks of the main arena (fordblks), the top
 * chunk included: glibc trims the top by itself only beyond
 * M_TRIM_THRESHOLD, which it raises to twice the largest mmap'ed chunk
 * freed (one 1 MiB buffer makes it 2 MiB), so the top counts too. Only the main arena is looked at:
 * the server's other thread (offload.c) allocates little, and malloc_trim(0) trims every arena
 * anyway.
 *
 * What it does not do: change how memory is allocated (no mallopt).
 */
#include "heap_trim.h"

#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

static void tick(struct mcpx_timer *t)
{
	struct mcpx_heap_trim *h = t->arg;

	(void)mcpx_heap_trim_now(h);
	mcpx_timer_start(h->loop, &h->timer, MCPX_HEAP_TRIM_EVERY_US);
}

/* The CPU time of the whole server (every thread), in microseconds. */
static uint64_t process_cpu_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int mcpx_heap_trim_now(struct mcpx_heap_trim *h)
{
	struct mallinfo2 mi = mallinfo2();
	uint64_t cpu = process_cpu_us();
	bool quiet = mi.fordblks == h->free_seen && mi.uordblks == h->used_seen &&
	             cpu - h->cpu_seen_us < MCPX_HEAP_TRIM_QUIET_CPU_US;

	h->free_seen = mi.fordblks;
	h->used_seen = mi.uordblks;
	h->cpu_seen_us = cpu;
	/* Only a quiet server: the heap as it was at the last look, and next
	 * to no CPU used since (between two back-to-back calls the heap is
	 * back where it was, so the heap alone does not tell). Pages released
	 * stay counted as free: a trimmed idle heap looks the same on every
	 * later look and is left alone until it changes. */
	if (!quiet || h->trimmed || mi.fordblks < MCPX_HEAP_TRIM_MIN_FREE) {
		h->trimmed = h->trimmed && quiet;
		return 0;
	}
	if (!malloc_trim(0))
		return 0;
	mi = mallinfo2();
	h->free_seen = mi.fordblks;
	h->used_seen = mi.uordblks;
	h->cpu_seen_us = process_cpu_us();
	h->trimmed = true;
	h->trims++;
	return 1;
}

void mcpx_heap_trim_start(struct mcpx_heap_trim *h, struct mcpx_loop *loop)
{
	h->loop = loop;
	h->timer.fn = tick;
	h->timer.arg = h;
	mcpx_timer_start(loop, &h->timer, MCPX_HEAP_TRIM_EVERY_US);
}

void mcpx_heap_trim_stop(struct mcpx_heap_trim *h)
{
	mcpx_timer_cancel(&h->timer);
}
