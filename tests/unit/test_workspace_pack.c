/*
 * test_workspace_pack.c - a workspace's archive (workspace_pack.h): what
 * the writer makes parses back to the same files and variables, and a
 * hostile archive is refused with its reason before anything could be
 * written: path traversal, absolute paths, the server's names, duplicate
 * paths, a file beneath another file, sizes that lie (past the end, over
 * the cap), a truncation at every byte, a trailer that disagrees, bytes
 * after the end, unknown and repeated records, a wrong magic; the names'
 * list keeps only well-formed lines.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "workspace_pack.h"

static const struct mcpx_wspack_caps caps = {1 << 20, 64};

/* Appends big-endian n bytes of v. */
static void be(struct mcpx_buf *b, uint64_t v, size_t n)
{
	unsigned char x[8];

	for (size_t i = n; i-- > 0; v >>= 8)
		x[i] = (unsigned char)(v & 0xFF);
	mcpx_buf_add(b, x, n);
}

/* A raw 'F' record whose sizes the test decides. */
static void raw_file(struct mcpx_buf *b, const char *path, uint64_t size, const char *data,
                     size_t len)
{
	mcpx_buf_add(b, "F\0", 2);
	be(b, strlen(path), 2);
	mcpx_buf_adds(b, path);
	be(b, size, 8);
	mcpx_buf_add(b, data, len);
}

static void raw_end(struct mcpx_buf *b, uint32_t files, uint64_t bytes)
{
	mcpx_buf_add(b, "E", 1);
	be(b, files, 4);
	be(b, bytes, 8);
}

static int parse(const struct mcpx_buf *b, struct mcpx_err *err)
{
	struct mcpx_wspack ws;
	int rc = mcpx_wspack_parse(b->data, b->len, &caps, &ws, err);

	CHECK(rc == 0 || ws.n == 0);
	mcpx_wspack_free(&ws);
	return rc;
}

/* One file with the given path, packed by the writer; the parse result. */
static int parse_path(const char *path, struct mcpx_err *err)
{
	struct mcpx_buf b;
	int rc;

	mcpx_buf_init(&b, 1 << 20);
	mcpx_wspack_begin(&b);
	raw_file(&b, path, 1, "x", 1);
	raw_end(&b, 1, 1);
	rc = parse(&b, err);
	mcpx_buf_free(&b);
	return rc;
}

static void test_round_trip(void)
{
	struct mcpx_buf b;
	struct mcpx_wspack ws;
	struct mcpx_err err;

	mcpx_buf_init(&b, 1 << 20);
	CHECK_INT(mcpx_wspack_begin(&b), 0);
	CHECK_INT(mcpx_wspack_add_file(&b, "data/z.csv", "a,b\n1,2\n", 8, false), 0);
	CHECK_INT(mcpx_wspack_add_file(&b, "run.sh", "echo", 4, true), 0);
	CHECK_INT(mcpx_wspack_add_file(&b, "empty", NULL, 0, false), 0);
	CHECK_INT(mcpx_wspack_add_vars(&b, "\x80\x05opaque\0bytes", 14), 0);
	CHECK_INT(mcpx_wspack_add_names(&b, "+df\n-fh\n", 8), 0);
	CHECK_INT(mcpx_wspack_end(&b, 3, 12), 0);
	REQUIRE_INT(mcpx_wspack_parse(b.data, b.len, &caps, &ws, &err), 0);
	REQUIRE_INT(ws.n, 3);
	/* Sorted by path. */
	CHECK_STR(ws.files[0].path, "data/z.csv");
	CHECK_INT(ws.files[0].len, 8);
	CHECK(memcmp(ws.files[0].data, "a,b\n1,2\n", 8) == 0);
	CHECK(!ws.files[0].exec);
	CHECK_STR(ws.files[1].path, "empty");
	CHECK_INT(ws.files[1].len, 0);
	CHECK_STR(ws.files[2].path, "run.sh");
	CHECK(ws.files[2].exec);
	CHECK_INT(ws.file_bytes, 12);
	CHECK_INT(ws.vars_len, 14);
	CHECK(memcmp(ws.vars, "\x80\x05opaque\0bytes", 14) == 0);
	CHECK_INT(ws.names_len, 8);
	mcpx_wspack_free(&ws);
	/* The empty string is the empty workspace. */
	CHECK_INT(mcpx_wspack_parse("", 0, &caps, &ws, &err), 0);
	CHECK_INT(ws.n, 0);
	CHECK(ws.vars == NULL);
	mcpx_buf_free(&b);
}

static void test_paths(void)
{
	static const char *const bad[] = {
	    "../x",
	    "a/../../x",
	    "/etc/passwd",
	    "a//b",
	    "a/./b",
	    "a/",
	    "out",
	    "out/x.png",
	    ".mcpx/vars.in",
	    ".mcpx",
	    "main.py",
	    "main.sh",
	    "main.mjs",
	    "a\nb",
	    "a\x1b[2Jb",
	    "\xff\xfe",
	    "x/\xe2\x80\xae/y",
	    "",
	};
	struct mcpx_err err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse_path(bad[i], &err);
		if (rc != -EINVAL)
			fprintf(stderr, "path %zu accepted (rc %d)\n", i, rc);
		CHECK_INT(rc, -EINVAL);
	}
	/* Fine ones: nested, a dot file, main.py below the top, non-ASCII. */
	CHECK_INT(parse_path("a/b/c.txt", &err), 0);
	CHECK_INT(parse_path(".hidden", &err), 0);
	CHECK_INT(parse_path("sub/main.py", &err), 0);
	CHECK_INT(parse_path("outside/x", &err), 0);
	CHECK_INT(parse_path("daten/\xc3\xa4.csv", &err), 0);
}

static void test_duplicates_and_tree(void)
{
	struct mcpx_buf b;
	struct mcpx_err err;

	mcpx_buf_init(&b, 1 << 20);
	mcpx_wspack_begin(&b);
	raw_file(&b, "a.txt", 1, "x", 1);
	raw_file(&b, "b.txt", 1, "y", 1);
	raw_file(&b, "a.txt", 1, "z", 1);
	raw_end(&b, 3, 3);
	CHECK_INT(parse(&b, &err), -EINVAL);
	CHECK(strstr(err.msg, "twice") != NULL);

	/* "a" a file and "a/b" a file: writing one would need the other as a
	 * directory; in both orders, and with names sorting between them. */
	mcpx_buf_reset(&b);
	mcpx_wspack_begin(&b);
	raw_file(&b, "a/b", 1, "x", 1);
	raw_file(&b, "a-b", 1, "x", 1);
	raw_file(&b, "a", 1, "y", 1);
	raw_end(&b, 3, 3);
	CHECK_INT(parse(&b, &err), -EINVAL);
	CHECK(strstr(err.msg, "beneath") != NULL);
	mcpx_buf_reset(&b);
	mcpx_wspack_begin(&b);
	raw_file(&b, "d/e/f", 1, "x", 1);
	raw_file(&b, "d/e", 1, "y", 1);
	raw_end(&b, 2, 2);
	CHECK_INT(parse(&b, &err), -EINVAL);
	/* Siblings sharing a prefix are fine. */
	mcpx_buf_reset(&b);
	mcpx_wspack_begin(&b);
	raw_file(&b, "ab/c", 1, "x", 1);
	raw_file(&b, "a", 1, "y", 1);
	raw_end(&b, 2, 2);
	CHECK_INT(parse(&b, &err), 0);
	mcpx_buf_free(&b);
}

static void test_sizes_lie(void)
{
	struct mcpx_buf b;
	struct mcpx_err err;

	/* A size past the end of the string. */
	mcpx_buf_init(&b, 4 << 20);
	mcpx_wspack_begin(&b);
	raw_file(&b, "a", 1000, "xyz", 3);
	CHECK_INT(parse(&b, &err), -EINVAL);
	CHECK(strstr(err.msg, "truncated") != NULL);
	/* A size near 2^64: neither wraps nor allocates. */
	mcpx_buf_reset(&b);
	mcpx_wspack_begin(&b);
	raw_file(&b, "a", UINT64_MAX - 2, "xyz", 3);
	CHECK_INT(parse(&b, &err), -EINVAL);
	/* Honest sizes over the cap, in one file and in total. */
	{
		char *big = calloc(1, (1 << 20) + 1);
		mcpx_buf_reset(&b);
		mcpx_wspack_begin(&b);
		raw_file(&b, "a", (1 << 20) + 1, big, (1 << 20) + 1);
		raw_end(&b, 1, (1 << 20) + 1);
		CHECK_INT(parse(&b, &err), -E2BIG);
		mcpx_buf_reset(&b);
		mcpx_wspack_begin(&b);
		raw_file(&b, "a", 600000, big, 600000);
		raw_file(&b, "b", 600000, big, 600000);
		raw_end(&b, 2, 1200000);
		CHECK_INT(parse(&b, &err), -E2BIG);
		/* Files and variables together. */
		mcpx_buf_reset(&b);
		mcpx_wspack_begin(&b);
		raw_file(&b, "a", 600000, big, 600000);
		mcpx_wspack_add_vars(&b, big, 600000);
		raw_end(&b, 1, 600000);
		CHECK_INT(parse(&b, &err), -E2BIG);
		free(big);
	}
	/* A path length past the end. */
	mcpx_buf_reset(&b);
	mcpx_wspack_begin(&b);
	mcpx_buf_add(&b,
	             "F\0\xff\xff"
	             "abc",
	             7);
	CHECK_INT(parse(&b, &err), -EINVAL);
	/* More files than the cap. */
	mcpx_buf_reset(&b);
	mcpx_wspack_begin(&b);
	for (int i = 0; i < 65; i++) {
		char p[16];
		snprintf(p, sizeof(p), "f%d", i);
		raw_file(&b, p, 0, "", 0);
	}
	raw_end(&b, 65, 0);
	CHECK_INT(parse(&b, &err), -E2BIG);
	mcpx_buf_free(&b);
}

static void test_truncated_everywhere(void)
{
	struct mcpx_buf b;
	struct mcpx_err err;

	mcpx_buf_init(&b, 1 << 20);
	mcpx_wspack_begin(&b);
	mcpx_wspack_add_file(&b, "d/a.txt", "hello", 5, false);
	mcpx_wspack_add_vars(&b, "vars", 4);
	mcpx_wspack_add_names(&b, "+x\n", 3);
	mcpx_wspack_end(&b, 1, 5);
	CHECK_INT(parse(&b, &err), 0);
	/* Every proper prefix is refused, never read past. */
	for (size_t n = 1; n < b.len; n++) {
		struct mcpx_wspack ws;
		char *copy = malloc(n);

		memcpy(copy, b.data, n);
		CHECK_INT(mcpx_wspack_parse(copy, n, &caps, &ws, &err), -EINVAL);
		free(copy);
	}
	mcpx_buf_free(&b);
}

static void test_structure(void)
{
	struct mcpx_buf b;
	struct mcpx_err err;

	mcpx_buf_init(&b, 1 << 20);
	/* A trailer that disagrees with the records. */
	mcpx_wspack_begin(&b);
	raw_file(&b, "a", 1, "x", 1);
	raw_end(&b, 2, 1);
	CHECK_INT(parse(&b, &err), -EINVAL);
	mcpx_buf_reset(&b);
	mcpx_wspack_begin(&b);
	raw_file(&b, "a", 1, "x", 1);
	raw_end(&b, 1, 7);
	CHECK_INT(parse(&b, &err), -EINVAL);
	/* Bytes after the end. */
	mcpx_buf_reset(&b);
	mcpx_wspack_begin(&b);
	raw_end(&b, 0, 0);
	mcpx_buf_add(&b, "F", 1);
	CHECK_INT(parse(&b, &err), -EINVAL);
	/* An unknown record; a repeated 'V'. */
	mcpx_buf_reset(&b);
	mcpx_wspack_begin(&b);
	mcpx_buf_add(&b, "Z", 1);
	raw_end(&b, 0, 0);
	CHECK_INT(parse(&b, &err), -EINVAL);
	mcpx_buf_reset(&b);
	mcpx_wspack_begin(&b);
	mcpx_wspack_add_vars(&b, "a", 1);
	mcpx_wspack_add_vars(&b, "b", 1);
	raw_end(&b, 0, 0);
	CHECK_INT(parse(&b, &err), -EINVAL);
	/* Another magic or version. */
	mcpx_buf_reset(&b);
	mcpx_buf_add(&b, "MCPXWS2\n", 8);
	raw_end(&b, 0, 0);
	CHECK_INT(parse(&b, &err), -EINVAL);
	CHECK(strstr(err.msg, "MCPXWS1") != NULL);
	/* No trailer at all. */
	mcpx_buf_reset(&b);
	mcpx_wspack_begin(&b);
	CHECK_INT(parse(&b, &err), -EINVAL);
	mcpx_buf_free(&b);
}

struct names {
	char got[512];
};

static void on_name(void *arg, bool kept, const char *name, size_t len)
{
	struct names *n = arg;
	size_t at = strlen(n->got);

	snprintf(n->got + at, sizeof(n->got) - at, "%c%.*s,", kept ? '+' : '-', (int)len, name);
}

static void test_names(void)
{
	static const char list[] = "+df\n-fh\nxbad\n+\n+a b\n+\x1b[31m\n-\xc3\xa9t\xc3\xa9\n+ok_1";
	struct names n = {{0}};

	mcpx_wspack_names(list, sizeof(list) - 1, on_name, &n);
	CHECK_STR(n.got, "+df,-fh,-\xc3\xa9t\xc3\xa9,+ok_1,");
}

static unsigned counted;

static void count_name(void *arg, bool kept, const char *name, size_t len)
{
	(void)arg;
	(void)kept;
	(void)name;
	(void)len;
	counted++;
}

static void test_names_cap(void)
{
	char *many = malloc(30000);
	size_t at = 0;

	for (unsigned i = 0; i < 2000; i++)
		at += (size_t)snprintf(many + at, 30000 - at, "+v%u\n", i);
	counted = 0;
	mcpx_wspack_names(many, at, count_name, NULL);
	CHECK_INT(counted, MCPX_WSPACK_NAMES_MAX);
	free(many);
}

int main(void)
{
	test_round_trip();
	test_paths();
	test_duplicates_and_tree();
	test_sizes_lie();
	test_truncated_everywhere();
	test_structure();
	test_names();
	test_names_cap();
	return check_failures ? 1 : 0;
}
