/*
 * runfiles_output.c - a run's out/ files back (runfiles.h), and the pieces
 * of that judged walk a workspace's collection shares.
 *
 * out/ is the run's: hostile code wrote it, knowing this source. It is read
 * only after the run's whole process tree is gone, so nothing changes under
 * the walk; even so each entry is opened O_PATH|O_NOFOLLOW relative to its
 * parent's descriptor and judged by fstat on that descriptor, and only a
 * regular file with one link, owned by the run's uid, is reopened for
 * reading (through /proc/self/fd, which names exactly that inode). A symlink
 * planted anywhere (out itself, a directory on the way, the file) is never
 * followed; a hard link (to the token, to another run's file) is not read;
 * a FIFO or socket is never opened. Reads are bounded by the file's size
 * and by the byte cap, and the walk by a count of entries.
 *
 * It does not decide when to run (the executor does) or encode anything for
 * MCP (the exec tool does).
 */
#include "runfiles.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"
#include "fdutil.h"

#include "runfiles_internal.h"

/* "out" and up to DEPTH_MAX "/<name>" parts. */
#define WALK_PATH_MAX (4 + MCPX_RUNFILES_DEPTH_MAX * (MCPX_RUNFILES_SEG_MAX + 1) + 1)

const char *mcpx_runfiles_reason(enum mcpx_runfile_status st)
{
	switch (st) {
	case MCPX_RUNFILE_TOO_LARGE:
		return "too large";
	case MCPX_RUNFILE_TOO_MANY:
		return "too many";
	case MCPX_RUNFILE_NOT_REGULAR:
		return "not a regular file";
	case MCPX_RUNFILE_UNSAFE_NAME:
		return "unsafe name";
	case MCPX_RUNFILE_RETURNED:
	default:
		return NULL;
	}
}

/* ---- reading out/ back ------------------------------------------------ */

struct walk {
	const struct mcpx_runfiles_caps *caps;
	uid_t owner;
	struct mcpx_runfiles_out *out;
	unsigned returned;
	size_t returned_bytes;
	size_t visited;
	char path[WALK_PATH_MAX]; /* "out/..." of the entry at hand */
	struct mcpx_err *err;
};

void mcpx_runfiles_out_free(struct mcpx_runfiles_out *out)
{
	if (!out)
		return;
	for (size_t i = 0; i < out->n; i++) {
		free(out->v[i].path);
		free(out->v[i].data);
	}
	free(out->v);
	memset(out, 0, sizeof(*out));
}

/* Lists the entry at w->path. Returns it, or NULL when out of memory. */
static struct mcpx_runfile_out *list_entry(struct walk *w, size_t bytes,
                                           enum mcpx_runfile_status st)
{
	struct mcpx_runfiles_out *o = w->out;
	struct mcpx_runfile_out *v, *e;

	/* Grown one at a time: at most LIST_MAX entries. */
	v = realloc(o->v, (o->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	o->v = v;
	e = &v[o->n];
	memset(e, 0, sizeof(*e));
	e->path = strdup(w->path);
	if (!e->path)
		return NULL;
	e->bytes = bytes;
	e->status = st;
	o->n++;
	return e;
}

/* Opens the inode behind the O_PATH descriptor pfd with flags. A run may
 * have taken the read bits from its own file or directory; when the server
 * shares its uid (the pod), it gives the owner's bits back first, through
 * /proc/self/fd, which names exactly this inode (as root the bits do not
 * matter). The tree is the run's own and is removed after the call. */
int mcpx_runfiles_reopen(int pfd, const struct stat *st, int flags, mode_t need)
{
	char self[64];
	int fd;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	if (st->st_uid == geteuid() && (st->st_mode & need) != need)
		(void)chmod(self, (st->st_mode & 07777) | need);
	fd = open(self, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Reads at most size bytes of fd into a new NUL-terminated buffer. */
static int read_bounded(int fd, size_t size, char **data, size_t *len)
{
	char *b = malloc(size + 1);
	size_t got = 0;

	if (!b)
		return -ENOMEM;
	while (got < size) {
		ssize_t n = read(fd, b + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int rc = -errno;
			free(b);
			return rc;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	b[got] = '\0';
	*data = b;
	*len = got;
	return 0;
}

/* A regular file of the run: returned when the caps allow. */
static int take_file(struct walk *w, int pfd, const struct stat *st)
{
	size_t size = (size_t)st->st_size, len = 0;
	struct mcpx_runfile_out *e;
	const char *name;
	char *data = NULL;
	int fd, rc;

	if (w->returned >= w->caps->max_files)
		return list_entry(w, size, MCPX_RUNFILE_TOO_MANY) ? 0 : -ENOMEM;
	if (size > w->caps->max_bytes - w->returned_bytes)
		return list_entry(w, size, MCPX_RUNFILE_TOO_LARGE) ? 0 : -ENOMEM;
	/* O_NONBLOCK and O_NOCTTY although fstat said regular: opening must
	 * never wait or acquire anything, whatever the inode is. */
	fd = mcpx_runfiles_reopen(pfd, st, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0400);
	if (fd < 0)
		return fd;
	rc = read_bounded(fd, size, &data, &len);
	close(fd);
	if (rc)
		return rc;
	e = list_entry(w, len, MCPX_RUNFILE_RETURNED);
	if (!e) {
		free(data);
		return -ENOMEM;
	}
	e->data = data;
	e->len = len;
	name = strrchr(e->path, '/');
	e->mime = mcpx_runfiles_sniff(data, len, name ? name + 1 : e->path, &e->kind);
	mcpx_sha256_hex(data, len, e->sha256);
	w->returned++;
	w->returned_bytes += len;
	return 0;
}

static int walk_dir(struct walk *w, int fd, size_t plen, int level);

/* What visit makes of one entry, judged on its own inode. */
static bool is_runs_dir(const struct walk *w, const struct stat *st, int level)
{
	return S_ISDIR(st->st_mode) && st->st_uid == w->owner && level < MCPX_RUNFILES_DEPTH_MAX;
}

static bool is_runs_file(const struct walk *w, const struct stat *st)
{
	/* One link only: a second name may be a link to a file outside the
	 * workdir (the token, another run's output) made while the run had
	 * access, or a way to list one file twice. */
	return S_ISREG(st->st_mode) && st->st_nlink == 1 && st->st_uid == w->owner &&
	       st->st_size >= 0;
}

/* Appends "/" and name to w->path at plen, each byte of an unsafe
 * character and each '%' written as %XX; cut at the buffer's end. */
static void escape_name(struct walk *w, size_t plen, const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)name;
	size_t n = strlen(name), o = plen, cap = sizeof(w->path) - 4;
	uint32_t cp;

	if (o < cap)
		w->path[o++] = '/';
	for (size_t i = 0, k; i < n && o < cap; i += k) {
		k = mcpx_runfiles_next_cp(p + i, n - i, &cp);
		for (size_t j = 0; j < k && o < cap; j++) {
			if (mcpx_runfiles_unsafe_cp(cp) || p[i + j] == '%') {
				w->path[o++] = '%';
				w->path[o++] = hex[p[i + j] >> 4];
				w->path[o++] = hex[p[i + j] & 0xF];
			} else {
				w->path[o++] = (char)p[i + j];
			}
		}
	}
	w->path[o] = '\0';
}

/* One entry named name in the directory dfd, whose path is w->path[0..plen). */
static int visit(struct walk *w, int dfd, const char *name, size_t plen, int level)
{
	struct stat st;
	int pfd, fd, rc = 0;

	w->visited++;
	if (w->out->n >= MCPX_RUNFILES_LIST_MAX) {
		w->out->truncated = true;
		return 0;
	}
	if (mcpx_runfiles_unsafe_at(name, strlen(name)) < strlen(name)) {
		/* Listed, never read or entered, under a name with those
		 * characters percent-encoded (and '%' too, so the shown name
		 * is unambiguous): the listing cannot carry them. */
		escape_name(w, plen, name);
		rc = list_entry(w, 0, MCPX_RUNFILE_UNSAFE_NAME) ? 0 : -ENOMEM;
		w->path[plen] = '\0';
		return rc;
	}
	snprintf(w->path + plen, sizeof(w->path) - plen, "/%s", name);
	pfd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0 || fstat(pfd, &st) < 0) {
		rc = errno == ENOENT ? 0 : -errno;
		goto out;
	}
	if (is_runs_dir(w, &st, level)) {
		fd = mcpx_runfiles_reopen(pfd, &st, O_RDONLY | O_DIRECTORY, 0500);
		rc = fd < 0 ? fd : walk_dir(w, fd, strlen(w->path), level);
		if (fd >= 0)
			close(fd);
	} else if (is_runs_file(w, &st)) {
		rc = take_file(w, pfd, &st);
	} else {
		rc = list_entry(w, 0, MCPX_RUNFILE_NOT_REGULAR) ? 0 : -ENOMEM;
	}
out:
	if (pfd >= 0)
		close(pfd);
	if (rc && !w->err->msg[0])
		mcpx_err_set(w->err, -rc, "cannot read %s: %s", w->path, strerror(-rc));
	w->path[plen] = '\0';
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void mcpx_runfiles_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The names in directory fd, at most max of them (*more when there are
 * others), sorted. */
int mcpx_runfiles_dir_names(int fd, size_t max, char ***out, size_t *count, bool *more)
{
	char **names = NULL, **nn;
	struct dirent *de;
	size_t n = 0;
	int dfd, rc = 0;
	DIR *d;

	*more = false;
	dfd = dup(fd);
	if (dfd < 0 || !(d = fdopendir(dfd))) {
		rc = -errno;
		if (dfd >= 0)
			close(dfd);
		return rc;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n >= max) {
			*more = true;
			break;
		}
		nn = realloc(names, (n + 1) * sizeof(*nn));
		if (!nn || !(nn[n] = strdup(de->d_name))) {
			names = nn ? nn : names;
			rc = -ENOMEM;
			break;
		}
		names = nn;
		n++;
	}
	closedir(d);
	if (rc) {
		mcpx_runfiles_names_free(names, n);
		return rc;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	*out = names;
	*count = n;
	return 0;
}

static int walk_dir(struct walk *w, int fd, size_t plen, int level)
{
	char **names = NULL;
	size_t n = 0, budget = MCPX_RUNFILES_VISIT_MAX - w->visited;
	bool more;
	int rc;

	rc = mcpx_runfiles_dir_names(fd, budget, &names, &n, &more);
	if (rc)
		return rc;
	if (more)
		w->out->truncated = true;
	for (size_t i = 0; i < n && !rc; i++)
		rc = visit(w, fd, names[i], plen, level + 1);
	mcpx_runfiles_names_free(names, n);
	return rc;
}

/* Opens an absolute directory path (the workdir, which the server made)
 * without following a final symlink, owner bits restored as in reopen. */
static int open_workdir(int workdir_fd)
{
	struct stat st;

	return fstat(workdir_fd, &st) < 0
	           ? -errno
	           : mcpx_runfiles_reopen(workdir_fd, &st, O_RDONLY | O_DIRECTORY, 0500);
}

int mcpx_runfiles_collect(int workdir_fd, uid_t owner, const struct mcpx_runfiles_caps *caps,
                          struct mcpx_runfiles_out *out, struct mcpx_err *err)
{
	struct walk *w;
	struct stat st;
	int wd = -1, pfd = -1, fd = -1, rc = 0;

	memset(out, 0, sizeof(*out));
	err->msg[0] = '\0';
	w = calloc(1, sizeof(*w));
	if (!w)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	w->caps = caps;
	w->owner = owner;
	w->out = out;
	w->err = err;
	strcpy(w->path, "out");

	wd = open_workdir(workdir_fd);
	if (wd < 0) {
		rc = wd;
		goto out;
	}
	pfd = openat(wd, "out", O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0) {
		rc = errno == ENOENT ? 0 : -errno;
		goto out;
	}
	if (fstat(pfd, &st) < 0) {
		rc = -errno;
	} else if (S_ISDIR(st.st_mode) && st.st_uid == owner) {
		fd = mcpx_runfiles_reopen(pfd, &st, O_RDONLY | O_DIRECTORY, 0500);
		rc = fd < 0 ? fd : walk_dir(w, fd, 3, 0);
	} else {
		/* out itself replaced by a symlink or a file. */
		rc = list_entry(w, 0, MCPX_RUNFILE_NOT_REGULAR) ? 0 : -ENOMEM;
	}
out:
	if (rc && !err->msg[0])
		mcpx_err_set(err, -rc, "cannot read %s: %s", w->path, strerror(-rc));
	if (rc)
		mcpx_runfiles_out_free(out);
	mcpx_close_fd(&fd);
	mcpx_close_fd(&pfd);
	mcpx_close_fd(&wd);
	free(w);
	return rc;
}
