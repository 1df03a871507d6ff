/*
 * workspace_pack.c - a workspace's archive written and checked
 * (workspace_pack.h has the format).
 *
 * Parsing reads the string once, front to back, never past its end: each
 * record's head is checked to fit before it is read, each size against what
 * is left and against the caps, so a size that lies is "truncated" or "over
 * the cap", never a read beyond the buffer or an allocation it decides.
 * Paths are copied (the only allocation, bounded by the file cap) and
 * judged by the input files' rules; duplicates and a file that is another
 * file's directory are found on the sorted list. Nothing is written
 * anywhere: workspace_files.c writes what passed.
 */
#include "workspace_pack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runfiles.h"

struct reader {
	const unsigned char *p;
	size_t left;
};

static bool take(struct reader *r, size_t n, const unsigned char **at)
{
	if (n > r->left)
		return false;
	*at = r->p;
	r->p += n;
	r->left -= n;
	return true;
}

static uint64_t be(const unsigned char *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static void put_be(unsigned char *p, uint64_t v, size_t n)
{
	for (size_t i = n; i-- > 0; v >>= 8)
		p[i] = (unsigned char)(v & 0xFF);
}

void mcpx_wspack_free(struct mcpx_wspack *ws)
{
	if (!ws)
		return;
	for (size_t i = 0; i < ws->n; i++)
		free(ws->files[i].path);
	free(ws->files);
	memset(ws, 0, sizeof(*ws));
}

bool mcpx_wspack_reserved(const char *path, size_t len)
{
	static const char *const files[] = {"main.py", "main.sh", "main.mjs"};

	/* out/ is the run's output, never kept; .mcpx/ holds the variables,
	 * which travel in their own record. */
	if (len >= 3 && memcmp(path, "out", 3) == 0 && (len == 3 || path[3] == '/'))
		return true;
	if (len >= 5 && memcmp(path, ".mcpx", 5) == 0 && (len == 5 || path[5] == '/'))
		return true;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (len == strlen(files[i]) && memcmp(path, files[i], len) == 0)
			return true;
	return false;
}

static int cmp_files(const void *a, const void *b)
{
	return strcmp(((const struct mcpx_wspack_file *)a)->path,
	              ((const struct mcpx_wspack_file *)b)->path);
}

/* Whether the first n bytes of path name a file of the sorted list. */
static bool is_file(const struct mcpx_wspack *ws, const char *path, size_t n)
{
	size_t lo = 0, hi = ws->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *q = ws->files[mid].path;
		int c = strncmp(q, path, n);

		if (c == 0 && q[n] != '\0')
			c = 1;
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* No path twice, and no file on another file's path as its directory. */
static int check_tree(struct mcpx_wspack *ws, struct mcpx_err *err)
{
	if (ws->n > 1)
		qsort(ws->files, ws->n, sizeof(ws->files[0]), cmp_files);
	for (size_t i = 0; i < ws->n; i++) {
		const char *p = ws->files[i].path;

		if (i > 0 && strcmp(ws->files[i - 1].path, p) == 0)
			return mcpx_err_set(err, EINVAL,
			                    "the workspace's archive names a file twice");
		for (const char *s = strchr(p, '/'); s; s = strchr(s + 1, '/'))
			if (is_file(ws, p, (size_t)(s - p)))
				return mcpx_err_set(err, EINVAL,
				                    "the workspace's archive has a file beneath "
				                    "another file");
	}
	return 0;
}

static int truncated(struct mcpx_err *err)
{
	return mcpx_err_set(err, EINVAL, "the workspace's archive is truncated");
}

static int too_big(const struct mcpx_wspack_caps *caps, struct mcpx_err *err)
{
	return mcpx_err_set(err, E2BIG, "the workspace holds more than its cap of %zu bytes",
	                    caps->max_bytes);
}

/* One 'F' record, its type byte read. */
static int parse_file(struct reader *r, const struct mcpx_wspack_caps *caps, struct mcpx_wspack *ws,
                      size_t *cap_files, struct mcpx_err *err)
{
	const unsigned char *hd, *h, *path, *data;
	struct mcpx_wspack_file *v, f = {0};
	struct mcpx_err perr;
	size_t plen;
	uint64_t size;

	if (!take(r, 3, &hd))
		return truncated(err);
	plen = (size_t)be(hd + 1, 2);
	if (!take(r, plen, &path) || !take(r, 8, &h))
		return truncated(err);
	size = be(h, 8);
	if (size > r->left)
		return truncated(err);
	if (size > caps->max_bytes - ws->file_bytes)
		return too_big(caps, err);
	take(r, (size_t)size, &data);
	if (mcpx_runfiles_check_path((const char *)path, plen, &perr) < 0)
		return mcpx_err_set(err, EINVAL, "the workspace's archive has a bad path: %s",
		                    perr.msg);
	if (mcpx_wspack_reserved((const char *)path, plen))
		return mcpx_err_set(err, EINVAL,
		                    "the workspace's archive has a file where the server's go");
	if (ws->n >= caps->max_files)
		return mcpx_err_set(err, E2BIG, "the workspace's archive has more than %u files",
		                    caps->max_files);
	if (ws->n == *cap_files) {
		size_t want = *cap_files ? *cap_files * 2 : 16;
		v = realloc(ws->files, want * sizeof(*v));
		if (!v)
			return mcpx_err_set(err, ENOMEM, "out of memory");
		ws->files = v;
		*cap_files = want;
	}
	f.path = strndup((const char *)path, plen);
	if (!f.path)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	f.data = (const char *)data;
	f.len = (size_t)size;
	f.exec = hd[0] & 1;
	ws->files[ws->n++] = f;
	ws->file_bytes += f.len;
	return 0;
}

/* A 'V' or 'N' record, its type byte read: a blob of size_len-byte size. */
static int parse_blob(struct reader *r, size_t size_len, size_t max, const char **out,
                      size_t *out_len, struct mcpx_err *err)
{
	const unsigned char *h, *data;
	uint64_t size;

	if (*out)
		return mcpx_err_set(err, EINVAL, "the workspace's archive repeats a record");
	if (!take(r, size_len, &h))
		return truncated(err);
	size = be(h, size_len);
	if (size > r->left)
		return truncated(err);
	if (size > max)
		return mcpx_err_set(err, E2BIG,
		                    "the workspace holds more than its cap of %zu bytes", max);
	take(r, (size_t)size, &data);
	*out = (const char *)data;
	*out_len = (size_t)size;
	return 0;
}

/* The 'E' trailer, its type byte read: agrees with the records, ends the
 * string. */
static int parse_end(struct reader *r, const struct mcpx_wspack *ws, struct mcpx_err *err)
{
	const unsigned char *h;

	if (!take(r, 12, &h))
		return truncated(err);
	if (be(h, 4) != ws->n || be(h + 4, 8) != ws->file_bytes)
		return mcpx_err_set(err, EINVAL,
		                    "the workspace's archive does not match its own count");
	if (r->left)
		return mcpx_err_set(err, EINVAL, "the workspace's archive goes on after its end");
	return 0;
}

static int parse_records(struct reader *r, const struct mcpx_wspack_caps *caps,
                         struct mcpx_wspack *ws, struct mcpx_err *err)
{
	const unsigned char *t;
	size_t cap_files = 0;
	int rc = 0;

	while (rc == 0) {
		if (!take(r, 1, &t))
			return truncated(err);
		switch (*t) {
		case 'F':
			rc = parse_file(r, caps, ws, &cap_files, err);
			break;
		case 'V':
			rc = parse_blob(r, 8, caps->max_bytes, &ws->vars, &ws->vars_len, err);
			break;
		case 'N':
			rc = parse_blob(r, 4, MCPX_WSPACK_NAMES_BYTES, &ws->names, &ws->names_len,
			                err);
			break;
		case 'E':
			return parse_end(r, ws, err);
		default:
			return mcpx_err_set(err, EINVAL,
			                    "the workspace's archive has an unknown record");
		}
	}
	return rc;
}

int mcpx_wspack_parse(const char *p, size_t len, const struct mcpx_wspack_caps *caps,
                      struct mcpx_wspack *out, struct mcpx_err *err)
{
	struct reader r = {(const unsigned char *)p, len};
	const unsigned char *magic;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len == 0)
		return 0;
	if (!take(&r, MCPX_WSPACK_MAGIC_LEN, &magic) ||
	    memcmp(magic, MCPX_WSPACK_MAGIC, MCPX_WSPACK_MAGIC_LEN) != 0)
		return mcpx_err_set(err, EINVAL,
		                    "the workspace's archive is not one this server reads "
		                    "(format %s expected)",
		                    "MCPXWS1");
	rc = parse_records(&r, caps, out, err);
	if (!rc && out->vars_len > caps->max_bytes - out->file_bytes)
		rc = too_big(caps, err);
	if (!rc)
		rc = check_tree(out, err);
	if (rc)
		mcpx_wspack_free(out);
	return rc;
}

/* ---- writing ------------------------------------------------------------ */

int mcpx_wspack_begin(struct mcpx_buf *b)
{
	return mcpx_buf_add(b, MCPX_WSPACK_MAGIC, MCPX_WSPACK_MAGIC_LEN);
}

int mcpx_wspack_file_head(struct mcpx_buf *b, const char *path, size_t size, bool exec)
{
	unsigned char h[4], sz[8];
	size_t plen = strlen(path);
	int rc;

	if (plen > 0xFFFF)
		return -EINVAL;
	h[0] = 'F';
	h[1] = exec ? 1 : 0;
	put_be(h + 2, plen, 2);
	put_be(sz, size, 8);
	/* Room for the whole record first, so a failure leaves no half of it. */
	if (4 + plen + 8 > b->max - b->len || size > b->max - b->len - (4 + plen + 8))
		return -E2BIG;
	rc = mcpx_buf_add(b, h, 4);
	if (!rc)
		rc = mcpx_buf_add(b, path, plen);
	return rc ? rc : mcpx_buf_add(b, sz, 8);
}

int mcpx_wspack_add_file(struct mcpx_buf *b, const char *path, const char *data, size_t len,
                         bool exec)
{
	int rc = mcpx_wspack_file_head(b, path, len, exec);

	return !rc && len ? mcpx_buf_add(b, data, len) : rc;
}

static int blob_head(struct mcpx_buf *b, char type, size_t len, size_t size_len)
{
	unsigned char h[9];

	h[0] = (unsigned char)type;
	put_be(h + 1, len, size_len);
	if (1 + size_len > b->max - b->len || len > b->max - b->len - (1 + size_len))
		return -E2BIG;
	return mcpx_buf_add(b, h, 1 + size_len);
}

int mcpx_wspack_vars_head(struct mcpx_buf *b, size_t size)
{
	return blob_head(b, 'V', size, 8);
}

int mcpx_wspack_add_vars(struct mcpx_buf *b, const char *vars, size_t len)
{
	int rc = blob_head(b, 'V', len, 8);

	return !rc && len ? mcpx_buf_add(b, vars, len) : rc;
}

int mcpx_wspack_add_names(struct mcpx_buf *b, const char *names, size_t len)
{
	int rc;

	if (len > MCPX_WSPACK_NAMES_BYTES)
		return -E2BIG;
	rc = blob_head(b, 'N', len, 4);
	return !rc && len ? mcpx_buf_add(b, names, len) : rc;
}

int mcpx_wspack_end(struct mcpx_buf *b, uint32_t files, uint64_t bytes)
{
	unsigned char t[13];

	t[0] = 'E';
	put_be(t + 1, files, 4);
	put_be(t + 5, bytes, 8);
	return mcpx_buf_add(b, t, sizeof(t));
}

/* ---- the names' list ---------------------------------------------------- */

/* A variable's name as the runner writes it: ASCII letters, digits and
 * '_', or UTF-8 beyond ASCII that carries no unsafe character. */
static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || n > MCPX_WSPACK_NAME_MAX || !mcpx_runfiles_name_safe(s, n))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x80 && !(c == '_' || (c >= '0' && c <= '9') ||
		                  ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')))
			return false;
	}
	return true;
}

void mcpx_wspack_names(const char *p, size_t len,
                       void (*fn)(void *arg, bool kept, const char *name, size_t len), void *arg)
{
	size_t given = 0;

	while (len > 0 && given < MCPX_WSPACK_NAMES_MAX) {
		const char *nl = memchr(p, '\n', len);
		size_t n = nl ? (size_t)(nl - p) : len;

		if (n >= 2 && (p[0] == '+' || p[0] == '-') && name_ok(p + 1, n - 1)) {
			fn(arg, p[0] == '+', p + 1, n - 1);
			given++;
		}
		if (!nl)
			break;
		p = nl + 1;
		len -= n + 1;
	}
}
