/*
 * offload.h - work that must not run on the event loop, done on a worker
 * thread, and its end told back on the loop.
 *
 * The loop serves every client and every run; a task whose cost someone
 * else decides (validating a function's arguments against its schema takes
 * up to MCPX_SCHEMA_CPU_LIMIT_MS of CPU) would stall them all. One worker
 * thread takes tasks in order; each task's work() runs there and must touch
 * nothing the loop touches meanwhile (the task's own data only); its done()
 * runs on the loop afterwards, told the CPU time work() used, which the
 * caller may charge to whoever caused it. work() never forks (the worker
 * is listed in worker_threads.h, whose children the reaper does not look
 * for).
 *
 * Ownership: the caller owns each task (usually embedded in its own struct)
 * from mcpx_offload_submit until done() is called, and must not free it
 * before. mcpx_offload_free waits for the task in work, then calls done()
 * for it and every task still queued, with cancelled set, on the calling
 * thread.
 */
#ifndef MCPX_OFFLOAD_H
#define MCPX_OFFLOAD_H

#include <stdbool.h>
#include <stdint.h>

struct mcpx_loop;
struct mcpx_offload;

struct mcpx_offload_task {
	void (*work)(struct mcpx_offload_task *t); /* on the worker thread */
	void (*done)(struct mcpx_offload_task *t); /* on the loop */
	uint64_t cpu_us;                /* the worker's CPU time in work(), set before done() */
	bool cancelled;                 /* work() did not run: the offloader is going away */
	struct mcpx_offload_task *next; /* private */
};

/* Starts the worker. Returns 0 or -errno. */
int mcpx_offload_new(struct mcpx_loop *loop, struct mcpx_offload **out);
/* Stops the worker (see above). NULL is fine. */
void mcpx_offload_free(struct mcpx_offload *o);

/* Queues t (work and done set). */
void mcpx_offload_submit(struct mcpx_offload *o, struct mcpx_offload_task *t);

#endif
