/*
 * run_usage.c - a run's current usage from /proc and the filesystem
 * (run_usage.h).
 *
 * Processes are found by walking /proc/<pid>/task/<tid>/children from the
 * leader and from the server itself, keeping only members of the run's
 * process group; that costs a few reads per member instead of a scan of
 * every process on the host. Directory trees are walked with openat and
 * O_NOFOLLOW from an fd per level, so a symlink or a rename by the run can
 * neither lead the walk out of the tree nor into a loop.
 *
 * What it does not do: decide anything (run_budget.c), kill, or read
 * cgroup files (run_cgroup.c).
 */
#include "run_usage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procstat.h"
#include "workdir.h"

/* Directory levels the walk follows (one fd each). */
#define MAX_DEPTH 64
/* The least an entry costs, in KiB. */
#define MIN_ENTRY_KB 4
/* Distinct unlinked files told apart per reading; more count without it. */
#define MAX_UNLINKED 4096

static bool listed(const struct mcpx_usage_procs *p, pid_t pid)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->pid[i] == pid)
			return true;
	return false;
}

/* Whether pid is its thread group's leader ("Tgid:" of its status). gVisor
 * lists a process's threads in its parent's children files, beside the
 * process itself (Linux lists processes only); each thread's stat shows the
 * whole process's memory. */
static bool group_leader(pid_t pid)
{
	char path[64], buf[1024];
	const char *t;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	t = strstr(buf, "\nTgid:");
	return !t || strtol(t + 6, NULL, 10) == pid;
}

/* Adds pid when it is a member not seen yet (a process, not a thread of
 * one: only a multi-threaded one's status is read to tell). */
static void add_member(struct mcpx_usage_procs *p, pid_t pgid, pid_t pid)
{
	struct mcpx_procstat ps;

	if (listed(p, pid) || mcpx_procstat_read(pid, &ps) != 0 || ps.pgrp != pgid ||
	    (ps.threads > 1 && !group_leader(pid)))
		return;
	if (p->n == MCPX_USAGE_MAX_PROCS) {
		p->truncated = true;
		return;
	}
	p->pid[p->n] = pid;
	p->rss_kb[p->n] = ps.rss_kb;
	p->pss_kb[p->n] = 0;
	p->pss_at_rss_kb[p->n] = 0;
	p->pss_age[p->n] = 0;
	p->seen[p->n] = 0;
	p->pss_now[p->n] = false;
	p->rss_total_kb += ps.rss_kb;
	p->cpu_ms += ps.cpu_ms + ps.children_cpu_ms;
	p->n++;
}

struct children_of {
	struct mcpx_usage_procs *p;
	pid_t pgid;
};

/* One thread's children file: a list of pids. */
static void add_listed(const char *text, void *arg)
{
	struct children_of *c = arg;
	char *end;

	for (const char *s = text; *s; s = end) {
		long child = strtol(s, &end, 10);

		if (end == s)
			break;
		add_member(c->p, c->pgid, (pid_t)child);
	}
}

/* Calls add_member for every child of every thread of pid. */
static void add_children(struct mcpx_usage_procs *p, pid_t pgid, pid_t pid)
{
	struct children_of c = {p, pgid};
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	(void)mcpx_proc_each_file(path, "children", add_listed, &c);
}

/* Orphans of the run re-parented to the server (a child subreaper). The
 * kernel hands an orphan to the subreaper's first live thread, which for the
 * server is always its main thread (it never exits before the process), so
 * that thread's children file lists them all: one read on every reading
 * instead of a walk of /proc/self/task. Children the server's other threads
 * forked are run leaders and warm interpreters, which add_member reaches by
 * pgid or leaves out anyway. */
static void add_orphans(struct mcpx_usage_procs *p, pid_t pgid)
{
	struct children_of c = {p, pgid};
	char path[64], buf[4096];
	pid_t self = getpid();
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)self, (int)self);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		add_children(p, pgid, self); /* cannot tell: every thread's */
		return;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0 || n == (ssize_t)sizeof(buf) - 1) {
		add_children(p, pgid, self);
		return;
	}
	buf[n] = '\0';
	add_listed(buf, &c);
}

int mcpx_usage_procs(pid_t pgid, struct mcpx_usage_procs *p)
{
	p->n = 0;
	p->rss_total_kb = 0;
	p->cpu_ms = 0;
	p->truncated = false;
	return mcpx_usage_procs_add(pgid, p);
}

int mcpx_usage_procs_add(pid_t pgid, struct mcpx_usage_procs *p)
{
	size_t first = p->n;

	add_member(p, pgid, pgid);
	/* Orphans of the run, re-parented to the server. */
	add_orphans(p, pgid);
	/* Breadth first: p->n grows while the loop runs. */
	for (size_t i = first; i < p->n; i++)
		add_children(p, pgid, p->pid[i]);
	return p->n > first ? 0 : -ESRCH;
}

/* The "Pss:" line of /proc/<pid>/smaps_rollup in *kb: 0, or -ESRCH when
 * the process has no memory any more (it is exiting or gone: the kernel
 * answers ESRCH once its mm is released), or another -errno when it cannot
 * be read (a non-dumpable process in the pod, where the server has no
 * CAP_SYS_PTRACE). */
/* The sum of the "Pss:" lines of /proc/<pid>/smaps, for a procfs without
 * smaps_rollup (gVisor's): 0, or -errno as pss_of. A line cut by the end
 * of a read is carried into the next one. */
static int pss_of_smaps(pid_t pid, uint64_t *kb)
{
	char path[64], buf[8192];
	size_t have = 0;
	ssize_t n;
	int fd, e;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	*kb = 0;
	while ((n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
		char *line = buf, *eol;

		have += (size_t)n;
		buf[have] = '\0';
		while ((eol = strchr(line, '\n'))) {
			if (!strncmp(line, "Pss:", 4))
				*kb += strtoull(line + 4, NULL, 10);
			line = eol + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0; /* no line is that long: drop it */
	}
	e = n < 0 ? errno : 0;
	close(fd);
	return -e;
}

static int pss_of(pid_t pid, uint64_t *kb)
{
	char path[64], buf[4096];
	const char *line;
	ssize_t n;
	int fd, e;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return pss_of_smaps(pid, kb);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	e = n < 0 ? errno : 0;
	close(fd);
	if (n < 0)
		return -e;
	if (n == 0)
		return -ESRCH;
	buf[n] = '\0';
	line = strstr(buf, "\nPss:");
	if (!line)
		return -EIO;
	*kb = strtoull(line + 5, NULL, 10);
	return 0;
}

void mcpx_usage_carry_pss(struct mcpx_usage_procs *p, const struct mcpx_usage_procs *prev)
{
	/* Both lists come from the same walk order, so a member is usually
	 * found at the index after the previous one's. */
	for (size_t i = 0, j = 0; i < p->n && prev->n; i++) {
		for (size_t k = 0; k < prev->n; k++, j = (j + 1) % prev->n) {
			if (prev->pid[j] == p->pid[i]) {
				p->pss_kb[i] = prev->pss_kb[j];
				p->pss_at_rss_kb[i] = prev->pss_at_rss_kb[j];
				p->pss_age[i] = prev->pss_age[j] + 1;
				p->seen[i] = prev->seen[j] + 1;
				break;
			}
		}
	}
}

/* Readings a carried proportional size is trusted for. A process's PSS
 * changes while its RSS stays put: a forked Python writes reference counts
 * all over the pages it shares with its parent, turning them private, and
 * sharing changes when siblings come and go. What that hides is at most the
 * memory shared at the last reading, and only for this many readings. */
#define PSS_MAX_AGE 4

/* A member's proportional size now. A young one counts with its RSS: a
 * fresh fork shares almost everything with its parent at first and makes
 * it private as it runs, so its first readings say little. Otherwise its
 * carried reading, and what it grew since counts as its own (new pages are
 * private; where not, the estimate is high, which only asks for a fresh
 * reading). */
static uint64_t pss_estimate(const struct mcpx_usage_procs *p, size_t i)
{
	uint64_t then = p->pss_at_rss_kb[i], now = p->rss_kb[i];

	if (p->seen[i] < PSS_MAX_AGE)
		return now;
	return p->pss_kb[i] + (now > then ? now - then : 0);
}

static void read_pss(struct mcpx_usage_procs *p, size_t i)
{
	uint64_t pss = 0;
	int rc = pss_of(p->pid[i], &pss);

	/* Unreadable counts as its RSS: a run cannot hide memory by making
	 * itself unreadable. One that has released its memory (it is exiting:
	 * its RSS, read a moment earlier, is stale) counts nothing; counting
	 * that RSS killed runs whose forks shared everything and ended at once
	 * under load. */
	p->pss_kb[i] = rc == 0 ? pss : rc == -ESRCH ? 0 : p->rss_kb[i];
	p->pss_at_rss_kb[i] = p->rss_kb[i] ? p->rss_kb[i] : 1;
	p->pss_age[i] = 0;
	p->pss_now[i] = true;
}

/* The member with the largest RSS not read during this reading, or n. */
static size_t largest_unread(const struct mcpx_usage_procs *p)
{
	size_t best = p->n;

	for (size_t i = 0; i < p->n; i++)
		if (!p->pss_now[i] && (best == p->n || p->rss_kb[i] > p->rss_kb[best]))
			best = i;
	return best;
}

int mcpx_usage_pss_over(struct mcpx_usage_procs *p, uint64_t budget_kb, uint64_t *kb)
{
	uint64_t est = 0, low = 0, rest = 0;
	size_t j;

	for (size_t i = 0; i < p->n; i++) {
		if (p->seen[i] >= PSS_MAX_AGE &&
		    (!p->pss_at_rss_kb[i] || p->pss_age[i] >= PSS_MAX_AGE))
			read_pss(p, i);
		est += pss_estimate(p, i);
	}
	*kb = est;
	if (est <= budget_kb)
		return 0;
	for (size_t i = 0; i < p->n; i++) {
		if (p->pss_now[i])
			low += p->pss_kb[i];
		else
			rest += p->rss_kb[i];
	}
	while (low <= budget_kb && low + rest > budget_kb && (j = largest_unread(p)) < p->n) {
		rest -= p->rss_kb[j];
		read_pss(p, j);
		low += p->pss_kb[j];
	}
	*kb = low + rest;
	return low > budget_kb;
}

struct file_id {
	dev_t dev;
	ino_t ino;
};

struct unlinked {
	struct file_id seen[MAX_UNLINKED];
	size_t n;
	uint64_t kb;
};

static uint64_t entry_kb(const struct stat *st)
{
	uint64_t kb = (uint64_t)st->st_blocks / 2;

	return kb < MIN_ENTRY_KB ? MIN_ENTRY_KB : kb;
}

static void note_unlinked(struct unlinked *u, const struct stat *st)
{
	for (size_t i = 0; i < u->n; i++)
		if (u->seen[i].dev == st->st_dev && u->seen[i].ino == st->st_ino)
			return;
	if (u->n < MAX_UNLINKED) {
		u->seen[u->n].dev = st->st_dev;
		u->seen[u->n].ino = st->st_ino;
		u->n++;
	}
	u->kb += entry_kb(st);
}

/* gVisor reports st_nlink 1 for an open file whose last name is gone (a
 * memfd too); its fd link still ends in " (deleted)", as Linux's does. A
 * file a run named so itself is then counted twice: stricter, never
 * looser. */
static bool link_says_deleted(int dirfd, const char *name)
{
	static const char mark[] = " (deleted)";
	char buf[4096];
	ssize_t n = readlinkat(dirfd, name, buf, sizeof(buf));

	return n >= (ssize_t)sizeof(mark) - 1 && n < (ssize_t)sizeof(buf) &&
	       memcmp(buf + n - (sizeof(mark) - 1), mark, sizeof(mark) - 1) == 0;
}

uint64_t mcpx_usage_unlinked_kb(const struct mcpx_usage_procs *p)
{
	return mcpx_usage_unlinked_kb_of(p->pid, p->n);
}

uint64_t mcpx_usage_unlinked_kb_of(const pid_t *pid, size_t n)
{
	struct unlinked *u = calloc(1, sizeof(*u));
	uint64_t kb;

	if (!u)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char path[64];
		struct dirent *de;
		struct stat st;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid[i]);
		d = opendir(path);
		if (!d)
			continue;
		/* Following the fd's link reaches the open file itself, even
		 * when no name leads to it any more. */
		while ((de = readdir(d)))
			if (de->d_name[0] != '.' && fstatat(dirfd(d), de->d_name, &st, 0) == 0 &&
			    S_ISREG(st.st_mode) &&
			    (st.st_nlink == 0 || link_says_deleted(dirfd(d), de->d_name)))
				note_unlinked(u, &st);
		closedir(d);
	}
	kb = u->kb;
	free(u);
	return kb;
}

/* ---- directory trees ---------------------------------------------------- */

struct tree_walk {
	uint64_t kb, cap_kb;
	int rc;
};

/* Counts the entries of the directory fd (consumed) and what lies beneath;
 * the filter, when given, picks which top-level entries count. */
static void walk_dir(struct tree_walk *w, int fd, unsigned depth,
                     bool (*keep)(const struct stat *st, const void *arg), const void *arg)
{
	struct dirent *de;
	struct stat st;
	DIR *d = fdopendir(fd);

	if (!d) {
		close(fd);
		return;
	}
	while (w->rc == 0 && w->kb <= w->cap_kb && (de = readdir(d))) {
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (keep && !keep(&st, arg))
			continue;
		w->kb += entry_kb(&st);
		if (!S_ISDIR(st.st_mode))
			continue;
		if (depth + 1 >= MAX_DEPTH) {
			w->rc = -ELOOP;
			break;
		}
		/* The run may have made it unreadable to hide what is
		 * inside: opened the way removal opens it. */
		sub = mcpx_workdir_open_dir(dirfd(d), de->d_name);
		if (sub >= 0)
			walk_dir(w, sub, depth + 1, NULL, NULL);
	}
	closedir(d);
}

int mcpx_usage_tree_kb(const char *path, uint64_t cap_kb, uint64_t *kb)
{
	struct tree_walk w = {.cap_kb = cap_kb};
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	*kb = 0;
	if (fd < 0)
		return -errno;
	walk_dir(&w, fd, 0, NULL, NULL);
	*kb = w.kb;
	return w.rc;
}

struct owned_since {
	uid_t uid;
	gid_t gid;
	const struct timespec *since;
};

static bool owned_since(const struct stat *st, const void *arg)
{
	const struct owned_since *o = arg;

	if (st->st_uid != o->uid || st->st_gid != o->gid)
		return false;
	return st->st_ctim.tv_sec > o->since->tv_sec ||
	       (st->st_ctim.tv_sec == o->since->tv_sec && st->st_ctim.tv_nsec >= o->since->tv_nsec);
}

int mcpx_usage_owned_kb(const char *dir, uid_t uid, gid_t gid, const struct timespec *since,
                        uint64_t cap_kb, uint64_t *kb)
{
	struct tree_walk w = {.cap_kb = cap_kb};
	struct owned_since o = {.uid = uid, .gid = gid, .since = since};
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	*kb = 0;
	if (fd < 0)
		return -errno;
	walk_dir(&w, fd, 0, owned_since, &o);
	*kb = w.kb;
	return w.rc;
}
