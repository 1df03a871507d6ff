/*
 * test_run_link.c - which run called which: the walk under an outermost
 * run finds every run nested in it at any depth, once, and nothing beside
 * it; a run taken out leaves no link to it behind, and a caller that ends
 * first hands its nested runs over the way the executor does (job_unlink).
 */
#include <stddef.h>

#include "check.h"
#include "run_link.h"

/* How many runs the walk under top finds, each checked against want[]. */
static int walk(const struct mcpx_run_link *top, const struct mcpx_run_link *const *want,
                int n_want)
{
	int n = 0;

	for (const struct mcpx_run_link *l = NULL; (l = mcpx_run_link_next(top, l));) {
		int found = 0;

		for (int i = 0; i < n_want; i++)
			found += want[i] == l;
		CHECK_INT(found, 1);
		if (++n > 16)
			break; /* a cycle: the count says so */
	}
	return n;
}

/* t calls a and b; a calls c and d; c calls e. Beside t, u calls v. */
static void test_walk(void)
{
	struct mcpx_run_link t = {0}, a = {0}, b = {0}, c = {0}, d = {0}, e = {0}, u = {0}, v = {0};
	const struct mcpx_run_link *all[] = {&a, &b, &c, &d, &e};
	const struct mcpx_run_link *under_a[] = {&c, &d, &e};

	CHECK(mcpx_run_link_next(&t, NULL) == NULL);
	mcpx_run_link_add(&t, &a);
	mcpx_run_link_add(&t, &b);
	mcpx_run_link_add(&a, &c);
	mcpx_run_link_add(&a, &d);
	mcpx_run_link_add(&c, &e);
	mcpx_run_link_add(&u, &v);
	CHECK(e.caller == &c && c.caller == &a && a.caller == &t);
	CHECK_INT(walk(&t, all, 5), 5);
	/* A walk under a nested run stays under it. */
	CHECK_INT(walk(&a, under_a, 3), 3);
	CHECK_INT(walk(&e, NULL, 0), 0);
	CHECK_INT(walk(&u, (const struct mcpx_run_link *[]){&v}, 1), 1);

	/* d ends: nothing points at it, and it at nothing. */
	mcpx_run_link_remove(&d);
	CHECK(d.caller == NULL && d.sibling == NULL);
	CHECK_INT(walk(&t, (const struct mcpx_run_link *[]){&a, &b, &c, &e}, 4), 4);

	/* a ends before c: c goes to a's caller (with e under it), as the
	 * executor hands a started run over; then a leaves. */
	while (a.nested) {
		struct mcpx_run_link *n = a.nested;

		mcpx_run_link_remove(n);
		mcpx_run_link_add(a.caller, n);
	}
	mcpx_run_link_remove(&a);
	CHECK(a.caller == NULL && a.nested == NULL && c.caller == &t);
	CHECK_INT(walk(&t, (const struct mcpx_run_link *[]){&b, &c, &e}, 3), 3);

	/* t ends first: its runs are cut loose, each now outermost. */
	while (t.nested)
		mcpx_run_link_remove(t.nested);
	CHECK(b.caller == NULL && c.caller == NULL && e.caller == &c);
	CHECK_INT(walk(&t, NULL, 0), 0);
	/* Removing a run with no caller is harmless. */
	mcpx_run_link_remove(&b);
	CHECK(b.caller == NULL && b.sibling == NULL);
}

int main(void)
{
	test_walk();
	CHECK_DONE();
}
