/*
 * run_disk_watch.c - inotify on a run's file trees, as a wake-up for its
 * disk reading (run_disk_watch.h).
 *
 * One inotify descriptor per run, watched on the loop. Each watched
 * directory's path is kept by its watch descriptor, so a directory created
 * inside one is watched too (up to MCPX_DISK_WATCH_DIRS). IN_ONLYDIR and
 * IN_DONT_FOLLOW keep a name the run swaps for a symlink from pointing the
 * watch elsewhere; a watch that lands somewhere else anyway only wakes the
 * reading more often. /dev/shm belongs to the whole host (a pod's to the
 * pod): its events count only for entries the run's uid and group own, or
 * every other process writing there would wake this run's readings. The watch struct lives until
 * the loop says the descriptor is closed, so closing from the callback is safe.
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

struct dir_watch {
	int wd;
	char path[PATH_MAX];
};

struct mcpx_disk_watch {
	struct mcpx_watch w;
	void (*fn)(void *arg); /* NULL once closed: the struct waits for the loop */
	void *arg;
	uid_t uid; /* /dev/shm: only the run's entries wake it */
	gid_t gid;
	int shm_wd; /* -1: none */
	size_t n;
	struct dir_watch dirs[MCPX_DISK_WATCH_DIRS];
};

static int add_dir(struct mcpx_disk_watch *dw, const char *path)
{
	int wd;

	if (dw->n >= MCPX_DISK_WATCH_DIRS || strlen(path) >= PATH_MAX)
		return -1;
	wd = inotify_add_watch(dw->w.fd, path, EVENTS | IN_ONLYDIR | IN_DONT_FOLLOW);
	if (wd < 0)
		return -1; /* the timer's readings cover it */
	for (size_t i = 0; i < dw->n; i++)
		if (dw->dirs[i].wd == wd)
			return wd; /* the same directory by another name */
	dw->dirs[dw->n].wd = wd;
	snprintf(dw->dirs[dw->n].path, PATH_MAX, "%s", path);
	dw->n++;
	return wd;
}

/* /dev/shm is shared with every process of the host (a pod's is the
 * pod's): an entry there wakes the reading only if it is the run's, by
 * owner and group as the reading counts it (run_usage.h). */
static bool runs_entry(const struct mcpx_disk_watch *dw, const struct inotify_event *e)
{
	char path[PATH_MAX];
	struct stat st;

	if (e->wd != dw->shm_wd)
		return true;
	if (!e->len || snprintf(path, sizeof(path), "/dev/shm/%s", e->name) >= (int)sizeof(path))
		return false;
	return fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == dw->uid &&
	       st.st_gid == dw->gid;
}

/* A directory created in a watched one (not in /dev/shm, whose
 * subdirectories are left to the readings). */
static void new_dir(struct mcpx_disk_watch *dw, const struct inotify_event *e)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < dw->n; i++)
		if (dw->dirs[i].wd == e->wd && strcmp(dw->dirs[i].path, "/dev/shm") != 0) {
			if (snprintf(path, sizeof(path), "%s/%s", dw->dirs[i].path, e->name) <
			    (int)sizeof(path))
				add_dir(dw, path);
			return;
		}
}

static void on_events(struct mcpx_watch *w, int events)
{
	struct mcpx_disk_watch *dw = w->arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool any = false;
	ssize_t n;

	if (events & MCPX_EV_CLOSED) {
		if (!dw->fn)
			free(dw);
		else
			dw->w.fd = -1; /* the loop ended it; close() frees */
		return;
	}
	while ((n = read(w->fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)(void *)p;

			if ((e->mask & (IN_CREATE | IN_ISDIR)) == (IN_CREATE | IN_ISDIR) && e->len)
				new_dir(dw, e);
			any = any || (e->mask & IN_Q_OVERFLOW) || runs_entry(dw, e);
			p += sizeof(*e) + e->len;
		}
	}
	if (any && dw->fn)
		dw->fn(dw->arg);
}

int mcpx_disk_watch_open(struct mcpx_loop *loop, const char *dir, bool shm, uid_t uid, gid_t gid,
                         void (*fn)(void *arg), void *arg, struct mcpx_disk_watch **out)
{
	struct mcpx_disk_watch *dw = calloc(1, sizeof(*dw));
	int rc;

	*out = NULL;
	if (!dw)
		return -ENOMEM;
	dw->w.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (dw->w.fd < 0) {
		rc = -errno;
		free(dw);
		return rc;
	}
	dw->fn = fn;
	dw->arg = arg;
	dw->uid = uid;
	dw->gid = gid;
	dw->shm_wd = -1;
	(void)add_dir(dw, dir);
	if (shm)
		dw->shm_wd = add_dir(dw, "/dev/shm");
	dw->w.fn = on_events;
	dw->w.arg = dw;
	rc = mcpx_loop_watch(loop, &dw->w);
	if (rc < 0) {
		close(dw->w.fd);
		free(dw);
		return rc;
	}
	*out = dw;
	return 0;
}

void mcpx_disk_watch_add(struct mcpx_disk_watch *dw, const char *dir)
{
	if (dw && dw->fn)
		(void)add_dir(dw, dir);
}

void mcpx_disk_watch_close(struct mcpx_disk_watch *dw)
{
	if (!dw)
		return;
	if (dw->w.fd < 0) { /* the loop already ended the watch */
		free(dw);
		return;
	}
	dw->fn = NULL;
	mcpx_loop_unwatch(&dw->w); /* MCPX_EV_CLOSED frees it */
}
