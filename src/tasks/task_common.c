/*
 * task_common.c - what every part of the tasks module uses (task_common.h):
 * a request's generation, how long the store keeps a task's record, a
 * store failure logged, and the order in which the per-caller caps drop
 * finished tasks.
 *
 * It calls no other part of the module: the parts above call down to it.
 * The caps themselves are task_runner.c's (the count, before a task is
 * made) and task_finish.c's (the bytes, when its result is written).
 */
#include <string.h>

#include "log.h"
#include "task_common.h"

enum mcpx_task_gen mcpx_task_gen_of(const struct mcpx_call *req)
{
	return mcpx_call_stateless(req) ? MCPX_TASK_V2 : MCPX_TASK_V1;
}

void mcpx_task_store_failed(const char *what, const struct mcpx_task_rec *r, int rc)
{
	mcpx_warn("task %s: could not %s it in the store: %s", r->id, what, strerror(-rc));
}

int64_t mcpx_task_keep_for(const struct mcpx_tasks *t, const struct mcpx_task_rec *r)
{
	int64_t min = (int64_t)t->o.lease_ms * 2;

	/* A finished task is readable for at least a minute, whatever is
	 * left of its ttl. */
	if (mcpx_task_terminal(r->status) && min < MCPX_TASK_TTL_MIN_MS)
		min = MCPX_TASK_TTL_MIN_MS;
	return mcpx_task_keep_ms(r, mcpx_task_now_ms(), min);
}

/* Orders finished records oldest first; working ones last. */
int mcpx_task_by_age(const void *a, const void *b)
{
	const struct mcpx_task_rec *x = a, *y = b;
	bool xt = mcpx_task_terminal(x->status), yt = mcpx_task_terminal(y->status);

	if (xt != yt)
		return xt ? -1 : 1;
	return x->updated_ms < y->updated_ms ? -1 : x->updated_ms > y->updated_ms;
}

/* Drops recs[0..n) (finished ones, oldest first): nobody waits for the
 * drops, a failed one only leaves a task to expire with its ttl. */
void mcpx_task_drop_oldest(struct mcpx_tasks *t, const struct mcpx_task_rec *recs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		mcpx_info("task %s of %s dropped to make room (per-caller caps)", recs[i].id,
		          recs[i].owner);
		mcpx_task_drop(t->ts, recs[i].owner, recs[i].id, NULL, NULL);
	}
}
