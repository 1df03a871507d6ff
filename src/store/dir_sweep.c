/*
 * dir_sweep.c - the directory store's expiry: a walk over every caller's
 * objects that removes what is past its time (dir_sweep.h).
 *
 * Reads already treat an expired object as absent; the sweep only gives
 * the space back. It stats first without the lock and, for a caller with
 * something expired, takes that caller's lock and checks again before
 * removing, so an object written again meanwhile (by this replica or
 * another) is kept. A temporary file is an interrupted write once its
 * ctime (its mtime is set to its expiry) is an hour old: a 64 MiB write
 * takes seconds. It also counts what is stored,
 * for the metrics.
 */
#include "dir_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dir_file.h"
#include "store_backend.h"

#define TMP_MAX_AGE_MS (3600 * 1000)
/* A caller whose lock is busy is swept next time. */
#define SWEEP_LOCK_WAIT_MS 1000

static DIR *open_dir_at(int dir, const char *name)
{
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	if (!(d = fdopendir(fd)))
		close(fd);
	return d;
}

static void note_error(struct mcpx_dir_sweep_stats *st, int rc)
{
	if (!st->rc)
		st->rc = rc;
}

/* Removes sub's expired objects, under cdir's lock, re-checked there. */
static void sweep_sub(int cdir, enum mcpx_dir_type t, int64_t now, struct mcpx_dir_sweep_stats *st)
{
	char name[2] = {mcpx_dir_sub(t), '\0'};
	DIR *d = open_dir_at(cdir, name);
	struct dirent *e;
	int lock = -1;
	struct stat s;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!mcpx_dir_name_ok(e->d_name) ||
		    fstatat(dirfd(d), e->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (mcpx_dir_mtime_ms(&s) > now) {
			if (t != MCPX_DIR_LEASE) {
				st->objects++;
				st->bytes += s.st_size > MCPX_DIR_HDR
				                 ? (uint64_t)s.st_size - MCPX_DIR_HDR
				                 : 0;
			}
			continue;
		}
		if (lock < 0 && mcpx_dir_lock(cdir, SWEEP_LOCK_WAIT_MS, &lock) < 0) {
			note_error(st, -ETIMEDOUT);
			break;
		}
		/* Under the lock: still the expired file? */
		if (fstatat(dirfd(d), e->d_name, &s, AT_SYMLINK_NOFOLLOW) == 0 &&
		    mcpx_dir_mtime_ms(&s) <= mcpx_store_now_ms() &&
		    unlinkat(dirfd(d), e->d_name, 0) == 0)
			st->removed++;
	}
	mcpx_dir_unlock(lock);
	closedir(d);
}

/* Temporary files of writes that never finished. */
static void sweep_tmp(int cdir, int64_t now, struct mcpx_dir_sweep_stats *st)
{
	int fd = dup(cdir);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	struct stat s;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (strncmp(e->d_name, ".tmp-", 5) == 0 &&
		    fstatat(cdir, e->d_name, &s, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (int64_t)s.st_ctim.tv_sec * 1000 < now - TMP_MAX_AGE_MS &&
		    unlinkat(cdir, e->d_name, 0) == 0)
			st->removed++;
	closedir(d);
}

static void sweep_kind(int kdir, int64_t now, struct mcpx_dir_sweep_stats *st)
{
	int fd = dup(kdir);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		int cdir;

		if (e->d_name[0] == '.')
			continue;
		cdir = openat(kdir, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cdir < 0)
			continue;
		sweep_sub(cdir, MCPX_DIR_BLOB, now, st);
		sweep_sub(cdir, MCPX_DIR_RECORD, now, st);
		sweep_sub(cdir, MCPX_DIR_LEASE, now, st);
		sweep_tmp(cdir, now, st);
		close(cdir);
	}
	closedir(d);
}

void mcpx_dir_sweep(int root, struct mcpx_dir_sweep_stats *st)
{
	int64_t now = mcpx_store_now_ms();
	DIR *v1 = open_dir_at(root, "v1");
	struct dirent *e;

	memset(st, 0, sizeof(*st));
	if (!v1)
		return;
	while ((e = readdir(v1))) {
		int kdir;

		if (e->d_name[0] == '.')
			continue;
		kdir =
		    openat(dirfd(v1), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (kdir < 0)
			continue;
		sweep_kind(kdir, now, st);
		close(kdir);
	}
	closedir(v1);
}
