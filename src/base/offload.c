/*
 * offload.c - one worker thread, a queue in, a queue out (offload.h).
 *
 * Tasks go in under a mutex and a condition variable; finished ones come
 * back on a second list, and an eventfd the loop watches says there are
 * some. The loop drains that list in its own thread and calls each done().
 * The worker measures each work() with CLOCK_THREAD_CPUTIME_ID, its own
 * CPU time only, and blocks every signal.
 */
#include "offload.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"
#include "worker_threads.h"

struct mcpx_offload {
	struct mcpx_watch w; /* the eventfd */
	bool watching;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct mcpx_offload_task *in_head, *in_tail; /* queued */
	struct mcpx_offload_task *out;               /* done, newest first */
	bool stop;
	int efd; /* the worker's copy of the eventfd, for writing */
};

static uint64_t thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void *worker(void *arg)
{
	struct mcpx_offload *o = arg;

	/* No work() forks: the reaper need not look for children here. */
	mcpx_worker_thread_enter();
	pthread_mutex_lock(&o->mu);
	for (;;) {
		struct mcpx_offload_task *t;
		uint64_t t0, one = 1;

		while (!o->stop && !o->in_head)
			pthread_cond_wait(&o->cv, &o->mu);
		if (o->stop)
			break;
		t = o->in_head;
		o->in_head = t->next;
		if (!o->in_head)
			o->in_tail = NULL;
		pthread_mutex_unlock(&o->mu);
		t0 = thread_cpu_us();
		t->work(t);
		t->cpu_us = thread_cpu_us() - t0;
		pthread_mutex_lock(&o->mu);
		t->next = o->out;
		o->out = t;
		/* A full counter only means the loop has not looked yet. */
		(void)!write(o->efd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&o->mu);
	mcpx_worker_thread_leave();
	return NULL;
}

/* Finished tasks, oldest first. */
static struct mcpx_offload_task *take_done(struct mcpx_offload *o)
{
	struct mcpx_offload_task *list, *rev = NULL;

	pthread_mutex_lock(&o->mu);
	list = o->out;
	o->out = NULL;
	pthread_mutex_unlock(&o->mu);
	while (list) {
		struct mcpx_offload_task *t = list;

		list = t->next;
		t->next = rev;
		rev = t;
	}
	return rev;
}

static void run_done(struct mcpx_offload_task *list)
{
	while (list) {
		struct mcpx_offload_task *t = list;

		list = t->next;
		t->next = NULL;
		t->done(t);
	}
}

static void wake_cb(struct mcpx_watch *w, int events)
{
	struct mcpx_offload *o = w->arg;
	uint64_t n;

	if (events & MCPX_EV_CLOSED) {
		o->watching = false;
		return;
	}
	(void)!read(w->fd, &n, sizeof(n));
	run_done(take_done(o));
}

int mcpx_offload_new(struct mcpx_loop *loop, struct mcpx_offload **out)
{
	struct mcpx_offload *o = calloc(1, sizeof(*o));
	sigset_t all, old;
	int rc;

	*out = NULL;
	if (!o)
		return -ENOMEM;
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->cv, NULL);
	o->w.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	o->efd = o->w.fd >= 0 ? dup(o->w.fd) : -1;
	if (o->w.fd < 0 || o->efd < 0) {
		rc = -errno;
		goto fail;
	}
	o->w.fn = wake_cb;
	o->w.arg = o;
	rc = mcpx_loop_watch(loop, &o->w);
	if (rc < 0)
		goto fail;
	o->watching = true;
	/* The worker takes no signal: the loop reads them (signalfd), and a
	 * SIGTERM delivered to a thread that had it unblocked would end the
	 * server at once. The thread inherits the mask it is created with. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&o->thread, NULL, worker, o);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		mcpx_loop_unwatch(&o->w);
		o->w.fd = -1;
		goto fail;
	}
	*out = o;
	return 0;
fail:
	if (o->w.fd >= 0)
		close(o->w.fd);
	if (o->efd >= 0)
		close(o->efd);
	pthread_mutex_destroy(&o->mu);
	pthread_cond_destroy(&o->cv);
	free(o);
	return rc;
}

void mcpx_offload_free(struct mcpx_offload *o)
{
	struct mcpx_offload_task *q;

	if (!o)
		return;
	pthread_mutex_lock(&o->mu);
	o->stop = true;
	pthread_cond_signal(&o->cv);
	pthread_mutex_unlock(&o->mu);
	pthread_join(o->thread, NULL);
	/* What finished, then what never started. */
	run_done(take_done(o));
	q = o->in_head;
	o->in_head = o->in_tail = NULL;
	for (struct mcpx_offload_task *t = q; t; t = t->next)
		t->cancelled = true;
	run_done(q);
	if (o->watching)
		mcpx_loop_unwatch(&o->w);
	close(o->efd);
	pthread_mutex_destroy(&o->mu);
	pthread_cond_destroy(&o->cv);
	free(o);
}

void mcpx_offload_submit(struct mcpx_offload *o, struct mcpx_offload_task *t)
{
	t->next = NULL;
	t->cancelled = false;
	t->cpu_us = 0;
	pthread_mutex_lock(&o->mu);
	if (o->in_tail)
		o->in_tail->next = t;
	else
		o->in_head = t;
	o->in_tail = t;
	pthread_cond_signal(&o->cv);
	pthread_mutex_unlock(&o->mu);
}
