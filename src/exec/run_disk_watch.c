/*
 * run_disk_watch.c - inotify on the runs' file trees, as a wake-up for
 * their disk readings (run_disk_watch.h).
 *
 * One inotify descriptor for the process (the watcher), watched on the
 * loop, and a table of its watch descriptors, each with the path it
 * watches and the run it belongs to, so a directory created inside a
 * watched one is watched too (up to MCPX_DISK_WATCH_DIRS per run) and an
 * event reaches the run it is about. /dev/shm has one watch descriptor for
 * the process (the kernel gives one inode one per instance), shared by
 * every run that asked for it; its events go to each of them whose uid and
 * group own the entry. IN_ONLYDIR and IN_DONT_FOLLOW keep a name the run
 * swaps for a symlink from pointing a watch elsewhere; a watch that lands
 * somewhere else anyway only wakes the reading more often.
 *
 * A batch of events is read whole first and the runs told after, each
 * once, found again by id: a run's callback may close another run's watch
 * (or its own) without the walk touching freed memory.
 */
#include "run_disk_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define EVENTS (IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO)
#define SHM "/dev/shm"
/* Runs told per batch (a run and its joined runs share one watch, so a
 * handful at most are ever open at once). */
#define TOLD_MAX 32

struct dir_watch {
	int wd;
	struct mcpx_disk_watch *owner;
	char path[PATH_MAX];
};

struct mcpx_disk_watch {
	struct mcpx_disk_watcher *wr;
	struct mcpx_disk_watch *next; /* the watcher's list */
	unsigned long id;
	void (*fn)(void *arg);
	void *arg;
	uid_t uid; /* /dev/shm: only the run's entries wake it */
	gid_t gid;
	bool shm;
	unsigned dirs;
};

struct mcpx_disk_watcher {
	struct mcpx_watch w;
	bool closing; /* free() asked: the struct waits for MCPX_EV_CLOSED */
	int shm_wd;   /* -1: not yet */
	unsigned long ids;
	struct mcpx_disk_watch *runs;
	size_t n, cap;
	struct dir_watch *dirs;
};

static struct dir_watch *find_wd(struct mcpx_disk_watcher *wr, int wd)
{
	for (size_t i = 0; i < wr->n; i++)
		if (wr->dirs[i].wd == wd)
			return &wr->dirs[i];
	return NULL;
}

/* Watches path for dw (its tree's next directory). */
static void add_dir(struct mcpx_disk_watch *dw, const char *path)
{
	struct mcpx_disk_watcher *wr = dw->wr;
	struct dir_watch *d;
	int wd;

	if (dw->dirs >= MCPX_DISK_WATCH_DIRS || strlen(path) >= PATH_MAX)
		return;
	if (wr->n == wr->cap) {
		size_t cap = wr->cap ? wr->cap * 2 : 16;
		struct dir_watch *v = realloc(wr->dirs, cap * sizeof(*v));

		if (!v)
			return; /* the timer's readings cover it */
		wr->dirs = v;
		wr->cap = cap;
	}
	wd = inotify_add_watch(wr->w.fd, path, EVENTS | IN_ONLYDIR | IN_DONT_FOLLOW);
	if (wd < 0 || wd == wr->shm_wd || find_wd(wr, wd))
		return; /* unreadable, or a directory watched already by another name */
	d = &wr->dirs[wr->n++];
	d->wd = wd;
	d->owner = dw;
	snprintf(d->path, PATH_MAX, "%s", path);
	dw->dirs++;
}

/* The run an event is about (NULL: none, or /dev/shm's, told apart). */
static struct mcpx_disk_watch *owner_of(struct mcpx_disk_watcher *wr, const struct inotify_event *e)
{
	struct dir_watch *d = find_wd(wr, e->wd);
	char path[PATH_MAX];

	if (!d)
		return NULL;
	/* A directory made inside a watched one is watched too. */
	if ((e->mask & (IN_CREATE | IN_ISDIR)) == (IN_CREATE | IN_ISDIR) && e->len &&
	    snprintf(path, sizeof(path), "%s/%s", d->path, e->name) < (int)sizeof(path)) {
		struct mcpx_disk_watch *dw = d->owner;

		add_dir(dw, path); /* may move the table: d is not used after */
		return dw;
	}
	return d->owner;
}

static void tell(unsigned long *told, size_t *n, const struct mcpx_disk_watch *dw)
{
	for (size_t i = 0; i < *n; i++)
		if (told[i] == dw->id)
			return;
	if (*n < TOLD_MAX)
		told[(*n)++] = dw->id;
}

/* A /dev/shm entry: every run that watches it and owns the entry. */
static void shm_event(struct mcpx_disk_watcher *wr, const struct inotify_event *e,
                      unsigned long *told, size_t *n)
{
	char path[PATH_MAX];
	struct stat st;

	if (!e->len || snprintf(path, sizeof(path), SHM "/%s", e->name) >= (int)sizeof(path) ||
	    fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	for (struct mcpx_disk_watch *dw = wr->runs; dw; dw = dw->next)
		if (dw->shm && st.st_uid == dw->uid && st.st_gid == dw->gid)
			tell(told, n, dw);
}

static void on_events(struct mcpx_watch *w, int events)
{
	struct mcpx_disk_watcher *wr = w->arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	unsigned long told[TOLD_MAX];
	size_t n_told = 0;
	ssize_t n;

	if (events & MCPX_EV_CLOSED) {
		if (wr->closing) {
			free(wr->dirs);
			free(wr);
		} else {
			wr->w.fd = -1; /* the loop ended it: no more events */
		}
		return;
	}
	while ((n = read(w->fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)(void *)p;
			struct mcpx_disk_watch *dw;

			if (e->mask & IN_Q_OVERFLOW) {
				for (dw = wr->runs; dw; dw = dw->next)
					tell(told, &n_told, dw);
			} else if (e->wd == wr->shm_wd) {
				shm_event(wr, e, told, &n_told);
			} else if ((dw = owner_of(wr, e))) {
				tell(told, &n_told, dw);
			}
			p += sizeof(*e) + e->len;
		}
	}
	for (size_t i = 0; i < n_told; i++)
		for (struct mcpx_disk_watch *dw = wr->runs; dw; dw = dw->next)
			if (dw->id == told[i]) {
				dw->fn(dw->arg);
				break;
			}
}

int mcpx_disk_watcher_new(struct mcpx_loop *loop, struct mcpx_disk_watcher **out)
{
	struct mcpx_disk_watcher *wr = calloc(1, sizeof(*wr));
	int rc;

	*out = NULL;
	if (!wr)
		return -ENOMEM;
	wr->shm_wd = -1;
	wr->w.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (wr->w.fd < 0) {
		rc = -errno;
		free(wr);
		return rc;
	}
	wr->w.fn = on_events;
	wr->w.arg = wr;
	rc = mcpx_loop_watch(loop, &wr->w);
	if (rc < 0) {
		close(wr->w.fd);
		free(wr);
		return rc;
	}
	*out = wr;
	return 0;
}

void mcpx_disk_watcher_free(struct mcpx_disk_watcher *wr)
{
	if (!wr)
		return;
	if (wr->w.fd < 0) { /* the loop already ended the watch */
		free(wr->dirs);
		free(wr);
		return;
	}
	wr->closing = true;
	mcpx_loop_unwatch(&wr->w); /* MCPX_EV_CLOSED frees it */
}

int mcpx_disk_watch_open(struct mcpx_disk_watcher *wr, const char *dir, bool shm, uid_t uid,
                         gid_t gid, void (*fn)(void *arg), void *arg, struct mcpx_disk_watch **out)
{
	struct mcpx_disk_watch *dw = calloc(1, sizeof(*dw));

	*out = NULL;
	if (!dw)
		return -ENOMEM;
	dw->wr = wr;
	dw->id = ++wr->ids;
	dw->fn = fn;
	dw->arg = arg;
	dw->uid = uid;
	dw->gid = gid;
	dw->shm = shm;
	if (wr->w.fd >= 0) {
		add_dir(dw, dir);
		if (shm && wr->shm_wd < 0)
			wr->shm_wd =
			    inotify_add_watch(wr->w.fd, SHM, EVENTS | IN_ONLYDIR | IN_DONT_FOLLOW);
	}
	dw->next = wr->runs;
	wr->runs = dw;
	*out = dw;
	return 0;
}

void mcpx_disk_watch_add(struct mcpx_disk_watch *dw, const char *dir)
{
	if (dw && dw->wr->w.fd >= 0)
		add_dir(dw, dir);
}

void mcpx_disk_watch_close(struct mcpx_disk_watch *dw)
{
	struct mcpx_disk_watcher *wr;
	size_t kept = 0;

	if (!dw)
		return;
	wr = dw->wr;
	/* Its directories' watches go (a directory already removed has taken
	 * its watch with it: EINVAL, nothing to do). /dev/shm's stays for
	 * the next run. */
	for (size_t i = 0; i < wr->n; i++) {
		if (wr->dirs[i].owner != dw) {
			wr->dirs[kept++] = wr->dirs[i];
			continue;
		}
		if (wr->w.fd >= 0)
			(void)inotify_rm_watch(wr->w.fd, wr->dirs[i].wd);
	}
	wr->n = kept;
	for (struct mcpx_disk_watch **pp = &wr->runs; *pp; pp = &(*pp)->next)
		if (*pp == dw) {
			*pp = dw->next;
			break;
		}
	free(dw);
}
