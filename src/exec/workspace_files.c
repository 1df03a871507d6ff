/*
 * workspace_files.c - a workspace restored into a run's workdir and
 * collected from it (workspace_files.h).
 *
 * Restore writes only what mcpx_wspack_parse passed, through
 * mcpx_runfiles_put, as input files are written. Collect reads what
 * hostile code left, knowing this source, after its whole process tree is
 * gone: each entry is opened O_PATH|O_NOFOLLOW relative to its parent's
 * descriptor and judged by fstat on that descriptor; only a regular file
 * with one link owned by the run's uid is reopened for reading, through
 * /proc/self/fd (exactly that inode), non-blocking, and read no further
 * than its size and what is left of the cap. A symlink is never followed,
 * a hard link (to the token, to another run's file) never read, a FIFO or
 * socket never opened. The walk is bounded by a count of entries and the
 * depth input paths may have, and it reads straight into the archive, so
 * the server holds a workspace once.
 */
#include "workspace_files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fdutil.h"

#define VARS_HEADER "mcpx-vars 1 "

/* ---- restore ------------------------------------------------------------ */

static bool under(const char *dir, size_t dlen, const char *path)
{
	return strncmp(dir, path, dlen) == 0 && path[dlen] == '/';
}

int mcpx_wsfiles_merge_inputs(struct mcpx_wspack *ws, const struct mcpx_runfiles_in *in,
                              struct mcpx_err *err)
{
	for (size_t i = 0; in && i < in->n; i++) {
		const char *ip = in->v[i].path;
		size_t il = strlen(ip);

		for (size_t j = 0; j < ws->n; j++) {
			const char *wp = ws->files[j].path;
			size_t wl = strlen(wp);

			if (il == wl && memcmp(ip, wp, il) == 0)
				ws->files[j].dropped = true;
			else if (under(wp, wl, ip) || under(ip, il, wp))
				return mcpx_err_set(err, EINVAL,
				                    "input file %s conflicts with the workspace's "
				                    "file %s",
				                    ip, wp);
		}
	}
	return 0;
}

size_t mcpx_wsfiles_restore_bytes(const struct mcpx_wspack *ws, bool python)
{
	size_t n = python ? ws->vars_len + 64 : 0;

	for (size_t i = 0; i < ws->n; i++)
		if (!ws->files[i].dropped)
			n += ws->files[i].len;
	return n;
}

int mcpx_wsfiles_restore(const struct mcpx_wspack *ws, const char *workdir, bool python,
                         size_t vars_limit, const struct mcpx_runfiles_owner *owner,
                         struct mcpx_err *err)
{
	char head[64];
	struct iovec iov[2];
	int wd, rc = 0;

	wd = open(workdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wd < 0)
		return mcpx_err_set(err, errno, "cannot open the workdir: %s", strerror(errno));
	for (size_t i = 0; i < ws->n && !rc; i++) {
		const struct mcpx_wspack_file *f = &ws->files[i];

		if (f->dropped)
			continue;
		iov[0].iov_base = (void *)f->data;
		iov[0].iov_len = f->len;
		rc = mcpx_runfiles_put(wd, f->path, iov, 1, f->exec ? 0700 : 0600, owner);
		if (rc)
			mcpx_err_set(err, -rc, "cannot restore the workspace's file %s: %s",
			             f->path, strerror(-rc));
	}
	if (!rc && python) {
		iov[0].iov_base = head;
		iov[0].iov_len =
		    (size_t)snprintf(head, sizeof(head), VARS_HEADER "%zu\n", vars_limit);
		iov[1].iov_base = (void *)ws->vars;
		iov[1].iov_len = ws->vars ? ws->vars_len : 0;
		rc = mcpx_runfiles_put(wd, ".mcpx/vars.in", iov, 2, 0600, owner);
		if (rc)
			mcpx_err_set(err, -rc, "cannot restore the workspace's variables: %s",
			             strerror(-rc));
	}
	close(wd);
	return rc;
}

/* ---- collect ------------------------------------------------------------ */

struct walk {
	const struct mcpx_wspack_caps *caps;
	uid_t owner;
	struct mcpx_wsfiles_saved *out;
	size_t room;    /* bytes files may still take */
	size_t visited; /* entries examined */
	char path[MCPX_RUNFILES_PATH_MAX + MCPX_RUNFILES_SEG_MAX + 2];
	struct mcpx_err *err;
};

void mcpx_wsfiles_saved_free(struct mcpx_wsfiles_saved *s)
{
	if (!s)
		return;
	mcpx_buf_free(&s->archive);
	memset(s, 0, sizeof(*s));
}

/* The entry name in dfd as an O_PATH fd and its stat; -ENOENT when gone. */
static int judge(int dfd, const char *name, struct stat *st)
{
	int pfd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (pfd < 0)
		return -errno;
	if (fstat(pfd, st) < 0) {
		int rc = -errno;
		close(pfd);
		return rc;
	}
	return pfd;
}

static bool runs_file(uid_t owner, const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_nlink == 1 && st->st_uid == owner && st->st_size >= 0;
}

/* Reads exactly size bytes of the regular file behind pfd into the
 * buffer's room (a file that shrank is read as it is now). */
static int read_into(struct mcpx_buf *b, int pfd, const struct stat *st, size_t size)
{
	char *dst = mcpx_buf_room(b, size);
	size_t got = 0;
	int fd, rc = 0;

	if (!dst)
		return size > b->max - b->len ? -E2BIG : -ENOMEM;
	fd = mcpx_runfiles_reopen(pfd, st, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0400);
	if (fd < 0)
		return fd;
	while (got < size) {
		ssize_t n = read(fd, dst + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (!rc && got < size)
		rc = -EIO; /* nothing of the run is left to change it */
	if (!rc)
		mcpx_buf_commit(b, got);
	return rc;
}

static int too_big(const struct walk *w)
{
	return mcpx_err_set(w->err, E2BIG,
	                    "the workspace would hold more than its cap of %zu bytes "
	                    "(MCP_EXEC_WORKSPACE_MAX_MB)",
	                    w->caps->max_bytes);
}

/* A regular file of the run at w->path: one 'F' record. */
static int take_file(struct walk *w, int pfd, const struct stat *st)
{
	struct mcpx_buf *b = &w->out->archive;
	size_t size = (size_t)st->st_size, mark = b->len;
	int rc;

	if (w->out->files >= w->caps->max_files)
		return mcpx_err_set(w->err, E2BIG, "the workspace would hold more than %u files",
		                    w->caps->max_files);
	if (size > w->room)
		return too_big(w);
	/* The head, then the body read in place. */
	rc = mcpx_wspack_file_head(b, w->path, size, (st->st_mode & 0100) != 0);
	if (!rc)
		rc = read_into(b, pfd, st, size);
	if (rc) {
		b->len = mark;
		return rc == -E2BIG ? too_big(w) : rc;
	}
	w->room -= size;
	w->out->files++;
	w->out->file_bytes += size;
	return 0;
}

static int walk_dir(struct walk *w, int fd, size_t plen, int level);

/* One entry of the directory dfd, whose path is w->path[0..plen). */
static int visit(struct walk *w, int dfd, const char *name, size_t plen, int level)
{
	size_t nlen = strlen(name), at = plen ? plen + 1 : 0;
	struct mcpx_err perr;
	struct stat st;
	int pfd, fd, rc = 0;

	if (++w->visited > MCPX_WSFILES_VISIT_MAX)
		return mcpx_err_set(w->err, E2BIG,
		                    "the workdir holds more than %u entries to look at",
		                    MCPX_WSFILES_VISIT_MAX);
	if (at + nlen >= sizeof(w->path)) {
		w->out->skipped++;
		return 0;
	}
	if (plen)
		w->path[plen] = '/';
	memcpy(w->path + at, name, nlen + 1);
	/* A name an input file could not have is not kept (it could not be
	 * restored); nor the server's own. */
	if (mcpx_runfiles_check_path(w->path, at + nlen, &perr) < 0 ||
	    mcpx_wspack_reserved(w->path, at + nlen)) {
		if (!(level == 0 && mcpx_wspack_reserved(w->path, at + nlen)))
			w->out->skipped++;
		goto out;
	}
	pfd = judge(dfd, name, &st);
	if (pfd < 0) {
		rc = pfd == -ENOENT ? 0 : pfd;
		goto out;
	}
	if (S_ISDIR(st.st_mode) && st.st_uid == w->owner && level + 1 < MCPX_RUNFILES_DEPTH_MAX) {
		fd = mcpx_runfiles_reopen(pfd, &st, O_RDONLY | O_DIRECTORY, 0500);
		rc = fd < 0 ? fd : walk_dir(w, fd, at + nlen, level + 1);
		if (fd >= 0)
			close(fd);
	} else if (runs_file(w->owner, &st)) {
		rc = take_file(w, pfd, &st);
	} else {
		w->out->skipped++;
	}
	close(pfd);
out:
	if (rc && !w->err->msg[0])
		mcpx_err_set(w->err, -rc, "cannot read %s: %s", w->path, strerror(-rc));
	w->path[plen] = '\0';
	return rc;
}

/* The entries of the directory fd, sorted (the archive is the same for the
 * same tree); more than the visit cap leaves fails the collection. */
static int walk_dir(struct walk *w, int fd, size_t plen, int level)
{
	size_t n = 0, room = MCPX_WSFILES_VISIT_MAX - w->visited;
	char **names = NULL;
	bool more;
	int rc;

	rc = mcpx_runfiles_dir_names(fd, room, &names, &n, &more);
	if (!rc && more)
		rc =
		    mcpx_err_set(w->err, E2BIG, "the workdir holds more than %u entries to look at",
		                 MCPX_WSFILES_VISIT_MAX);
	for (size_t i = 0; i < n && !rc; i++)
		rc = visit(w, fd, names[i], plen, level);
	mcpx_runfiles_names_free(names, n);
	return rc;
}

/* The run's own variables: .mcpx/vars.out and .mcpx/names as the runner
 * left them, judged like every other file. *vars_pfd is -1 when there are
 * none (then the previous ones are kept); names are read at once (small),
 * the variables later, straight into the archive. */
static int find_vars(struct walk *w, int wd, int *vars_pfd, struct stat *vst, char **names,
                     size_t *names_len)
{
	struct stat st;
	int mfd = -1, dfd = -1, npfd = -1, rc = 0;
	struct mcpx_buf nb;

	*vars_pfd = -1;
	mcpx_buf_init(&nb, MCPX_WSPACK_NAMES_BYTES);
	mfd = judge(wd, ".mcpx", &st);
	if (mfd < 0 || !S_ISDIR(st.st_mode) || st.st_uid != w->owner)
		goto out;
	dfd = mcpx_runfiles_reopen(mfd, &st, O_RDONLY | O_DIRECTORY, 0500);
	if (dfd < 0)
		goto out;
	*vars_pfd = judge(dfd, "vars.out", vst);
	if (*vars_pfd >= 0 && !runs_file(w->owner, vst))
		mcpx_close_fd(vars_pfd);
	if (*vars_pfd < 0) {
		*vars_pfd = -1;
		goto out;
	}
	npfd = judge(dfd, "names", &st);
	/* A list too long, or not a file of the run's: no names are shown. */
	if (npfd >= 0 && runs_file(w->owner, &st) && (size_t)st.st_size <= nb.max) {
		rc = read_into(&nb, npfd, &st, (size_t)st.st_size);
		if (rc == -EIO)
			rc = 0;
	}
	*names_len = nb.len;
	*names = mcpx_buf_take(&nb, NULL);
out:
	if (rc)
		mcpx_close_fd(vars_pfd);
	if (npfd >= 0)
		close(npfd);
	mcpx_close_fd(&dfd);
	if (mfd >= 0)
		close(mfd);
	mcpx_buf_free(&nb);
	return rc;
}

/* The 'V' and 'N' records and the trailer: the run's variables (read in
 * place from vars_pfd) or the previous ones. */
static int finish(struct walk *w, int vars_pfd, const struct stat *vst, const char *names,
                  size_t names_len, const struct mcpx_wsfiles_prev *prev)
{
	struct mcpx_buf *b = &w->out->archive;
	size_t vlen = vars_pfd >= 0 ? (size_t)vst->st_size : prev ? prev->vars_len : 0;
	size_t mark;
	int rc = 0;

	if (vars_pfd >= 0) {
		rc = mcpx_wspack_vars_head(b, vlen);
		if (!rc)
			rc = read_into(b, vars_pfd, vst, vlen);
		w->out->vars_new = true;
	} else if (prev && prev->vars) {
		rc = mcpx_wspack_add_vars(b, prev->vars, prev->vars_len);
		names = prev->names;
		names_len = prev->names_len;
	} else {
		names = NULL;
	}
	if (!rc && names && names_len) {
		rc = mcpx_wspack_add_names(b, names, names_len);
		mark = b->len - names_len;
		w->out->names = b->data + mark;
		w->out->names_len = names_len;
	}
	if (!rc)
		rc = mcpx_wspack_end(b, w->out->files, w->out->file_bytes);
	if (rc == -E2BIG)
		return too_big(w);
	w->out->vars_bytes = vlen;
	return rc;
}

int mcpx_wsfiles_collect(int workdir_fd, uid_t owner, const struct mcpx_wspack_caps *caps,
                         bool take_vars, const struct mcpx_wsfiles_prev *prev,
                         struct mcpx_wsfiles_saved *out, struct mcpx_err *err)
{
	struct walk *w;
	struct stat st, vst;
	char *names = NULL;
	size_t names_len = 0, vlen;
	int wd = -1, vars_pfd = -1, rc;

	memset(out, 0, sizeof(*out));
	err->msg[0] = '\0';
	w = calloc(1, sizeof(*w));
	if (!w)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	w->caps = caps;
	w->owner = owner;
	w->out = out;
	w->err = err;
	mcpx_buf_init(&out->archive, caps->max_bytes + MCPX_WSPACK_OVERHEAD(caps->max_files));
	rc = fstat(workdir_fd, &st) < 0 ? -errno : 0;
	if (!rc)
		rc = wd = mcpx_runfiles_reopen(workdir_fd, &st, O_RDONLY | O_DIRECTORY, 0500);
	if (rc >= 0 && take_vars)
		rc = find_vars(w, wd, &vars_pfd, &vst, &names, &names_len);
	if (rc >= 0) {
		vlen = vars_pfd >= 0 ? (size_t)vst.st_size : prev ? prev->vars_len : 0;
		rc = vlen > caps->max_bytes ? too_big(w) : 0;
		w->room = caps->max_bytes - (rc ? 0 : vlen);
	}
	if (rc >= 0)
		rc = mcpx_wspack_begin(&out->archive);
	if (rc >= 0)
		rc = walk_dir(w, wd, 0, 0);
	if (rc >= 0)
		rc = finish(w, vars_pfd, &vst, names, names_len, prev);
	if (rc < 0 && !err->msg[0])
		mcpx_err_set(err, -rc, "cannot read the workdir: %s", strerror(-rc));
	if (rc < 0)
		mcpx_wsfiles_saved_free(out);
	mcpx_close_fd(&vars_pfd);
	if (wd >= 0)
		close(wd);
	free(names);
	free(w);
	return rc < 0 ? rc : 0;
}
