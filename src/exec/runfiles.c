/*
 * runfiles.c - a run's input files in, its out/ files back (runfiles.h).
 *
 * Input files are the caller's data, checked completely before anything
 * runs and written into a fresh workdir that only trusted code has touched
 * yet; still, every path is walked one component at a time with openat and
 * O_NOFOLLOW, so the code never depends on that.
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
#include <strings.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base64.h"
#include "crypto.h"
#include "fdutil.h"
#include "utf8.h"

/* "out" and up to DEPTH_MAX "/<name>" parts. */
#define WALK_PATH_MAX (4 + MCPX_RUNFILES_DEPTH_MAX * (MCPX_RUNFILES_SEG_MAX + 1) + 1)

/* ---- input ------------------------------------------------------------ */

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

static bool seg_is(const char *s, size_t n, const char *lit)
{
	return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* One segment of a path: not empty, not "." or "..", not too long. */
static int check_segment(const char *s, size_t n, struct mcpx_err *err)
{
	if (n == 0)
		return mcpx_err_set(err, EINVAL,
		                    "empty segments (\"a//b\", a trailing \"/\") are not allowed");
	if (seg_is(s, n, "."))
		return mcpx_err_set(err, EINVAL, "\".\" segments are not allowed");
	if (seg_is(s, n, ".."))
		return mcpx_err_set(err, EINVAL, "\"..\" segments are not allowed");
	if (n > MCPX_RUNFILES_SEG_MAX)
		return mcpx_err_set(err, EINVAL, "a segment is longer than %d bytes",
		                    MCPX_RUNFILES_SEG_MAX);
	return 0;
}

/* The code point of the UTF-8 sequence at s (n bytes left) and its length;
 * a byte that starts no valid sequence is itself, length 1 (such names are
 * judged elsewhere: input paths must be UTF-8, output names are shown with
 * U+FFFD in their place). */
static size_t next_cp(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 1;

	if (s[0] < 0x80 || s[0] > 0xF4 || len == 1 || len > n) {
		*cp = s[0] < 0x80 ? s[0] : 0xFFFD;
		return 1;
	}
	*cp = s[0] & (0x7F >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80) {
			*cp = 0xFFFD;
			return 1;
		}
		*cp = *cp << 6 | (s[i] & 0x3F);
	}
	return len;
}

/* Characters a name must not carry: they would act on whoever reads a
 * listing, a log line or a terminal instead of being read. C0 and C1
 * controls (NUL cuts the name, ESC starts terminal sequences, newline
 * forges lines), DEL, the line and paragraph separators, and the
 * bidirectional-text controls (U+202E shows "gpj.exe" as "exe.jpg"). */
static bool unsafe_cp(uint32_t c)
{
	return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x061C || c == 0x200E || c == 0x200F ||
	       (c >= 0x2028 && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

/* The offset of the first unsafe character in the n bytes at s, or n. */
static size_t unsafe_at(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;

	for (size_t i = 0, k; i < n; i += k) {
		k = next_cp(p + i, n - i, &cp);
		if (unsafe_cp(cp))
			return i;
	}
	return n;
}

bool mcpx_runfiles_name_safe(const char *s, size_t n)
{
	return unsafe_at(s, n) == n && mcpx_utf8_valid(s, n);
}

int mcpx_runfiles_check_path(const char *p, size_t len, struct mcpx_err *err)
{
	size_t start = 0, depth = 0;
	int rc;

	if (len == 0)
		return mcpx_err_set(err, EINVAL, "the path is empty");
	if (len > MCPX_RUNFILES_PATH_MAX)
		return mcpx_err_set(err, EINVAL, "the path is longer than %d bytes",
		                    MCPX_RUNFILES_PATH_MAX);
	if (p[0] == '/')
		return mcpx_err_set(err, EINVAL, "absolute paths are not allowed");
	/* NUL would cut the name short; other control characters and the
	 * bidirectional-text controls only make trouble in logs, listings and
	 * URIs (unsafe_cp). */
	if (unsafe_at(p, len) < len)
		return mcpx_err_set(err, EINVAL,
		                    "control characters are not allowed (nor line separators "
		                    "and bidirectional-text controls such as U+202E)");
	if (!mcpx_utf8_valid(p, len))
		return mcpx_err_set(err, EINVAL, "the path is not valid UTF-8");
	for (size_t i = 0; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		rc = check_segment(p + start, i - start, err);
		if (rc)
			return rc;
		if (++depth > MCPX_RUNFILES_DEPTH_MAX)
			return mcpx_err_set(err, EINVAL, "more than %d segments",
			                    MCPX_RUNFILES_DEPTH_MAX);
		start = i + 1;
	}
	/* "main.py/x" would make main.py a directory, and the code could not
	 * be written: refused as a collision like main.py itself. */
	if (seg_is(p, len, "main.py") || (len > 8 && memcmp(p, "main.py/", 8) == 0))
		return mcpx_err_set(err, EINVAL, "main.py is where the code goes");
	if (seg_is(p, len, "out"))
		return mcpx_err_set(err, EINVAL, "out is the directory for the run's output files");
	if (seg_is(p, len, ".mcpx") || (len > 6 && memcmp(p, ".mcpx/", 6) == 0))
		return mcpx_err_set(err, EINVAL, ".mcpx is the server's (a workspace's variables)");
	return 0;
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

/* ---- content types ---------------------------------------------------- */

struct magic {
	const char *bytes;
	size_t len;
	const char *mime;
	enum mcpx_runfile_kind kind;
};

/* Signatures at offset 0: the four image formats MCP clients show, and a
 * few binary formats worth naming. */
static const struct magic magics[] = {
    {"\x89PNG\r\n\x1a\n", 8, "image/png", MCPX_RUNFILE_IMAGE},
    {"\xff\xd8\xff", 3, "image/jpeg", MCPX_RUNFILE_IMAGE},
    {"GIF87a", 6, "image/gif", MCPX_RUNFILE_IMAGE},
    {"GIF89a", 6, "image/gif", MCPX_RUNFILE_IMAGE},
    {"%PDF-", 5, "application/pdf", MCPX_RUNFILE_BINARY},
    {"PK\x03\x04", 4, "application/zip", MCPX_RUNFILE_BINARY},
    {"\x1f\x8b", 2, "application/gzip", MCPX_RUNFILE_BINARY},
};

/* Text types by extension; text without a known one is text/plain. */
static const struct {
	const char *ext;
	const char *mime;
} text_types[] = {
    {".csv", "text/csv"},          {".tsv", "text/tab-separated-values"},
    {".json", "application/json"}, {".md", "text/markdown"},
    {".html", "text/html"},        {".htm", "text/html"},
    {".xml", "application/xml"},   {".svg", "image/svg+xml"},
    {".py", "text/x-python"},      {".yaml", "application/yaml"},
    {".yml", "application/yaml"},  {".js", "text/javascript"},
    {".css", "text/css"},
};

static const char *text_mime(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	for (size_t i = 0; i < sizeof(text_types) / sizeof(text_types[0]); i++) {
		size_t e = strlen(text_types[i].ext);
		if (n > e && strcasecmp(name + n - e, text_types[i].ext) == 0)
			return text_types[i].mime;
	}
	return "text/plain";
}

const char *mcpx_runfiles_sniff(const void *data, size_t len, const char *name,
                                enum mcpx_runfile_kind *kind)
{
	const char *p = data ? data : "";

	for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++) {
		if (len >= magics[i].len && memcmp(p, magics[i].bytes, magics[i].len) == 0) {
			*kind = magics[i].kind;
			return magics[i].mime;
		}
	}
	/* WebP: a RIFF container whose form type is WEBP. */
	if (len >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0) {
		*kind = MCPX_RUNFILE_IMAGE;
		return "image/webp";
	}
	if (!memchr(p, '\0', len) && mcpx_utf8_valid(p, len)) {
		*kind = MCPX_RUNFILE_TEXT;
		return text_mime(name);
	}
	*kind = MCPX_RUNFILE_BINARY;
	return "application/octet-stream";
}

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
		k = next_cp(p + i, n - i, &cp);
		for (size_t j = 0; j < k && o < cap; j++) {
			if (unsafe_cp(cp) || p[i + j] == '%') {
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
	if (unsafe_at(name, strlen(name)) < strlen(name)) {
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
