/*
 * container_memory.h - the memory of the container the server runs in, and
 * how close it is to the container's limit.
 *
 * Why: in a pod the per-run cgroups are not available (/sys/fs/cgroup is
 * read-only), so a run's budget is a watchdog reading that a fast burst
 * can overshoot (run_budget.h). The container's own limit does not
 * overshoot: past it the kernel's OOM killer acts, and with cgroup v2's
 * memory.oom.group (Kubernetes >= 1.28) it kills the whole container, the
 * server and its queue with it. So while a run is active the budget also
 * reads the container's working set (usage minus the inactive page cache
 * the kernel would reclaim first, as the kubelet counts it) and ends the run
 * once it comes within a headroom of the limit, before the kernel would.
 *
 * Read-only: the files are only read (cgroup v2 memory.current, memory.max,
 * memory.stat; v1 memory.usage_in_bytes, memory.limit_in_bytes,
 * memory.stat), so a read-only /sys/fs/cgroup is enough. No limit (a host
 * without one, "max", v1's page-rounded LLONG_MAX) means nothing to watch.
 *
 * The struct holds open descriptors (close-on-exec); the caller owns it and
 * releases them with mcpx_container_memory_close. Not thread-safe.
 */
#ifndef MCPX_CONTAINER_MEMORY_H
#define MCPX_CONTAINER_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The margin below the limit at which a run is ended: an eighth of the
 * limit, at least this much. It must cover what a run can allocate between
 * two readings (tens of milliseconds; both CPUs of a node faulting in pages
 * reach a few GiB/s) plus the kernel's own charge batching. */
#define MCPX_CONTAINER_HEADROOM_MIN (64ull << 20)

struct mcpx_container_memory {
	int usage_fd; /* memory.current / memory.usage_in_bytes; -1: not watched */
	int limit_fd; /* memory.max / memory.limit_in_bytes */
	int stat_fd;  /* memory.stat (may be -1: then usage is the working set) */
	int version;  /* 1 or 2; 0: not watched */
	char dir[512];
	char why[160]; /* when not watched: why not */
};

struct mcpx_container_reading {
	uint64_t usage;       /* bytes charged to the container */
	uint64_t working_set; /* usage minus inactive file pages */
	uint64_t limit;       /* bytes; 0: no limit */
	uint64_t headroom;    /* the margin below limit (mcpx_container_headroom) */
	bool near;            /* working_set >= limit - headroom */
};

/* Finds the container's memory cgroup under cgroup_root (normally
 * "/sys/fs/cgroup") for the process whose /proc/<pid>/cgroup text is in
 * proc_cgroup_file (normally "/proc/self/cgroup"; NULL: only cgroup_root
 * itself, as in a cgroup namespace), and opens its files. The cgroup
 * chosen is the nearest one, from the process's own up to the root, with a
 * memory limit: the container's in a pod (the root of its cgroup namespace),
 * or a parent when the server runs in a leaf of its own. Returns 0 with
 * cm->version set, or 0 with cm->version 0 and cm->why filled when there
 * is nothing to watch (no memory controller, no limit); -errno only for
 * arguments too long. */
int mcpx_container_memory_open(const char *cgroup_root, const char *proc_cgroup_file,
                               struct mcpx_container_memory *cm);

/* Closes the descriptors; the struct may be opened again. */
void mcpx_container_memory_close(struct mcpx_container_memory *cm);

/* The margin below limit at which a run is ended. */
uint64_t mcpx_container_headroom(uint64_t limit);

/* Reads usage and limit (the limit is read each time: a pod may be resized
 * in place) and, only when usage is near the limit, memory.stat for the
 * inactive page cache. Returns 0, -ENODEV when not watched, or -errno of a
 * read. */
int mcpx_container_memory_read(struct mcpx_container_memory *cm, struct mcpx_container_reading *r);

#endif
