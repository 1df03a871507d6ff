/*
 * workdir.c - the per-run working directory.
 *
 * What it does: creates a private directory (a random name, 0700) for each
 * run, writes main.py into it, and removes whatever the run left behind,
 * there and in /dev/shm. The directory that holds a workdir stays open for
 * the run's life, so removal does not depend on the path above it (which a
 * run may have made untraversable). Removal walks the tree with
 * openat/unlinkat and O_NOFOLLOW, so a
 * symlink the run planted (to /etc, to the server's files) is removed as a
 * link and never followed. Directories the run made unreadable are given back
 * their owner bits when the server owns them (the pod case), and a run that
 * nests directories thousands deep cannot exhaust the server's fds or stack:
 * anything deeper than MAX_DEPTH is renamed up to the top and removed in a
 * later pass.
 *
 * What it does not do: decide where runs live (the caller passes the base
 * directory) or wipe directories other than the ones it is given.
 */
#include "workdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* Levels walked with open fds before a subtree is lifted to the top. */
#define MAX_DEPTH 32

struct rm_ctx {
	int topfd;        /* the directory being emptied; lifted subtrees go here */
	unsigned removed; /* entries removed or lifted in this pass */
	unsigned lifted;  /* counter for unique names of lifted subtrees */
	int first_err;
};

/* "run-" and six random letters or digits, as mkdtemp makes them. */
static int random_name(char name[11])
{
	static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char r[6];
	size_t i;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -EIO;
	memcpy(name, "run-", 4);
	for (i = 0; i < sizeof(r); i++)
		name[4 + i] = set[r[i] % (sizeof(set) - 1)];
	name[10] = '\0';
	return 0;
}

int mcpx_workdir_create(const char *base, bool chown_to, uid_t uid, gid_t gid, char *out,
                        size_t outlen, int *parent_fd)
{
	char name[11];
	int bfd, fd, tries, rc = -EEXIST;

	*parent_fd = -1;
	if (strlen(base) + 12 > outlen)
		return -ENAMETOOLONG;
	/* The base stays open (O_PATH) for the run's life: cleanup removes
	 * the workdir relative to it, whatever became of the paths above. */
	bfd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (bfd < 0)
		return -errno;
	for (tries = 0; tries < 100 && rc == -EEXIST; tries++) {
		rc = random_name(name);
		if (!rc && mkdirat(bfd, name, 0700) < 0)
			rc = -errno;
	}
	if (rc)
		goto out;
	if (chown_to) {
		/* Through an fd opened without following links: the name lives
		 * in a shared base directory. */
		fd = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fchown(fd, uid, gid) < 0)
			rc = -errno;
		if (fd >= 0)
			close(fd);
		if (rc) {
			unlinkat(bfd, name, AT_REMOVEDIR);
			goto out;
		}
	}
	snprintf(out, outlen, "%s/%s", base, name);
	*parent_fd = bfd;
	bfd = -1;
out:
	if (bfd >= 0)
		close(bfd);
	return rc;
}

int mcpx_workdir_write_file(const char *dir, const char *name, const void *data, size_t len,
                            bool chown_to, uid_t uid, gid_t gid)
{
	const char *p = data;
	int dfd, fd, rc = 0;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	close(dfd);
	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			break;
		}
		p += w;
		len -= (size_t)w;
	}
	if (!rc && chown_to && fchown(fd, uid, gid) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	return rc;
}

/* The run may have chmod'ed a directory of its uid to 0 or 0500. When the
 * server shares that uid (the pod) it may chmod it back; chmod through
 * /proc/self/fd names exactly the inode pfd refers to, so nothing swapped in
 * since can be affected. As root the bits do not matter. */
static void give_back_owner_bits(int pfd)
{
	struct stat st;
	char self[64];

	if (fstat(pfd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 0700) != 0700) {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		(void)chmod(self, (st.st_mode & 07777) | 0700);
	}
}

/* Opens name (relative to dirfd) as a directory for reading, or fails with
 * -ENOTDIR/-ELOOP if it is anything else, symlinks included. */
static int open_dir_at(int dirfd, const char *name)
{
	int pfd, fd, saved;

	pfd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	give_back_owner_bits(pfd);
	fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	saved = errno;
	close(pfd);
	return fd < 0 ? -saved : fd;
}

static int remove_at(struct rm_ctx *c, int dirfd, const char *name, int depth);

/* Removes the entries of the directory open as fd. */
static void empty_dir(struct rm_ctx *c, int fd, int depth)
{
	struct dirent *de;
	DIR *d;
	int dfd, rc;

	dfd = dup(fd);
	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		if (!c->first_err)
			c->first_err = -errno;
		return;
	}
	/* The dup shares the file offset, which an earlier pass left at the
	 * end of the directory. */
	rewinddir(d);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		rc = remove_at(c, fd, de->d_name, depth + 1);
		if (rc && !c->first_err)
			c->first_err = rc;
	}
	closedir(d);
}

/* Moves a too-deep subtree to the top directory, to be emptied in the next
 * pass with fresh fds and stack. */
static int lift(struct rm_ctx *c, int dirfd, const char *name)
{
	char tmp[32];
	int tries;

	for (tries = 0; tries < 16; tries++) {
		snprintf(tmp, sizeof(tmp), ".mcpx-deep-%u", c->lifted++);
		if (renameat2(dirfd, name, c->topfd, tmp, RENAME_NOREPLACE) == 0 ||
		    /* gVisor has no renameat2 flags (EINVAL). A plain rename
		     * may replace what the run left under that name in its
		     * own workdir, which goes anyway. */
		    (errno == EINVAL && renameat(dirfd, name, c->topfd, tmp) == 0)) {
			c->removed++;
			return 0;
		}
		if (errno != EEXIST && errno != ENOTEMPTY && errno != ENOTDIR && errno != EISDIR)
			return -errno;
	}
	return -EEXIST;
}

static int remove_at(struct rm_ctx *c, int dirfd, const char *name, int depth)
{
	int fd;

	/* unlinkat without AT_REMOVEDIR removes files, symlinks, sockets and
	 * fifos as themselves, and fails with EISDIR on a directory. */
	if (unlinkat(dirfd, name, 0) == 0) {
		c->removed++;
		return 0;
	}
	if (errno == ENOENT)
		return 0;
	if (errno != EISDIR)
		return -errno;
	if (depth > MAX_DEPTH)
		return lift(c, dirfd, name);
	fd = open_dir_at(dirfd, name);
	if (fd < 0)
		return fd;
	empty_dir(c, fd, depth);
	close(fd);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0) {
		c->removed++;
		return 0;
	}
	return errno == ENOENT ? 0 : -errno;
}

/* Removes name (relative to parentfd) and its whole tree. */
static int remove_tree_at(int parentfd, const char *name)
{
	struct rm_ctx c = {0};
	int top;

	top = open_dir_at(parentfd, name);
	if (top == -ENOENT)
		return 0;
	if (top == -ENOTDIR || top == -ELOOP)
		return unlinkat(parentfd, name, 0) == 0 || errno == ENOENT ? 0 : -errno;
	if (top < 0)
		return top;
	c.topfd = top;
	/* Each pass removes at least one entry or lifts one subtree, so the
	 * loop ends; a pass without progress means an error we cannot fix. */
	for (;;) {
		c.removed = 0;
		c.first_err = 0;
		empty_dir(&c, top, 0);
		if (unlinkat(parentfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) {
			close(top);
			return 0;
		}
		if (errno != ENOTEMPTY || c.removed == 0)
			break;
	}
	close(top);
	return c.first_err ? c.first_err : -ENOTEMPTY;
}

int mcpx_workdir_remove(const char *path)
{
	if (!path || !path[0])
		return 0;
	return remove_tree_at(AT_FDCWD, path);
}

int mcpx_workdir_remove_in(int parent_fd, const char *path)
{
	const char *name;

	if (!path || !path[0])
		return 0;
	name = strrchr(path, '/');
	name = name ? name + 1 : path;
	if (parent_fd < 0 || !name[0])
		return mcpx_workdir_remove(path);
	/* A run may have taken the owner's bits off the directory that holds
	 * its workdir (the zygote's, in the pod): removing an entry needs
	 * them, the rest is put back by the guard before the next run. */
	give_back_owner_bits(parent_fd);
	return remove_tree_at(parent_fd, name);
}

int mcpx_workdir_open_in(int parent_fd, const char *path)
{
	const char *name = strrchr(path, '/');
	int fd;

	name = name ? name + 1 : path;
	if (parent_fd < 0 || !name[0]) {
		fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	} else {
		give_back_owner_bits(parent_fd);
		fd = openat(parent_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	return fd < 0 ? -errno : fd;
}

int mcpx_workdir_empty(const char *path)
{
	struct rm_ctx c = {0};
	int top, pass;

	top = open_dir_at(AT_FDCWD, path);
	if (top < 0)
		return top;
	c.topfd = top;
	/* As remove_tree_at, but the directory itself stays: passes until a
	 * pass finds nothing left to remove. */
	for (pass = 0; pass < 1000; pass++) {
		c.removed = 0;
		c.first_err = 0;
		empty_dir(&c, top, 0);
		if (c.removed == 0)
			break;
	}
	close(top);
	return c.first_err;
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

int mcpx_workdir_wipe_owned_since(const char *dir, uid_t uid, gid_t gid,
                                  const struct timespec *since)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int dfd, rc = 0, r;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(dup(dfd));
	if (!d) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (st.st_uid != uid || st.st_gid != gid || ts_before(&st.st_ctim, since))
			continue;
		if (S_ISDIR(st.st_mode))
			r = remove_tree_at(dfd, de->d_name);
		else
			r = unlinkat(dfd, de->d_name, 0) == 0 || errno == ENOENT ? 0 : -errno;
		if (r && !rc)
			rc = r;
	}
	closedir(d);
	close(dfd);
	return rc;
}

int mcpx_workdir_open_dir(int dirfd, const char *name)
{
	return open_dir_at(dirfd, name);
}
