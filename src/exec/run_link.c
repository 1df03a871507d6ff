/*
 * run_link.c - the caller/nested relation between runs (run_link.h): an
 * intrusive tree, a caller's nested runs in a singly linked list.
 *
 * It only links and walks; when a run may start, end or be detached is the
 * executor's decision (executor.c), and what the links count is the run
 * budget's (run_budget.c).
 */
#include "run_link.h"

#include <stddef.h>

void mcpx_run_link_add(struct mcpx_run_link *caller, struct mcpx_run_link *l)
{
	l->caller = caller;
	l->sibling = caller->nested;
	caller->nested = l;
}

void mcpx_run_link_remove(struct mcpx_run_link *l)
{
	if (l->caller) {
		for (struct mcpx_run_link **pp = &l->caller->nested; *pp; pp = &(*pp)->sibling) {
			if (*pp == l) {
				*pp = l->sibling;
				break;
			}
		}
	}
	l->caller = NULL;
	l->sibling = NULL;
}

struct mcpx_run_link *mcpx_run_link_next(const struct mcpx_run_link *top,
                                         const struct mcpx_run_link *at)
{
	if (!at)
		return top->nested;
	if (at->nested)
		return at->nested;
	/* No runs under at: its next sibling, or the next one of the nearest
	 * caller below top that has one. */
	for (; at && at != top; at = at->caller)
		if (at->sibling)
			return at->sibling;
	return NULL;
}
