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

static void tick(struct mcpx_timer *t)
{
	struct mcpx_heap_trim *h = t->arg;

	(void)mcpx_heap_trim_now(h);
	mcpx_timer_start(h->loop, &h->timer, MCPX_HEAP_TRIM_EVERY_US);
}

int mcpx_heap_trim_now(struct mcpx_heap_trim *h)
{
	struct mallinfo2 mi = mallinfo2();

	/* Pages released stay counted as free: an idle heap looks the same
	 * after a trim as before it, and is left alone until something is
	 * allocated or freed. */
	if (mi.fordblks < MCPX_HEAP_TRIM_MIN_FREE ||
	    (h->trims && mi.fordblks == h->free_after && mi.uordblks == h->used_after))
		return 0;
	if (!malloc_trim(0))
		return 0;
	mi = mallinfo2();
	h->free_after = mi.fordblks;
	h->used_after = mi.uordblks;
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
