/*
 * test_worker_threads.c - the list of threads that never fork
 * (worker_threads.h): a thread is listed from enter to leave and only then,
 * an offloader's worker lists itself while it runs, and the main thread is
 * never listed.
 */
#include <pthread.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "loop.h"
#include "offload.h"
#include "worker_threads.h"

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

struct probe {
	pid_t tid;
	bool listed_inside, listed_after_leave;
};

static void *thread_fn(void *arg)
{
	struct probe *p = arg;

	p->tid = gettid_();
	mcpx_worker_thread_enter();
	mcpx_worker_thread_enter(); /* twice: still one slot */
	p->listed_inside = mcpx_worker_thread_is(p->tid);
	mcpx_worker_thread_leave();
	p->listed_after_leave = mcpx_worker_thread_is(p->tid);
	return NULL;
}

struct job {
	struct mcpx_offload_task t; /* first */
	struct mcpx_loop *loop;
	pid_t tid;
	bool listed;
};

static void work(struct mcpx_offload_task *t)
{
	struct job *j = (struct job *)t;

	j->tid = gettid_();
	j->listed = mcpx_worker_thread_is(j->tid);
}

static void done(struct mcpx_offload_task *t)
{
	mcpx_loop_stop(((struct job *)t)->loop);
}

int main(void)
{
	struct probe p = {0};
	pthread_t th;
	struct mcpx_loop *loop = mcpx_loop_new();
	struct mcpx_offload *o = NULL;
	struct job j = {.t = {.work = work, .done = done}};

	CHECK(!mcpx_worker_thread_is(gettid_()));
	CHECK(!mcpx_worker_thread_is(0));
	CHECK_INT(pthread_create(&th, NULL, thread_fn, &p), 0);
	CHECK_INT(pthread_join(th, NULL), 0);
	CHECK(p.listed_inside);
	CHECK(!p.listed_after_leave);

	/* An offloader's worker is listed while it runs, and not after. */
	CHECK(loop != NULL);
	CHECK_INT(mcpx_offload_new(loop, &o), 0);
	j.loop = loop;
	mcpx_offload_submit(o, &j.t);
	CHECK_INT(mcpx_loop_run(loop), 0);
	CHECK(j.listed && j.tid != gettid_());
	mcpx_offload_free(o);
	CHECK(!mcpx_worker_thread_is(j.tid));
	mcpx_loop_free(loop);
	CHECK_DONE();
}
