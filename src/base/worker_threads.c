/*
 * worker_threads.c - the server's threads that never fork (worker_threads.h).
 *
 * A fixed table of thread ids, each slot an atomic: a worker claims a free
 * slot when it starts and clears it before it ends (so a thread id the
 * kernel gives out again is not listed by mistake), and the reaper reads
 * the table from the loop's thread without a lock.
 */
#include "worker_threads.h"

#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic pid_t tids[MCPX_WORKER_THREADS_MAX];
static _Thread_local int slot = -1;

void mcpx_worker_thread_enter(void)
{
	pid_t self = (pid_t)syscall(SYS_gettid);

	for (int i = 0; i < MCPX_WORKER_THREADS_MAX && slot < 0; i++) {
		pid_t free_slot = 0;

		if (atomic_compare_exchange_strong(&tids[i], &free_slot, self))
			slot = i;
	}
}

void mcpx_worker_thread_leave(void)
{
	if (slot < 0)
		return;
	atomic_store(&tids[slot], 0);
	slot = -1;
}

bool mcpx_worker_thread_is(pid_t tid)
{
	if (tid <= 0)
		return false;
	for (int i = 0; i < MCPX_WORKER_THREADS_MAX; i++)
		if (atomic_load(&tids[i]) == tid)
			return true;
	return false;
}
