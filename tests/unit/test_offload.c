/*
 * test_offload.c - work done on a worker thread and told back on the loop
 * (offload.h): the thread starts with the offloader (the seccomp policy
 * built at start-up denies signals to every thread id the server has then,
 * so a worker must not appear later); work() runs off the loop's thread
 * and done() on it, in order; freeing the offloader joins the worker.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "loop.h"
#include "offload.h"

static unsigned threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

struct job {
	struct mcpx_offload_task t; /* first */
	struct mcpx_loop *loop;
	pthread_t main;
	bool worked_off_loop, done_on_loop, done;
	int *order, *next;
	int seq;
	unsigned stop_after;
};

static void work(struct mcpx_offload_task *t)
{
	struct job *j = (struct job *)t;

	j->worked_off_loop = !pthread_equal(pthread_self(), j->main);
}

static void done(struct mcpx_offload_task *t)
{
	struct job *j = (struct job *)t;

	j->done_on_loop = pthread_equal(pthread_self(), j->main);
	j->done = true;
	j->order[(*j->next)++] = j->seq;
	if ((unsigned)*j->next == j->stop_after)
		mcpx_loop_stop(j->loop);
}

int main(void)
{
	struct mcpx_loop *loop = mcpx_loop_new();
	struct mcpx_offload *o = NULL;
	struct job jobs[2];
	int order[2] = {0}, next = 0;
	unsigned before;

	CHECK(loop != NULL);
	before = threads();
	CHECK_INT(mcpx_offload_new(loop, &o), 0);
	/* The worker is there before any work. */
	CHECK_INT((int)threads(), (int)before + 1);
	memset(jobs, 0, sizeof(jobs));
	for (int i = 0; i < 2; i++) {
		jobs[i].t.work = work;
		jobs[i].t.done = done;
		jobs[i].loop = loop;
		jobs[i].main = pthread_self();
		jobs[i].order = order;
		jobs[i].next = &next;
		jobs[i].seq = i + 1;
		jobs[i].stop_after = 2;
	}
	mcpx_offload_submit(o, &jobs[0].t);
	mcpx_offload_submit(o, &jobs[1].t);
	CHECK_INT((int)threads(), (int)before + 1);
	CHECK_INT(mcpx_loop_run(loop), 0);
	for (int i = 0; i < 2; i++) {
		CHECK(jobs[i].done && !jobs[i].t.cancelled);
		CHECK(jobs[i].worked_off_loop);
		CHECK(jobs[i].done_on_loop);
	}
	CHECK_INT(order[0], 1);
	CHECK_INT(order[1], 2);
	/* Freed with nothing queued: joins the worker; a second offloader
	 * that never had work frees the same way. */
	mcpx_offload_free(o);
	/* The kernel lets go of a joined thread's entry a moment later. */
	for (int i = 0; i < 100 && threads() != before; i++)
		usleep(10000);
	CHECK_INT((int)threads(), (int)before);
	CHECK_INT(mcpx_offload_new(loop, &o), 0);
	mcpx_offload_free(o);
	mcpx_loop_free(loop);
	CHECK_DONE();
}
