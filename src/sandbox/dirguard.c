/*
 * dirguard.c - keeps the directories above the runs' workdirs as the server
 * made them.
 *
 * Why it exists: Landlock has no right for chmod, chgrp, utime or extended
 * attributes, and seccomp cannot tell one path from another. The kernel
 * allows those changes to the owner of a directory (chmod, chgrp to one of
 * the owner's groups, explicit times, ACLs) and, for user.* attributes on a
 * directory that is not sticky, to anyone who may write it. So a run can
 * change the metadata of every directory on its workdir's path that its uid
 * owns or may write: the fork server's zygote directory (which holds the
 * workdirs) and a workdir base that belongs to the run uid. Whatever it
 * changes there a later run sees (a channel between runs), and a chmod 000
 * makes every later run fail to start. Where the layout can put such a
 * directory out of the run's reach (a root server gives the zygote's
 * directory to root once the zygote is ready, forkserver.c), it does; this
 * module guards what is left, which is the pod's case: server and runs share
 * uid 65532 and nothing can belong to anyone else.
 *
 * What it does: for each guarded directory it keeps an fd and a snapshot of
 * the permission bits, the group and the extended attributes a run could
 * change (user.* where the run may write, POSIX ACLs where it owns the
 * directory). Repair, before every run starts (spawn.c, forkserver.c),
 * checks that the path still names the same directory and puts back the
 * group, the attributes and the bits, and sets the times of a directory the
 * run uid owns to now, so no value a run chose survives it. The ctime the
 * repair leaves is the server's, not the run's.
 *
 * What it does not do: guard anything else the run uid owns (outside the
 * pod, a server running as a login user shares every file of that user with
 * its runs; docs/security.md says so), or stop a run from changing a
 * guarded directory while it runs: it only makes sure the change does not
 * outlive the run. security.* and trusted.* attributes are left alone: they
 * need privileges a run does not have.
 */
#include "dirguard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fdutil.h"

void mcpx_dirguards_init(struct mcpx_dirguards *gs)
{
	gs->parent = NULL;
	gs->n = 0;
}

/* The attributes a run could have changed on g: user.* where it may write
 * (or owns), POSIX ACLs (system.posix_acl_access/default) where it owns. */
static bool changeable(const struct mcpx_dirguard *g, const char *name)
{
	if (g->attrs && !strncmp(name, "user.", 5))
		return true;
	return g->owner && !strncmp(name, "system.posix_acl_", 17);
}

/* The names of g's current attributes into a heap buffer (*out, *len);
 * a filesystem without attributes gives an empty list. */
static int list_xattrs(int fd, char **out, size_t *len)
{
	int tries;

	*out = NULL;
	*len = 0;
	/* The list can grow between the two calls (a run adding names while
	 * the fork server repairs); a few tries settle it. */
	for (tries = 0; tries < 4; tries++) {
		ssize_t n = flistxattr(fd, NULL, 0);
		char *buf;

		if (n < 0)
			return errno == ENOTSUP || errno == ENOSYS ? 0 : -errno;
		if (n == 0)
			return 0;
		buf = malloc((size_t)n + 1);
		if (!buf)
			return -ENOMEM;
		n = flistxattr(fd, buf, (size_t)n);
		if (n >= 0) {
			buf[n] = '\0';
			*out = buf;
			*len = (size_t)n;
			return 0;
		}
		free(buf);
		if (errno != ERANGE)
			return -errno;
	}
	return -ERANGE;
}

/* Finds name in g's snapshot: its value and length, or false. */
static bool snapshot_value(const struct mcpx_dirguard *g, const char *name, const char **val,
                           size_t *vlen)
{
	size_t off = 0;

	while (off < g->xattr_len) {
		const char *n = g->xattrs + off;
		size_t nl = strlen(n);
		const unsigned char *l = (const unsigned char *)n + nl + 1;
		size_t len = ((size_t)l[0] << 8) | l[1];

		if (!strcmp(n, name)) {
			*val = (const char *)l + 2;
			*vlen = len;
			return true;
		}
		off += nl + 3 + len;
	}
	return false;
}

static int snapshot_xattrs(struct mcpx_dirguard *g, struct mcpx_err *err)
{
	char *names, *n;
	size_t len;
	int rc;

	g->xattr_len = 0;
	rc = list_xattrs(g->fd, &names, &len);
	if (rc)
		return mcpx_err_set(err, -rc, "cannot list the attributes of %s: %s", g->path,
		                    strerror(-rc));
	for (n = names; n && n < names + len; n += strlen(n) + 1) {
		size_t nl = strlen(n), room;
		char *p = g->xattrs + g->xattr_len;
		ssize_t vl;

		if (!changeable(g, n))
			continue;
		room = sizeof(g->xattrs) - g->xattr_len;
		if (nl + 3 > room) {
			rc = -E2BIG;
			break;
		}
		vl = fgetxattr(g->fd, n, p + nl + 3, room - nl - 3);
		if (vl < 0 || vl > 0xffff) {
			rc = vl < 0 && errno != ERANGE ? -errno : -E2BIG;
			break;
		}
		memcpy(p, n, nl + 1);
		p[nl + 1] = (char)((size_t)vl >> 8);
		p[nl + 2] = (char)((size_t)vl & 0xff);
		g->xattr_len += nl + 3 + (size_t)vl;
	}
	free(names);
	if (rc)
		return mcpx_err_set(err, -rc, "cannot keep the attributes of %s: %s", g->path,
		                    rc == -E2BIG ? "more than a guard holds" : strerror(-rc));
	return 0;
}

/* True when name's current value on fd is exactly val. */
static bool same_value(int fd, const char *name, const char *val, size_t vlen)
{
	char *cur = malloc(vlen + 1);
	ssize_t n;
	bool same;

	if (!cur)
		return false;
	n = fgetxattr(fd, name, cur, vlen + 1);
	same = n == (ssize_t)vlen && !memcmp(cur, val, vlen);
	free(cur);
	return same;
}

/* Removes attributes the run added and puts back the ones it changed or
 * removed. */
static int repair_xattrs(const struct mcpx_dirguard *g)
{
	const char *val;
	size_t len, vlen, off;
	char *names, *n;
	int rc;

	rc = list_xattrs(g->fd, &names, &len);
	if (rc)
		return rc;
	for (n = names; n && n < names + len && !rc; n += strlen(n) + 1) {
		if (changeable(g, n) && !snapshot_value(g, n, &val, &vlen) &&
		    fremovexattr(g->fd, n) < 0 && errno != ENODATA)
			rc = -errno;
	}
	free(names);
	for (off = 0; off < g->xattr_len && !rc;) {
		const char *name = g->xattrs + off;
		size_t nl = strlen(name);
		const unsigned char *l = (const unsigned char *)name + nl + 1;

		vlen = ((size_t)l[0] << 8) | l[1];
		val = (const char *)l + 2;
		if (!same_value(g->fd, name, val, vlen) && fsetxattr(g->fd, name, val, vlen, 0) < 0)
			rc = -errno;
		off += nl + 3 + vlen;
	}
	return rc;
}

static int repair_one(const struct mcpx_dirguard *g, struct mcpx_err *err)
{
	struct stat st, now;
	int rc = 0;

	if (fstat(g->fd, &st) < 0)
		return mcpx_err_set(err, errno, "cannot stat %s: %s", g->path, strerror(errno));
	/* Without Landlock a run may rename what it can write: a path that
	 * names another directory now is not the server's any more. */
	if (lstat(g->path, &now) < 0 || now.st_dev != g->dev || now.st_ino != g->ino)
		return mcpx_err_set(err, ESTALE, "%s is no longer the directory the server made",
		                    g->path);
	if (g->owner && st.st_gid != g->gid && fchown(g->fd, (uid_t)-1, g->gid) < 0)
		rc = -errno;
	/* The bits first: without write permission (chmod 000) not even the
	 * owner may change attributes. Restoring an ACL rewrites the bits from
	 * it, so they are checked once more afterwards. */
	if (!rc && g->owner && (st.st_mode & 07777) != g->mode && fchmod(g->fd, g->mode) < 0)
		rc = -errno;
	if (!rc)
		rc = repair_xattrs(g);
	if (!rc && g->owner && fstat(g->fd, &st) == 0 && (st.st_mode & 07777) != g->mode &&
	    fchmod(g->fd, g->mode) < 0)
		rc = -errno;
	if (!rc && g->owner && futimens(g->fd, NULL) < 0)
		rc = -errno;
	if (rc)
		return mcpx_err_set(err, -rc, "cannot restore %s as the server made it: %s",
		                    g->path, strerror(-rc));
	return 0;
}

int mcpx_dirguards_repair(const struct mcpx_dirguards *gs, struct mcpx_err *err)
{
	size_t i;
	int rc;

	if (!gs)
		return 0;
	if (gs->parent) {
		rc = mcpx_dirguards_repair(gs->parent, err);
		if (rc)
			return rc;
	}
	for (i = 0; i < gs->n; i++) {
		rc = repair_one(&gs->g[i], err);
		if (rc)
			return rc;
	}
	return 0;
}

int mcpx_dirguards_add(struct mcpx_dirguards *gs, const char *path, uid_t run_uid,
                       struct mcpx_err *err)
{
	struct mcpx_dirguard *g;
	struct stat st;
	bool owner, attrs;
	int fd, rc;

	if (lstat(path, &st) < 0)
		return mcpx_err_set(err, errno, "cannot stat %s: %s", path, strerror(errno));
	owner = st.st_uid == run_uid;
	attrs = owner || ((st.st_mode & 0022) && !(st.st_mode & S_ISVTX));
	if (!owner && !attrs)
		return 0;
	if (gs->n >= MCPX_DIRGUARD_MAX)
		return mcpx_err_set(err, E2BIG, "more than %d directories above %s to guard",
		                    MCPX_DIRGUARD_MAX, path);
	if (strlen(path) >= sizeof(gs->g[0].path))
		return mcpx_err_set(err, ENAMETOOLONG, "path too long to guard");
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return mcpx_err_set(err, errno, "cannot open %s to guard it: %s", path,
		                    strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = mcpx_err_set(err, errno, "cannot stat %s: %s", path, strerror(errno));
		close(fd);
		return rc;
	}
	g = &gs->g[gs->n];
	g->fd = fd;
	strcpy(g->path, path);
	g->dev = st.st_dev;
	g->ino = st.st_ino;
	g->mode = st.st_mode & 07777;
	g->gid = st.st_gid;
	g->owner = owner;
	g->attrs = attrs;
	rc = snapshot_xattrs(g, err);
	if (rc) {
		close(fd);
		return rc;
	}
	gs->n++;
	return 0;
}

int mcpx_dirguards_add_chain(struct mcpx_dirguards *gs, const char *dir, uid_t run_uid,
                             struct mcpx_err *err)
{
	char real[PATH_MAX], prefix[PATH_MAX];
	size_t len, end;
	int rc;

	if (!realpath(dir, real))
		return mcpx_err_set(err, errno, "cannot resolve %s: %s", dir, strerror(errno));
	len = strlen(real);
	/* Top-down, so repair fixes an ancestor before what lies under it. */
	rc = mcpx_dirguards_add(gs, "/", run_uid, err);
	for (end = 1; !rc && len > 1 && end <= len; end++) {
		if (end < len && real[end] != '/')
			continue;
		memcpy(prefix, real, end);
		prefix[end] = '\0';
		rc = mcpx_dirguards_add(gs, prefix, run_uid, err);
	}
	return rc;
}

void mcpx_dirguards_close(struct mcpx_dirguards *gs)
{
	size_t i;

	for (i = 0; i < gs->n; i++)
		mcpx_close_fd(&gs->g[i].fd);
	gs->n = 0;
	gs->parent = NULL;
}
