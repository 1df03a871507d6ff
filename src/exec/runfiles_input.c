/*
 * runfiles_input.c - a run's input files in (runfiles.h): each added with
 * its path checked, base64 decoded strictly and the decoded bytes in total
 * capped, then written into the workdir before the code starts.
 *
 * Input files are the caller's data, checked completely before anything
 * runs and written into a fresh workdir that only trusted code has touched
 * yet; still, every path is walked one component at a time with openat and
 * O_NOFOLLOW, so the code never depends on that.
 *
 * It does not decide when to run (the executor does), judge a path's
 * characters (runfiles.c) or read anything back (runfiles_output.c).
 */
#include "runfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base64.h"
#include "crypto.h"
#include "fdutil.h"

void mcpx_runfiles_in_init(struct mcpx_runfiles_in *in, size_t max_bytes)
{
	memset(in, 0, sizeof(*in));
	in->max_bytes = max_bytes;
}

void mcpx_runfiles_in_free(struct mcpx_runfiles_in *in)
{
	if (!in)
		return;
	for (size_t i = 0; i < in->n; i++) {
		free(in->v[i].path);
		/* The caller's data, like code and stdin, is not left in freed
		 * memory. */
		if (in->v[i].data)
			mcpx_wipe(in->v[i].data, in->v[i].len);
		free(in->v[i].data);
	}
	free(in->v);
	in->v = NULL;
	in->n = 0;
	in->bytes = 0;
}

/* True when a names a directory on b's path: b starts with a and "/". */
static bool is_dir_of(const char *a, size_t alen, const char *b, size_t blen)
{
	return blen > alen && b[alen] == '/' && memcmp(a, b, alen) == 0;
}

/* The decoded size of strict base64 text (padding optional). */
static size_t base64_decoded_len(const char *s, size_t len)
{
	while (len > 0 && s[len - 1] == '=')
		len--;
	return len / 4 * 3 + (len % 4 == 3 ? 2 : len % 4 == 2 ? 1 : 0);
}

static int check_conflicts(const struct mcpx_runfiles_in *in, const char *path, size_t len,
                           struct mcpx_err *err)
{
	for (size_t i = 0; i < in->n; i++) {
		const char *q = in->v[i].path;
		size_t qlen = strlen(q);

		if (qlen == len && memcmp(q, path, len) == 0)
			return mcpx_err_set(err, EINVAL, "the same path is given twice");
		if (is_dir_of(q, qlen, path, len))
			return mcpx_err_set(err, EINVAL, "a directory on its path is another file");
		if (is_dir_of(path, len, q, qlen))
			return mcpx_err_set(err, EINVAL, "another file lies beneath it");
	}
	return 0;
}

static int decode(const struct mcpx_runfiles_in *in, const char *content, size_t content_len,
                  bool base64, struct mcpx_runfile_in *f, struct mcpx_err *err)
{
	size_t room = in->max_bytes - in->bytes;
	size_t n = base64 ? base64_decoded_len(content, content_len) : content_len;
	ssize_t got;

	if (n > room)
		return mcpx_err_set(
		    err, E2BIG,
		    "the files' decoded size exceeds the limit of %zu bytes in total "
		    "(MCP_EXEC_MAX_FILES_IN_BYTES)",
		    in->max_bytes);
	f->data = malloc(n + 1);
	if (!f->data)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	if (!base64) {
		memcpy(f->data, content, n);
		f->len = n;
		return 0;
	}
	got = mcpx_base64_decode(content, content_len, f->data, n);
	if (got < 0)
		return mcpx_err_set(err, EINVAL,
		                    "content_base64 is not valid base64 (RFC 4648, standard "
		                    "alphabet, no whitespace)");
	f->len = (size_t)got;
	return 0;
}

int mcpx_runfiles_add(struct mcpx_runfiles_in *in, const char *path, size_t path_len,
                      const char *content, size_t content_len, bool base64, struct mcpx_err *err)
{
	struct mcpx_runfile_in f = {0};
	struct mcpx_runfile_in *v;
	int rc;

	rc = mcpx_runfiles_check_path(path, path_len, err);
	if (!rc && in->n >= MCPX_RUNFILES_MAX_IN)
		rc = mcpx_err_set(err, E2BIG, "more than %d files", MCPX_RUNFILES_MAX_IN);
	if (!rc)
		rc = check_conflicts(in, path, path_len, err);
	if (!rc)
		rc = decode(in, content, content_len, base64, &f, err);
	if (rc)
		goto fail;
	f.path = strndup(path, path_len);
	v = f.path ? realloc(in->v, (in->n + 1) * sizeof(*v)) : NULL;
	if (!v) {
		rc = mcpx_err_set(err, ENOMEM, "out of memory");
		goto fail;
	}
	v[in->n++] = f;
	in->v = v;
	in->bytes += f.len;
	return 0;
fail:
	if (f.data)
		mcpx_wipe(f.data, f.len);
	free(f.data);
	free(f.path);
	return rc;
}

/* Opens the directory name in dfd, creating it (0700, the run's) when it
 * does not exist; never through a symlink. Returns the fd or -errno. */
static int make_dir_at(int dfd, const char *name, const struct mcpx_runfiles_owner *own)
{
	bool made = mkdirat(dfd, name, 0700) == 0;
	int fd, rc;

	if (!made && errno != EEXIST)
		return -errno;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (made && own && own->chown_to && fchown(fd, own->uid, own->gid) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int mcpx_runfiles_put(int wd, const char *path, const struct iovec *iov, int iovcnt, mode_t mode,
                      const struct mcpx_runfiles_owner *own)
{
	char seg[MCPX_RUNFILES_SEG_MAX + 1];
	const char *p = path, *slash;
	int cur = -1, fd = -1, rc = 0;

	while ((slash = strchr(p, '/'))) {
		size_t n = (size_t)(slash - p);
		int next;

		if (n > MCPX_RUNFILES_SEG_MAX) {
			rc = -ENAMETOOLONG;
			goto out;
		}
		memcpy(seg, p, n);
		seg[n] = '\0';
		next = make_dir_at(cur >= 0 ? cur : wd, seg, own);
		mcpx_close_fd(&cur);
		if (next < 0)
			return next;
		cur = next;
		p = slash + 1;
	}
	fd = openat(cur >= 0 ? cur : wd, p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	            mode & 0700);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	for (int i = 0; i < iovcnt && !rc; i++)
		rc = write_all(fd, iov[i].iov_base, iov[i].iov_len);
	if (!rc && own && own->chown_to && fchown(fd, own->uid, own->gid) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
out:
	mcpx_close_fd(&cur);
	return rc;
}

/* Writes one checked file below the directory wd, parents included. */
static int write_one(int wd, const struct mcpx_runfile_in *f, const struct mcpx_runfiles_owner *own)
{
	struct iovec iov = {f->data, f->len};

	return mcpx_runfiles_put(wd, f->path, &iov, 1, 0600, own);
}

int mcpx_runfiles_write(const struct mcpx_runfiles_in *in, const char *workdir,
                        const struct mcpx_runfiles_owner *owner, struct mcpx_err *err)
{
	int wd, outfd, rc = 0;

	wd = open(workdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wd < 0)
		return mcpx_err_set(err, errno, "cannot open the workdir: %s", strerror(errno));
	/* out/ exists from the start, so code can write out/x.png without
	 * creating it first. */
	outfd = make_dir_at(wd, "out", owner);
	if (outfd < 0) {
		rc = mcpx_err_set(err, -outfd, "cannot create out/: %s", strerror(-outfd));
		goto out;
	}
	close(outfd);
	for (size_t i = 0; in && i < in->n && !rc; i++) {
		rc = write_one(wd, &in->v[i], owner);
		if (rc)
			mcpx_err_set(err, -rc, "cannot write input file %s: %s", in->v[i].path,
			             strerror(-rc));
	}
out:
	close(wd);
	return rc;
}
