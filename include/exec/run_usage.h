/*
 * run_usage.h - what a run uses right now, read from /proc and the
 * filesystem: its processes (the members of its process group), their
 * resident memory and CPU, and the space its files take.
 *
 * Every reader is bounded (processes, directory depth, entries, open files),
 * so a run cannot make one reading cost the server more than a bounded
 * amount of work, and each reports what it could not see instead of
 * guessing low. Nothing here allocates beyond the caller's structs or keeps
 * state between calls; the policy (what is too much, when to look again)
 * is run_budget.c's.
 */
#ifndef MCPX_RUN_USAGE_H
#define MCPX_RUN_USAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Processes one reading follows; a run's own NPROC budget is far below. */
#define MCPX_USAGE_MAX_PROCS 1024

struct mcpx_usage_procs {
	size_t n;
	pid_t pid[MCPX_USAGE_MAX_PROCS];
	uint64_t rss_kb[MCPX_USAGE_MAX_PROCS];
	/* The last proportional reading of each member, its RSS then (0:
	 * never read) and how many readings ago; carried from one reading to
	 * the next. pss_now: read during this reading. */
	uint64_t pss_kb[MCPX_USAGE_MAX_PROCS];
	uint64_t pss_at_rss_kb[MCPX_USAGE_MAX_PROCS];
	unsigned pss_age[MCPX_USAGE_MAX_PROCS];
	unsigned seen[MCPX_USAGE_MAX_PROCS]; /* readings it has been a member in */
	bool pss_now[MCPX_USAGE_MAX_PROCS];
	uint64_t rss_total_kb;
	/* Own CPU plus the CPU of the children each reaped, summed: every
	 * process of the run that is alive, a zombie, or was reaped by one
	 * that is, counted once. */
	uint64_t cpu_ms;
	bool truncated; /* more members than MCPX_USAGE_MAX_PROCS */
};

/* The members of process group pgid: the leader pgid and its descendants,
 * and the server's own children in that group (orphans of the run come back
 * to the server, a child subreaper) with theirs. A run cannot leave its group
 * (seccomp denies setsid and setpgid), so this is the whole run. Returns 0,
 * or -ESRCH when the leader is gone and nothing of the group was found. */
int mcpx_usage_procs(pid_t pgid, struct mcpx_usage_procs *p);

/* Adds the members of another process group to p, counted with those
 * already there (a nested run read together with its caller's). Returns 0,
 * or -ESRCH when nothing of that group was found. */
int mcpx_usage_procs_add(pid_t pgid, struct mcpx_usage_procs *p);

/* Carries the proportional readings of prev over to the same pids in p. */
void mcpx_usage_carry_pss(struct mcpx_usage_procs *p, const struct mcpx_usage_procs *prev);

/* Whether the members' proportional resident memory (Pss of smaps_rollup)
 * is over budget_kb: pages shared between the run's processes, or with the
 * zygote they were forked from, count once in total instead of once per
 * process. smaps_rollup walks a process's page tables (about 6 us per MiB
 * resident), so a first estimate takes a member's carried reading (at most
 * 4 readings old) plus whatever its RSS grew since, or, for a member seen
 * in fewer than 4 readings (a fresh fork turns the pages it shares private
 * as it runs), its RSS; only an estimate over the budget is confirmed, on fresh readings taken
 * largest process first until the answer is certain (PSS <= RSS). A process whose smaps_rollup
 * cannot be read counts with its full RSS. Returns 1 (over) or 0; *kb gets
 * the sum the answer rests on. */
int mcpx_usage_pss_over(struct mcpx_usage_procs *p, uint64_t budget_kb, uint64_t *kb);

/* Files the members hold open after unlinking them, and memfds: space no
 * directory shows. Each file counts once (by device and inode), at least
 * 4 KiB. A process whose fd table cannot be read is skipped. */
uint64_t mcpx_usage_unlinked_kb(const struct mcpx_usage_procs *p);
/* The same for the n processes in pid (before a first reading has a list:
 * the leader alone). */
uint64_t mcpx_usage_unlinked_kb_of(const pid_t *pid, size_t n);

/* Space the tree at path takes: allocated blocks of every entry, each entry
 * at least 4 KiB (an inode and a directory slot are not free), without
 * following symlinks. Stops counting once past cap_kb. Returns 0, -ELOOP
 * when the tree is nested deeper than the walk follows (64 levels), or
 * -errno when path cannot be opened. */
int mcpx_usage_tree_kb(const char *path, uint64_t cap_kb, uint64_t *kb);

/* The same for the entries directly in dir (say /dev/shm) owned by uid and
 * group gid whose ctime is at or after since: what a run put there. */
int mcpx_usage_owned_kb(const char *dir, uid_t uid, gid_t gid, const struct timespec *since,
                        uint64_t cap_kb, uint64_t *kb);

#endif
