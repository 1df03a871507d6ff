/*
 * fair_queue.h - each caller's share of the execution queue (executor.h):
 * how many of its runs wait at once (max_queued), how many it may start a
 * minute (runs_per_minute), and whose turn it is when several wait.
 *
 * The executor asks before queueing a run and tells when a run enters and
 * leaves the queue; it picks the next run as the oldest of the caller
 * served longest ago, so callers take turns (round-robin) instead of the
 * first to fill the queue holding it. The rate is a token bucket of
 * runs_per_minute runs, refilled evenly over the minute: a burst of that
 * many passes, then one run per 60/runs_per_minute seconds. A caller with
 * nothing queued and a full bucket is forgotten, so the table stays small
 * whatever the number of callers. This module knows names and numbers
 * only: no jobs, no loop, no clock of its own.
 */
#ifndef MCPX_FAIR_QUEUE_H
#define MCPX_FAIR_QUEUE_H

#include <stddef.h>
#include <stdint.h>

struct mcpx_fair;

/* NULL when out of memory. Free with mcpx_fair_free. */
struct mcpx_fair *mcpx_fair_new(void);
void mcpx_fair_free(struct mcpx_fair *f);

/* May caller queue one more run? 0: yes, and the run is counted against
 * its rate; -EBUSY: max_queued of its runs already wait (0: no cap);
 * -EAGAIN: runs_per_minute used up (0: no rate), *retry_after_s says when
 * the next run would pass (at least 1); -ENOMEM. */
int mcpx_fair_admit(struct mcpx_fair *f, const char *caller, unsigned max_queued,
                    unsigned runs_per_minute, uint64_t now_us, unsigned *retry_after_s);

/* A run of caller entered the queue / left it (started, expired,
 * cancelled, dropped). */
void mcpx_fair_enter(struct mcpx_fair *f, const char *caller);
void mcpx_fair_leave(struct mcpx_fair *f, const char *caller);

/* When caller was last served (a counter; 0: not since it was last
 * forgotten), and that it is served now. The next run to start is the
 * queued run whose caller has the smallest value. */
uint64_t mcpx_fair_last_served(const struct mcpx_fair *f, const char *caller);
void mcpx_fair_served(struct mcpx_fair *f, const char *caller);

/* caller's runs waiting now. */
size_t mcpx_fair_queued(const struct mcpx_fair *f, const char *caller);

#endif
