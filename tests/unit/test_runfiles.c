/*
 * test_runfiles.c - a run's files (runfiles.h) on a real filesystem: the
 * path validator (every rule, with its message), the content sniffer
 * (images by magic, not by name), adding input files (conflicts, caps,
 * base64), writing them (parents, modes, ownership, never through a
 * planted symlink) and reading out/ back (symlinks at every level, hard
 * links, FIFOs, foreign owners, depth, caps, the listing bound, sorting,
 * and the pod's same-uid case with permissions the run took away).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "runfiles.h"

static char base[] = "/tmp/mcpx-runfiles-XXXXXX";

/* ---- helpers ---- */

static void put(const char *rel, const void *data, size_t len)
{
	char p[8300];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
		fprintf(stderr, "cannot write %s\n", p);
		exit(1);
	}
	close(fd);
}

static void mk(const char *rel)
{
	char p[8300];

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	if (mkdir(p, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "cannot mkdir %s: %s\n", p, strerror(errno));
		exit(1);
	}
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0) {
		fprintf(stderr, "failed: %s\n", cmd);
		exit(1);
	}
}

static void reset(void)
{
	sh("rm -rf '%s'", base);
	if (mkdir(base, 0700) < 0) {
		perror("mkdir");
		exit(1);
	}
}

static const struct mcpx_runfile_out *find(const struct mcpx_runfiles_out *o, const char *path)
{
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->v[i].path, path) == 0)
			return &o->v[i];
	return NULL;
}

static int collect(struct mcpx_runfiles_out *o, unsigned max_files, size_t max_bytes)
{
	struct mcpx_runfiles_caps caps = {max_files, max_bytes};
	struct mcpx_err err = {{0}};
	int wd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int rc = mcpx_runfiles_collect(wd, geteuid(), &caps, o, &err);

	close(wd);

	if (rc)
		fprintf(stderr, "collect: %s\n", err.msg);
	return rc;
}

/* ---- the path validator ---- */

static void expect_path(const char *p, const char *want, int line)
{
	struct mcpx_err err = {{0}};
	int rc = mcpx_runfiles_check_path(p, strlen(p), &err);

	if ((want == NULL) != (rc == 0) || (want && strcmp(err.msg, want) != 0)) {
		fprintf(stderr, "test_runfiles.c:%d: path \"%s\": rc %d \"%s\", want \"%s\"\n",
		        line, p, rc, rc ? err.msg : "", want ? want : "ok");
		check_failures++;
	}
}

#define PATH_OK(p) expect_path(p, NULL, __LINE__)
#define PATH_BAD(p, msg) expect_path(p, msg, __LINE__)

static void test_paths(void)
{
	char longp[2048], seg[300];
	struct mcpx_err err;

	PATH_OK("a");
	PATH_OK("data/input.csv");
	PATH_OK("out/x.png");
	PATH_OK(".hidden");
	PATH_OK("a..b/...");
	PATH_OK("dir/.config/x");
	PATH_OK("\xc3\xbcn\xc3\xaf/\xc3\xa7.txt");
	PATH_OK("main.py.bak");
	PATH_OK("sub/main.py");
	PATH_OK("outside");

	PATH_BAD("", "the path is empty");
	PATH_BAD("/etc/passwd", "absolute paths are not allowed");
	PATH_BAD("/", "absolute paths are not allowed");
	PATH_BAD("..", "\"..\" segments are not allowed");
	PATH_BAD("../x", "\"..\" segments are not allowed");
	PATH_BAD("a/../../x", "\"..\" segments are not allowed");
	PATH_BAD("a/..", "\"..\" segments are not allowed");
	PATH_BAD(".", "\".\" segments are not allowed");
	PATH_BAD("./a", "\".\" segments are not allowed");
	PATH_BAD("a/./b", "\".\" segments are not allowed");
	PATH_BAD("a//b", "empty segments (\"a//b\", a trailing \"/\") are not allowed");
	PATH_BAD("a/", "empty segments (\"a//b\", a trailing \"/\") are not allowed");
	PATH_BAD("a\nb", "control characters are not allowed (nor line separators and "
	                 "bidirectional-text controls such as U+202E)");
	PATH_BAD("a\x7f", "control characters are not allowed (nor line separators and "
	                  "bidirectional-text controls such as U+202E)");
	PATH_BAD("a\x1b[31mb", "control characters are not allowed (nor line separators and "
	                       "bidirectional-text controls such as U+202E)");
	PATH_BAD("gpj\xe2\x80\xae.exe", "control characters are not allowed (nor line separators "
	                                "and bidirectional-text controls such as U+202E)");
	PATH_BAD("a\xc2\x85"
	         "b",
	         "control characters are not allowed (nor line separators and "
	         "bidirectional-text controls such as U+202E)");
	PATH_BAD("a\xe2\x80\xa8"
	         "b",
	         "control characters are not allowed (nor line separators and "
	         "bidirectional-text controls such as U+202E)");
	PATH_BAD("a\xe2\x81\xa6"
	         "b",
	         "control characters are not allowed (nor line separators and "
	         "bidirectional-text controls such as U+202E)");
	PATH_OK("caf\xc3\xa9/\xe2\x82\xac.txt");
	PATH_BAD("main.py/x", "main.py is where the code goes");
	PATH_OK("main.pyc");
	PATH_OK("main.py.bak/x");
	PATH_BAD("\xff.csv", "the path is not valid UTF-8");
	PATH_BAD("main.py", "main.py is where the code goes");
	PATH_BAD("out", "out is the directory for the run's output files");
	/* The server's names in a workdir: a workspace's variables, a
	 * prepared bash's gate. */
	PATH_BAD(".mcpx/vars.in", ".mcpx is the server's (a workspace's variables)");
	PATH_BAD(".mcpx", ".mcpx is the server's (a workspace's variables)");
	PATH_OK(".mcpx-gate"); /* the prepared bash's gate is gone by then */
	PATH_OK("x/.mcpx");
	/* A NUL inside (len counts past it) is refused, not cut short. */
	err.msg[0] = '\0';
	CHECK_INT(mcpx_runfiles_check_path("a\0/etc", 6, &err), -EINVAL);
	CHECK_STR(err.msg, "control characters are not allowed (nor line separators and "
	                   "bidirectional-text controls such as U+202E)");

	memset(seg, 'x', 256);
	seg[256] = '\0';
	PATH_BAD(seg, "a segment is longer than 255 bytes");
	seg[255] = '\0';
	PATH_OK(seg);
	strcpy(longp, "a");
	for (int i = 1; i < 16; i++)
		strcat(longp, "/a");
	PATH_OK(longp);
	strcat(longp, "/a");
	PATH_BAD(longp, "more than 16 segments");
	memset(longp, 'y', 1025);
	longp[1025] = '\0';
	PATH_BAD(longp, "the path is longer than 1024 bytes");
}

/* ---- the sniffer ---- */

static void expect_sniff(const void *data, size_t len, const char *name, const char *mime,
                         enum mcpx_runfile_kind kind, int line)
{
	enum mcpx_runfile_kind k = (enum mcpx_runfile_kind) - 1;
	const char *m = mcpx_runfiles_sniff(data, len, name, &k);

	if (strcmp(m, mime) != 0 || k != kind) {
		fprintf(stderr, "test_runfiles.c:%d: sniff %s: %s/%d, want %s/%d\n", line, name, m,
		        (int)k, mime, (int)kind);
		check_failures++;
	}
}

#define SNIFF(d, len, name, mime, kind) expect_sniff(d, len, name, mime, kind, __LINE__)

static void test_sniff(void)
{
	static const char png[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
	static const char jpeg[] = "\xff\xd8\xff\xe0\0\x10JFIF";
	static const char webp[] = "RIFF\x24\0\0\0WEBPVP8 ";
	static const char wave[] = "RIFF\x24\0\0\0WAVEfmt ";

	/* By content, whatever the name says. */
	SNIFF(png, 16, "chart.png", "image/png", MCPX_RUNFILE_IMAGE);
	SNIFF(png, 16, "data.csv", "image/png", MCPX_RUNFILE_IMAGE);
	SNIFF(jpeg, 10, "x", "image/jpeg", MCPX_RUNFILE_IMAGE);
	SNIFF("GIF87a\1\0\1\0", 10, "x", "image/gif", MCPX_RUNFILE_IMAGE);
	SNIFF("GIF89a\1\0\1\0", 10, "x", "image/gif", MCPX_RUNFILE_IMAGE);
	SNIFF(webp, 16, "x.bin", "image/webp", MCPX_RUNFILE_IMAGE);
	SNIFF(wave, 16, "x.webp", "application/octet-stream", MCPX_RUNFILE_BINARY);
	SNIFF("hello", 5, "fake.png", "text/plain", MCPX_RUNFILE_TEXT);
	SNIFF(png, 4, "short.png", "application/octet-stream", MCPX_RUNFILE_BINARY);
	SNIFF("%PDF-1.7\n", 9, "x", "application/pdf", MCPX_RUNFILE_BINARY);
	SNIFF("PK\3\4\0\0", 6, "x.xlsx", "application/zip", MCPX_RUNFILE_BINARY);
	SNIFF("\x1f\x8b\x08\0", 4, "x.gz", "application/gzip", MCPX_RUNFILE_BINARY);
	/* Text: UTF-8 without NUL; the type by extension. */
	SNIFF("a,b\n1,2\n", 8, "data.csv", "text/csv", MCPX_RUNFILE_TEXT);
	SNIFF("a,b\n", 4, "DATA.CSV", "text/csv", MCPX_RUNFILE_TEXT);
	SNIFF("{}", 2, "x.json", "application/json", MCPX_RUNFILE_TEXT);
	SNIFF("<svg/>", 6, "x.svg", "image/svg+xml", MCPX_RUNFILE_TEXT);
	SNIFF("# t", 3, "README.md", "text/markdown", MCPX_RUNFILE_TEXT);
	SNIFF("\xc3\xa9t\xc3\xa9", 5, "x", "text/plain", MCPX_RUNFILE_TEXT);
	SNIFF("", 0, "empty", "text/plain", MCPX_RUNFILE_TEXT);
	SNIFF("csv", 3, ".csv", "text/plain", MCPX_RUNFILE_TEXT);
	SNIFF("a\0b", 3, "x.txt", "application/octet-stream", MCPX_RUNFILE_BINARY);
	SNIFF("\xff\xfe", 2, "x.txt", "application/octet-stream", MCPX_RUNFILE_BINARY);

	CHECK_STR(mcpx_runfiles_reason(MCPX_RUNFILE_TOO_LARGE), "too large");
	CHECK_STR(mcpx_runfiles_reason(MCPX_RUNFILE_TOO_MANY), "too many");
	CHECK_STR(mcpx_runfiles_reason(MCPX_RUNFILE_NOT_REGULAR), "not a regular file");
	CHECK(mcpx_runfiles_reason(MCPX_RUNFILE_RETURNED) == NULL);
}

/* ---- adding and writing input files ---- */

static int add(struct mcpx_runfiles_in *in, const char *path, const char *content, bool b64,
               char *msg)
{
	struct mcpx_err err = {{0}};
	int rc = mcpx_runfiles_add(in, path, strlen(path), content, strlen(content), b64, &err);

	strcpy(msg, rc ? err.msg : "");
	return rc;
}

static void test_add(void)
{
	struct mcpx_runfiles_in in;
	char msg[256];

	mcpx_runfiles_in_init(&in, 10);
	CHECK_INT(add(&in, "a/b", "12345", false, msg), 0);
	CHECK_INT(add(&in, "a/c", "AAEC", true, msg), 0); /* 3 bytes */
	CHECK_INT(in.bytes, 8);
	CHECK_INT(add(&in, "a", "", false, msg), -EINVAL);
	CHECK_STR(msg, "another file lies beneath it");
	CHECK_INT(add(&in, "a/b/c", "", false, msg), -EINVAL);
	CHECK_STR(msg, "a directory on its path is another file");
	CHECK_INT(add(&in, "a/b", "", false, msg), -EINVAL);
	CHECK_STR(msg, "the same path is given twice");
	/* "a/bc" is neither "a/b" nor beneath it. */
	CHECK_INT(add(&in, "a/bc", "", false, msg), 0);
	CHECK_INT(add(&in, "x", "123", false, msg), -E2BIG);
	CHECK_STR(msg, "the files' decoded size exceeds the limit of 10 bytes in total "
	               "(MCP_EXEC_MAX_FILES_IN_BYTES)");
	CHECK_INT(add(&in, "y", "A===", true, msg), -EINVAL);
	CHECK_INT(add(&in, "y", "AAE", true, msg), 0); /* padding is optional: 2 bytes */
	CHECK_INT(in.bytes, 10);
	CHECK_INT(add(&in, "x", "AA==", true, msg), -E2BIG);
	CHECK_INT(add(&in, "x", "", false, msg), 0); /* nothing is still something */
	CHECK_INT(in.n, 5);
	/* A failed add leaves nothing behind. */
	CHECK_INT(add(&in, "../z", "", false, msg), -EINVAL);
	CHECK_INT(in.n, 5);
	mcpx_runfiles_in_free(&in);
	CHECK_INT(in.n, 0);
}

static void test_write(void)
{
	struct mcpx_runfiles_owner own = {geteuid() == 0, 65532, 65532};
	struct mcpx_runfiles_in in;
	struct mcpx_err err = {{0}};
	char msg[256], p[4096], buf[64];
	struct stat st;
	int fd;

	reset();
	mcpx_runfiles_in_init(&in, 1 << 20);
	CHECK_INT(add(&in, "data/sub/in.csv", "x\n1\n", false, msg), 0);
	CHECK_INT(add(&in, "top.bin", "AAEC/w==", true, msg), 0);
	CHECK_INT(add(&in, "out/seed.txt", "s", false, msg), 0);
	CHECK_INT(mcpx_runfiles_write(&in, base, &own, &err), 0);

	snprintf(p, sizeof(p), "%s/data/sub/in.csv", base);
	CHECK_INT(lstat(p, &st), 0);
	CHECK(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600 && st.st_size == 4);
	if (own.chown_to)
		CHECK(st.st_uid == 65532 && st.st_gid == 65532);
	fd = open(p, O_RDONLY);
	CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == 4 && memcmp(buf, "x\n1\n", 4) == 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/data/sub", base);
	CHECK_INT(lstat(p, &st), 0);
	CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700);
	if (own.chown_to)
		CHECK(st.st_uid == 65532);
	snprintf(p, sizeof(p), "%s/out", base);
	CHECK_INT(lstat(p, &st), 0);
	CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700);
	if (own.chown_to)
		CHECK(st.st_uid == 65532);
	snprintf(p, sizeof(p), "%s/top.bin", base);
	CHECK_INT(lstat(p, &st), 0);
	CHECK_INT(st.st_size, 4);

	/* A second write onto the same tree: files are created exclusively. */
	CHECK_INT(mcpx_runfiles_write(&in, base, &own, &err), -EEXIST);
	CHECK(strstr(err.msg, "cannot write input file data/sub/in.csv: File exists") != NULL);
	mcpx_runfiles_in_free(&in);

	/* Never through a symlink: a directory on the path replaced by a link
	 * to somewhere else fails, and nothing lands there. */
	reset();
	sh("mkdir -p '%s-elsewhere'", base);
	snprintf(p, sizeof(p), "%s-elsewhere", base);
	snprintf(buf, sizeof(buf), "%s/data", base);
	CHECK_INT(symlink(p, buf), 0);
	mcpx_runfiles_in_init(&in, 1 << 20);
	CHECK_INT(add(&in, "data/x", "1", false, msg), 0);
	CHECK(mcpx_runfiles_write(&in, base, &own, &err) < 0);
	snprintf(p, sizeof(p), "%s-elsewhere/x", base);
	CHECK(access(p, F_OK) < 0);
	sh("rm -rf '%s-elsewhere'", base);
	/* ... nor a file replaced by a link. */
	reset();
	snprintf(buf, sizeof(buf), "%s/data", base);
	CHECK_INT(mkdir(buf, 0700), 0);
	snprintf(p, sizeof(p), "%s/data/x", base);
	CHECK_INT(symlink("/tmp/mcpx-runfiles-target", p), 0);
	CHECK_INT(mcpx_runfiles_write(&in, base, &own, &err), -EEXIST);
	CHECK(access("/tmp/mcpx-runfiles-target", F_OK) < 0);
	mcpx_runfiles_in_free(&in);
	/* out/ alone, with no input files. */
	reset();
	CHECK_INT(mcpx_runfiles_write(NULL, base, &own, &err), 0);
	snprintf(p, sizeof(p), "%s/out", base);
	CHECK(lstat(p, &st) == 0 && S_ISDIR(st.st_mode));
}

/* ---- reading out/ back ---- */

static void test_collect_basic(void)
{
	static const char png[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
	struct mcpx_runfiles_out o;
	const struct mcpx_runfile_out *e;
	char p[8300];

	/* No out/ at all: nothing, no error. */
	reset();
	CHECK_INT(collect(&o, 16, 1 << 20), 0);
	CHECK_INT(o.n, 0);
	mcpx_runfiles_out_free(&o);

	mk("out");
	mk("out/sub");
	put("out/b.txt", "hello\n", 6);
	put("out/a.png", png, 16);
	put("out/sub/c.csv", "x\n", 2);
	put("out/sub/zero", "", 0);
	put("notout.txt", "no", 2);
	/* The run took its own read permission away: given back, read. */
	snprintf(p, sizeof(p), "%s/out/sub/zero", base);
	chmod(p, 0);
	CHECK_INT(collect(&o, 16, 1 << 20), 0);
	CHECK_INT(o.n, 4);
	CHECK(!o.truncated);
	/* Sorted within each directory, depth first. */
	if (o.n == 4) {
		CHECK_STR(o.v[0].path, "out/a.png");
		CHECK_STR(o.v[1].path, "out/b.txt");
		CHECK_STR(o.v[2].path, "out/sub/c.csv");
		CHECK_STR(o.v[3].path, "out/sub/zero");
	}
	e = find(&o, "out/a.png");
	CHECK(e && e->status == MCPX_RUNFILE_RETURNED && e->kind == MCPX_RUNFILE_IMAGE &&
	      e->len == 16 && e->bytes == 16 && memcmp(e->data, png, 16) == 0);
	e = find(&o, "out/b.txt");
	CHECK(e && e->kind == MCPX_RUNFILE_TEXT && strcmp(e->data, "hello\n") == 0);
	CHECK_STR(e ? e->sha256 : NULL,
	          "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
	CHECK_STR(e ? e->mime : NULL, "text/plain");
	e = find(&o, "out/sub/c.csv");
	CHECK_STR(e ? e->mime : NULL, "text/csv");
	e = find(&o, "out/sub/zero");
	CHECK(e && e->status == MCPX_RUNFILE_RETURNED && e->len == 0);
	mcpx_runfiles_out_free(&o);
	CHECK(o.v == NULL && o.n == 0);

	/* Names with control or bidi characters are listed escaped, never
	 * read or entered: they cannot reach a listing raw. */
	reset();
	mk("out");
	put("out/a\x1b[2Jb", "x", 1);
	put("out/gpj\xe2\x80\xae.exe", "x", 1);
	put("out/1%.txt", "x", 1);
	mk("out/new\nline");
	put("out/new\nline/inner", "x", 1);
	CHECK_INT(collect(&o, 16, 1 << 20), 0);
	CHECK_INT(o.n, 4);
	e = find(&o, "out/a%1B[2Jb");
	CHECK(e && e->status == MCPX_RUNFILE_UNSAFE_NAME && !e->data);
	CHECK_STR(mcpx_runfiles_reason(MCPX_RUNFILE_UNSAFE_NAME), "unsafe name");
	e = find(&o, "out/gpj%E2%80%AE.exe");
	CHECK(e && e->status == MCPX_RUNFILE_UNSAFE_NAME);
	e = find(&o, "out/new%0Aline");
	CHECK(e && e->status == MCPX_RUNFILE_UNSAFE_NAME);
	e = find(&o, "out/1%.txt");
	CHECK(e && e->status == MCPX_RUNFILE_RETURNED);
	for (size_t i = 0; i < o.n; i++)
		for (const char *c = o.v[i].path; *c; c++)
			CHECK((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f);
	mcpx_runfiles_out_free(&o);
}

static void test_collect_attacks(void)
{
	struct mcpx_runfiles_out o;
	const struct mcpx_runfile_out *e;
	char p[4096], q[4096];

	/* Links at every level, a FIFO, a socket-free special file, a hard
	 * link, a file of another owner. The targets hold a secret that must
	 * not come back. */
	reset();
	sh("printf SECRET > '%s-secret' && printf SECRET > '%s-token'", base, base);
	mk("out");
	mk("out/d");
	mk("victim");
	put("victim/inside.txt", "SECRET", 6);
	snprintf(p, sizeof(p), "%s-token", base);
	snprintf(q, sizeof(q), "%s/out/token", base);
	CHECK_INT(symlink(p, q), 0);
	snprintf(q, sizeof(q), "%s/out/environ", base);
	CHECK_INT(symlink("/proc/self/environ", q), 0);
	snprintf(p, sizeof(p), "%s/victim", base);
	snprintf(q, sizeof(q), "%s/out/dirlink", base);
	CHECK_INT(symlink(p, q), 0);
	snprintf(q, sizeof(q), "%s/out/d/rel", base);
	CHECK_INT(symlink("../../victim/inside.txt", q), 0);
	snprintf(p, sizeof(p), "%s-secret", base);
	snprintf(q, sizeof(q), "%s/out/hard", base);
	CHECK_INT(link(p, q), 0);
	snprintf(q, sizeof(q), "%s/out/fifo", base);
	CHECK_INT(mkfifo(q, 0600), 0);
	put("out/foreign", "x", 1);
	if (geteuid() == 0) {
		snprintf(q, sizeof(q), "%s/out/foreign", base);
		CHECK_INT(chown(q, 65532, 65532), 0);
	}
	CHECK_INT(collect(&o, 16, 1 << 20), 0);
	for (size_t i = 0; i < o.n; i++) {
		CHECK(o.v[i].data == NULL || !strstr(o.v[i].data, "SECRET"));
		if (strcmp(o.v[i].path, "out/foreign") || geteuid() == 0)
			CHECK_INT(o.v[i].status, MCPX_RUNFILE_NOT_REGULAR);
		if (o.v[i].status == MCPX_RUNFILE_NOT_REGULAR)
			CHECK_INT(o.v[i].bytes, 0);
	}
	CHECK(find(&o, "out/token") && find(&o, "out/environ") && find(&o, "out/dirlink") &&
	      find(&o, "out/d/rel") && find(&o, "out/hard") && find(&o, "out/fifo"));
	CHECK_INT(o.n, 7);
	mcpx_runfiles_out_free(&o);

	/* out/ itself a symlink (to a directory full of secrets): one entry. */
	reset();
	mk("victim");
	put("victim/inside.txt", "SECRET", 6);
	snprintf(p, sizeof(p), "%s/victim", base);
	snprintf(q, sizeof(q), "%s/out", base);
	CHECK_INT(symlink(p, q), 0);
	CHECK_INT(collect(&o, 16, 1 << 20), 0);
	CHECK_INT(o.n, 1);
	e = find(&o, "out");
	CHECK(e && e->status == MCPX_RUNFILE_NOT_REGULAR && e->data == NULL);
	mcpx_runfiles_out_free(&o);
	/* ... or a regular file. */
	reset();
	put("out", "SECRET", 6);
	CHECK_INT(collect(&o, 16, 1 << 20), 0);
	CHECK(o.n == 1 && o.v[0].status == MCPX_RUNFILE_NOT_REGULAR && o.v[0].data == NULL);
	mcpx_runfiles_out_free(&o);
	sh("rm -f '%s-secret' '%s-token'", base, base);
}

static void test_collect_caps(void)
{
	struct mcpx_runfiles_out o;
	const struct mcpx_runfile_out *e;
	char rel[4096], *r;

	/* Count and bytes: in order, the first ones that fit. */
	reset();
	mk("out");
	put("out/1", "aaaa", 4);
	put("out/2", "bbbbbbbb", 8);
	put("out/3", "cc", 2);
	put("out/4", "d", 1);
	put("out/5", "e", 1);
	CHECK_INT(collect(&o, 3, 8), 0);
	CHECK_INT(o.n, 5);
	e = find(&o, "out/1");
	CHECK(e && e->status == MCPX_RUNFILE_RETURNED);
	e = find(&o, "out/2");
	CHECK(e && e->status == MCPX_RUNFILE_TOO_LARGE && e->bytes == 8 && !e->data);
	e = find(&o, "out/3");
	CHECK(e && e->status == MCPX_RUNFILE_RETURNED);
	e = find(&o, "out/4");
	CHECK(e && e->status == MCPX_RUNFILE_RETURNED);
	e = find(&o, "out/5");
	CHECK(e && e->status == MCPX_RUNFILE_TOO_MANY && e->bytes == 1 && !e->data);
	mcpx_runfiles_out_free(&o);
	CHECK_INT(collect(&o, 0, 8), 0);
	CHECK(o.n == 5 && o.v[0].status == MCPX_RUNFILE_TOO_MANY);
	mcpx_runfiles_out_free(&o);

	/* Depth: directories below level 16 are listed, not entered. */
	reset();
	mk("out");
	r = rel + sprintf(rel, "out");
	for (int i = 1; i <= 17; i++) {
		r += sprintf(r, "/d");
		mk(rel);
	}
	put("out/d/shallow", "s", 1);
	strcat(rel, "/deep");
	put(rel, "x", 1);
	CHECK_INT(collect(&o, 16, 1 << 20), 0);
	CHECK_INT(o.n, 2);
	e = find(&o, "out/d/shallow");
	CHECK(e && e->status == MCPX_RUNFILE_RETURNED);
	CHECK(o.n == 2 && strlen(o.v[0].path) == 3 + 16 * 2 &&
	      o.v[0].status == MCPX_RUNFILE_NOT_REGULAR);
	mcpx_runfiles_out_free(&o);

	/* The listing is bounded; the result says so. */
	reset();
	sh("mkdir '%s/out' && cd '%s/out' && seq 1 1001 | xargs touch", base, base);
	CHECK_INT(collect(&o, 16, 1 << 20), 0);
	CHECK_INT(o.n, MCPX_RUNFILES_LIST_MAX);
	CHECK(o.truncated);
	mcpx_runfiles_out_free(&o);
	sh("rm -rf '%s/out' && mkdir '%s/out' && cd '%s/out' && seq 1 999 | xargs touch", base,
	   base, base);
	CHECK_INT(collect(&o, 16, 1 << 20), 0);
	CHECK_INT(o.n, 999);
	CHECK(!o.truncated);
	mcpx_runfiles_out_free(&o);
}

/* The pod's case: the server has the run's uid and no root. A run that took
 * the read and search bits from its own file and directory still gets them
 * back; a file of another uid is not read. Run in a child that drops to
 * 65532 (skipped when the test is not root). */
static void test_collect_same_uid(void)
{
	struct mcpx_runfiles_out o;
	const struct mcpx_runfile_out *e;
	char p[8300];
	int status = -1;
	pid_t pid;

	if (geteuid() != 0)
		return;
	reset();
	mk("out");
	mk("out/locked");
	put("out/locked/f.txt", "inside", 6);
	put("out/mode0.txt", "zero", 4);
	put("out/roots.txt", "root", 4);
	sh("chown -R 65532:65532 '%s' && chown 0:0 '%s/out/roots.txt' && chmod 0 "
	   "'%s/out/mode0.txt' "
	   "'%s/out/locked/f.txt' '%s/out/locked'",
	   base, base, base, base, base);
	snprintf(p, sizeof(p), "%s", base);
	CHECK_INT(chmod(p, 0711), 0);
	pid = fork();
	if (pid == 0) {
		struct mcpx_runfiles_caps caps = {16, 1 << 20};
		struct mcpx_err err = {{0}};

		if (setgid(65532) < 0 || setuid(65532) < 0)
			_exit(100);
		int wd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);

		CHECK_INT(mcpx_runfiles_collect(wd, 65532, &caps, &o, &err), 0);
		e = find(&o, "out/mode0.txt");
		CHECK(e && e->status == MCPX_RUNFILE_RETURNED && e->len == 4 &&
		      memcmp(e->data, "zero", 4) == 0);
		e = find(&o, "out/locked/f.txt");
		CHECK(e && e->status == MCPX_RUNFILE_RETURNED && e->len == 6);
		e = find(&o, "out/roots.txt");
		CHECK(e && e->status == MCPX_RUNFILE_NOT_REGULAR && !e->data);
		CHECK_INT(o.n, 3);
		mcpx_runfiles_out_free(&o);
		_exit(check_failures ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	test_paths();
	test_sniff();
	test_add();
	test_write();
	test_collect_basic();
	test_collect_attacks();
	test_collect_caps();
	test_collect_same_uid();
	sh("rm -rf '%s'", base);
	CHECK_DONE();
}
