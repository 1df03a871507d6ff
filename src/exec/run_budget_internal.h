/*
 * run_budget_internal.h - what the budget's files share: the process-wide
 * budget and one run's budget as structs, the readings' pacing, and the
 * helpers every reading rests on (run_budget.c: the joined budgets, the
 * memory outside the run's processes, the verdict). Its users are
 * run_budget.c (the method and the verdict), run_budget_life.c (a run's
 * budget started, joined and finished), run_readings.c (memory and CPU on
 * the timer) and run_disk.c (the disk: walks of the run's files, the write
 * watch that wakes them, RLIMIT_FSIZE kept at what remains, the last
 * reading at the end). Private to them.
 */
#ifndef MCPX_RUN_BUDGET_INTERNAL_H
#define MCPX_RUN_BUDGET_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "container_memory.h"
#include "loop.h"
#include "run_budget.h"
#include "run_cgroup.h"
#include "run_link.h"
#include "run_usage.h"

#define SAMPLE_MIN_US 20000u
#define SAMPLE_MAX_US 1000000u
#define SAMPLE_COST_FACTOR 10u
/* The fd tables of every process are read on every this many readings:
 * the most expensive reading, and unlinked files are rare. */
#define UNLINKED_EVERY 8u
/* A quiet run (watchdog): the same processes, the same RSS and no CPU
 * since the last reading. Its disk and socket buffers are then not read
 * again: neither can grow without CPU of the run's processes (their
 * workdirs, /dev/shm entries, open files and sockets are theirs alone;
 * what the server holds for them is counted as it happens). CPU is read
 * in clock ticks (10 ms), so each process may have used up to a tick
 * unseen: at most QUIET_MAX_PROCS processes, and a full reading after at
 * most QUIET_MAX_IN_ROW quiet ones, bound what a skipped reading misses.
 * A run waiting for the CPU on a busy machine, or sleeping, costs the
 * server its process list only. */
#define QUIET_MAX_PROCS 4u
#define QUIET_MAX_IN_ROW 4u

struct mcpx_budget {
	enum mcpx_budget_method method;
	struct mcpx_cgroup_env cg;
	unsigned long runs;
	bool warned_procs, warned_sockets, warned_fsize;
	struct mcpx_container_memory container;
	/* Where the file trees are walked (mcpx_budget_use_worker); NULL: on
	 * the loop. */
	struct mcpx_offload *worker;
	/* The inotify instance every run's write watch shares (run_disk.c),
	 * made with the first run's loop; no_watcher: it could not be. */
	struct mcpx_disk_watcher *watcher;
	bool no_watcher;
};

struct disk_reading;

struct mcpx_run_budget {
	struct mcpx_budget *b;
	struct mcpx_loop *loop;
	struct mcpx_timer timer;
	struct mcpx_budget_limits lim;
	pid_t pgid;
	uid_t uid;
	gid_t gid;
	char workdir[PATH_MAX];
	struct timespec started;
	uint64_t cpu_base_ms;
	bool has_cgroup;
	struct mcpx_run_cgroup cg;
	mcpx_budget_exceeded_fn fn;
	void *arg;
	const char *exceeded;
	uint64_t cpu_seen_ms;
	uint64_t unlinked_kb;
	/* Memory the server holds for the run (mcpx_run_budget_held), and its
	 * processes' memory at the last reading (a caller's: all joined runs'
	 * processes too). */
	uint64_t held_kb;
	uint64_t mem_seen_kb;
	/* The AF_UNIX socket buffers its processes hold (run_sockets.h): kernel
	 * memory no RSS shows, counted with its memory. */
	uint64_t socket_kb;
	/* CPU the server used for it (and its joined runs) on other threads. */
	uint64_t charged_us;
	unsigned readings;
	/* Quiet readings (see QUIET_MAX_PROCS): in a row now, and in all. */
	unsigned quiet_in_row, quiet_total;
	bool quiet; /* the current reading is one */
	/* The latest reading of the run's processes and the one before (for
	 * the proportional memory carried over); swapped on each reading. */
	struct mcpx_usage_procs *procs, *prev;
	/* A nested run: the budget it joined (the outermost caller's). It
	 * holds that budget alive (joined_live) until it is finished itself;
	 * which runs are nested in which is the executor's record (link). */
	struct mcpx_run_budget *top;
	/* An outermost run: its place in the executor's caller/nested
	 * relation (run_link.h), the runs under it being those whose budgets
	 * joined this one; NULL once finished (the executor's job may be
	 * gone). How many joined budgets are not finished yet, CPU of those
	 * already finished (watchdog: their processes are gone from the
	 * readings), and whether its own run has finished. */
	const struct mcpx_run_link *link;
	unsigned joined_live;
	uint64_t joined_done_ms;
	bool finished;
	/* The files' size at the last finished walk (its workdirs and
	 * /dev/shm), the walk under way on the worker (NULL: none), and when
	 * the next may start (a walk costs what the run makes it cost). */
	uint64_t files_kb;
	struct disk_reading *disk;
	uint64_t disk_next_us;
	/* What the run's writes set off (run_disk.c): the watch that wakes
	 * the disk reading when the run writes, the timer that paces the
	 * readings it asks for, whether a write was seen since the last walk
	 * began, RLIMIT_FSIZE as last set on the run's processes (bytes; 0:
	 * as spawned), and the end's last reading (mcpx_run_budget_settle). */
	struct mcpx_disk_watch *watch;
	struct mcpx_timer disk_timer;
	bool disk_dirty;
	/* Writes the watch saw, and how many of them the last finished walk
	 * had seen when it began (mcpx_run_budget_settle waits for the rest). */
	unsigned long writes, walked;
	uint64_t fsize_bytes;
	void (*settle_fn)(void *arg);
	void *settle_arg;
	bool settled, stopped;
	unsigned settle_walks;
};

struct mcpx_disk_watch;
struct mcpx_disk_watcher;

/* The budgets that joined top's, one after another (*at NULL: the first). */
struct mcpx_run_budget *mcpx_rb_next_joined(const struct mcpx_run_budget *top,
                                            const struct mcpx_run_link **at);
/* Memory of the run no process maps: what the server holds for it and
 * every run that joined its budget, and its socket buffers. */
uint64_t mcpx_rb_outside_kb(const struct mcpx_run_budget *rb);
/* The first budget passed: the run and every joined run end, told why. */
void mcpx_rb_exceed(struct mcpx_run_budget *rb, const char *limit, uint64_t used, uint64_t budget,
                    const char *unit);

#endif
