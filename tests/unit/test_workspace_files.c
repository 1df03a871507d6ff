/*
 * test_workspace_files.c - a workspace in a workdir (workspace_files.h) on a
 * real filesystem: restored files and variables land where and how input
 * files do (modes, the execute bit, owner, never through a planted
 * symlink), input files replace the workspace's and conflicts are refused;
 * collected back, the same tree parses to the same files, and what hostile
 * code leaves is judged: symlinks (to files, to directories, as .mcpx),
 * hard links, FIFOs, other owners' files, unsafe names, the server's names
 * and directories deeper than input paths go are not kept; too many files,
 * too many bytes or too many entries fail the whole collection; the run's
 * variables are taken only when the run ended by itself and the runner
 * wrote them, else the previous ones are kept with their names.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "workspace_files.h"

/* tmpfs: the entry-cap test makes 16 385 entries, which ext4 here creates
 * at about a millisecond each. */
static char base[] = "/dev/shm/mcpx-wsfiles-XXXXXX";
static const struct mcpx_wspack_caps caps = {1 << 20, 64};

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
	sh("rm -rf '%s' && mkdir -m 0700 '%s'", base, base);
}

static int collect(bool take_vars, const struct mcpx_wsfiles_prev *prev,
                   const struct mcpx_wspack_caps *c, struct mcpx_wsfiles_saved *s,
                   struct mcpx_err *err)
{
	int wd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int rc = mcpx_wsfiles_collect(wd, geteuid(), c ? c : &caps, take_vars, prev, s, err);

	close(wd);
	return rc;
}

static const struct mcpx_wspack_file *find(const struct mcpx_wspack *ws, const char *path)
{
	for (size_t i = 0; i < ws->n; i++)
		if (strcmp(ws->files[i].path, path) == 0)
			return &ws->files[i];
	return NULL;
}

static char *slurp(const char *rel, size_t *len)
{
	char p[4200], *b = malloc(1 << 16);
	int fd;
	ssize_t n;

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	fd = open(p, O_RDONLY | O_NOFOLLOW);
	if (fd < 0) {
		free(b);
		return NULL;
	}
	n = read(fd, b, (1 << 16) - 1);
	close(fd);
	b[n < 0 ? 0 : n] = '\0';
	*len = n < 0 ? 0 : (size_t)n;
	return b;
}

static void test_round_trip(void)
{
	struct mcpx_wsfiles_saved s;
	struct mcpx_wspack ws;
	struct mcpx_err err = {{0}};
	struct mcpx_runfiles_owner own = {geteuid() == 0, 65532, 65532};
	const struct mcpx_wspack_file *f;
	struct stat st;
	char p[4200], *got;
	size_t len;

	reset();
	sh("cd '%s' && mkdir -p data/deep out .mcpx && printf 'a,b\\n1,2\\n' > data/x.csv && "
	   "printf 'echo hi' > run.sh && chmod 0700 run.sh && : > empty && echo junk > out/o.png "
	   "&& "
	   "echo code > main.py && echo code > main.sh && printf V1 > .mcpx/vars.out && "
	   "printf '+df\\n-fh\\n' > .mcpx/names",
	   base);
	REQUIRE_INT(collect(true, NULL, NULL, &s, &err), 0);
	CHECK_INT(s.files, 3);
	CHECK_INT(s.file_bytes, 8 + 7);
	CHECK(s.vars_new);
	CHECK_INT(s.vars_bytes, 2);
	CHECK_INT(s.skipped, 0);
	CHECK_INT(s.names_len, 8);
	REQUIRE_INT(mcpx_wspack_parse(s.archive.data, s.archive.len, &caps, &ws, &err), 0);
	CHECK_INT(ws.n, 3);
	f = find(&ws, "run.sh");
	CHECK(f && f->exec && f->len == 7);
	CHECK(find(&ws, "data/x.csv") != NULL);
	CHECK(find(&ws, "empty") != NULL);
	CHECK(find(&ws, "out/o.png") == NULL);
	CHECK(find(&ws, "main.py") == NULL);
	CHECK_INT(ws.vars_len, 2);

	/* Into a fresh workdir: the files, the variables with their header. */
	reset();
	REQUIRE_INT(mcpx_wsfiles_restore(&ws, base, true, 4096, &own, &err), 0);
	got = slurp("data/x.csv", &len);
	CHECK(got && len == 8 && memcmp(got, "a,b\n1,2\n", 8) == 0);
	free(got);
	snprintf(p, sizeof(p), "%s/run.sh", base);
	CHECK_INT(stat(p, &st), 0);
	CHECK_INT(st.st_mode & 0777, 0700);
	if (own.chown_to)
		CHECK_INT(st.st_uid, 65532);
	snprintf(p, sizeof(p), "%s/data/x.csv", base);
	CHECK_INT(stat(p, &st), 0);
	CHECK_INT(st.st_mode & 0777, 0600);
	got = slurp(".mcpx/vars.in", &len);
	CHECK(got && strcmp(got, "mcpx-vars 1 4096\nV1") == 0);
	free(got);
	/* A bash run gets no variables' file. */
	reset();
	REQUIRE_INT(mcpx_wsfiles_restore(&ws, base, false, 4096, &own, &err), 0);
	CHECK(slurp(".mcpx/vars.in", &len) == NULL);
	mcpx_wspack_free(&ws);
	mcpx_wsfiles_saved_free(&s);
}

static void test_restore_never_follows(void)
{
	struct mcpx_buf b;
	struct mcpx_wspack ws;
	struct mcpx_err err = {{0}};
	struct mcpx_runfiles_owner own = {false, 0, 0};
	char victim[] = "/tmp/mcpx-wsfiles-victim-XXXXXX";

	REQUIRE(mkdtemp(victim) != NULL);
	mcpx_buf_init(&b, 1 << 20);
	mcpx_wspack_begin(&b);
	mcpx_wspack_add_file(&b, "d/x", "evil", 4, false);
	mcpx_wspack_end(&b, 1, 4);
	REQUIRE_INT(mcpx_wspack_parse(b.data, b.len, &caps, &ws, &err), 0);
	/* A directory on the path replaced by a symlink (a workdir is the
	 * server's, but the writer does not depend on it). */
	reset();
	sh("ln -s '%s' '%s/d'", victim, base);
	CHECK(mcpx_wsfiles_restore(&ws, base, false, 0, &own, &err) < 0);
	sh("test ! -e '%s/x'", victim);
	sh("rm -rf '%s'", victim);
	mcpx_wspack_free(&ws);
	mcpx_buf_free(&b);
}

static void test_inputs(void)
{
	struct mcpx_buf b;
	struct mcpx_wspack ws;
	struct mcpx_runfiles_in in;
	struct mcpx_err err = {{0}};

	mcpx_buf_init(&b, 1 << 20);
	mcpx_wspack_begin(&b);
	mcpx_wspack_add_file(&b, "a.csv", "old", 3, false);
	mcpx_wspack_add_file(&b, "d/e", "x", 1, false);
	mcpx_wspack_end(&b, 2, 4);
	REQUIRE_INT(mcpx_wspack_parse(b.data, b.len, &caps, &ws, &err), 0);
	mcpx_runfiles_in_init(&in, 1 << 20);
	mcpx_runfiles_add(&in, "a.csv", 5, "new", 3, false, &err);
	CHECK_INT(mcpx_wsfiles_merge_inputs(&ws, &in, &err), 0);
	CHECK(find(&ws, "a.csv")->dropped);
	CHECK(!find(&ws, "d/e")->dropped);
	CHECK_INT(mcpx_wsfiles_restore_bytes(&ws, false), 1);
	CHECK_INT(mcpx_wsfiles_restore_bytes(&ws, true), 1 + 64);
	/* An input file where the workspace has a directory, and the reverse. */
	mcpx_runfiles_in_free(&in);
	mcpx_runfiles_in_init(&in, 1 << 20);
	mcpx_runfiles_add(&in, "d", 1, "x", 1, false, &err);
	CHECK_INT(mcpx_wsfiles_merge_inputs(&ws, &in, &err), -EINVAL);
	CHECK_STR(err.msg, "input file d conflicts with the workspace's file d/e");
	mcpx_runfiles_in_free(&in);
	mcpx_runfiles_in_init(&in, 1 << 20);
	mcpx_runfiles_add(&in, "a.csv/x", 7, "x", 1, false, &err);
	CHECK_INT(mcpx_wsfiles_merge_inputs(&ws, &in, &err), -EINVAL);
	mcpx_runfiles_in_free(&in);
	mcpx_wspack_free(&ws);
	mcpx_buf_free(&b);
}

static void test_hostile_workdir(void)
{
	struct mcpx_wsfiles_saved s;
	struct mcpx_wspack ws;
	struct mcpx_err err = {{0}};
	char deep[512] = "";

	reset();
	for (int i = 0; i < 18; i++)
		strcat(deep, "l/");
	sh("cd '%s' && echo SECRET > /tmp/mcpx-wsfiles-secret && ln -s /tmp/mcpx-wsfiles-secret "
	   "link && ln -s /etc linkdir && echo a > hard && ln hard hard2 && mkfifo fifo && "
	   "mkdir sub && mkfifo sub/fifo && printf 'ok' > sub/ok && printf x > \"$(printf "
	   "'bad\\033name')\" && mkdir -p %s && echo deep > %sfile && "
	   "echo fine > l/l/shallow",
	   base, deep, deep);
	if (geteuid() == 0)
		sh("cd '%s' && echo theirs > foreign && chown 65532 foreign", base);
	REQUIRE_INT(collect(true, NULL, NULL, &s, &err), 0);
	REQUIRE_INT(mcpx_wspack_parse(s.archive.data, s.archive.len, &caps, &ws, &err), 0);
	CHECK(find(&ws, "sub/ok") != NULL);
	CHECK(find(&ws, "l/l/shallow") != NULL);
	CHECK(find(&ws, "link") == NULL);
	CHECK(find(&ws, "hard") == NULL);
	CHECK(find(&ws, "hard2") == NULL);
	CHECK(find(&ws, "fifo") == NULL);
	CHECK(find(&ws, "foreign") == NULL);
	CHECK_INT(ws.n, 2);
	/* link, linkdir, hard, hard2, fifo, sub/fifo, the bad name, the
	 * deepest directory (and foreign as root). */
	CHECK_INT(s.skipped, 8 + (geteuid() == 0));
	CHECK(!s.vars_new);
	mcpx_wspack_free(&ws);
	mcpx_wsfiles_saved_free(&s);
	sh("rm -f /tmp/mcpx-wsfiles-secret");
}

static void test_caps(void)
{
	struct mcpx_wsfiles_saved s;
	struct mcpx_err err = {{0}};
	struct mcpx_wspack_caps small = {1000, 3};
	struct mcpx_wsfiles_prev prev = {"P", 1, "+p\n", 3};

	/* Too many files fails the whole collection. */
	reset();
	sh("cd '%s' && touch a b c d", base);
	CHECK_INT(collect(false, NULL, &small, &s, &err), -E2BIG);
	CHECK(strstr(err.msg, "more than 3 files") != NULL);
	CHECK_INT(s.archive.len, 0);
	/* Too many bytes: a file, and files plus variables. */
	reset();
	sh("cd '%s' && head -c 1001 /dev/zero > a", base);
	CHECK_INT(collect(false, NULL, &small, &s, &err), -E2BIG);
	CHECK(strstr(err.msg, "MCP_EXEC_WORKSPACE_MAX_MB") != NULL);
	reset();
	sh("cd '%s' && head -c 600 /dev/zero > a && mkdir .mcpx && head -c 500 /dev/zero > "
	   ".mcpx/vars.out",
	   base);
	CHECK_INT(collect(true, NULL, &small, &s, &err), -E2BIG);
	/* ... but with the variables not taken, the previous (small) ones fit. */
	CHECK_INT(collect(false, &prev, &small, &s, &err), 0);
	CHECK(!s.vars_new);
	CHECK_INT(s.vars_bytes, 1);
	CHECK_INT(s.names_len, 3);
	CHECK(s.names && memcmp(s.names, "+p\n", 3) == 0);
	mcpx_wsfiles_saved_free(&s);
	/* Too many entries to look at, even if none is kept. */
	reset();
	sh("cd '%s' && mkdir d && cd d && seq 1 %u | xargs mkfifo", base,
	   MCPX_WSFILES_VISIT_MAX + 1);
	CHECK_INT(collect(false, NULL, NULL, &s, &err), -E2BIG);
	CHECK(strstr(err.msg, "entries") != NULL);
}

static void test_vars_judged(void)
{
	struct mcpx_wsfiles_saved s;
	struct mcpx_err err = {{0}};
	struct mcpx_wsfiles_prev prev = {"PREV", 4, "+old\n", 5};

	/* .mcpx a symlink to a directory holding vars.out: not followed. */
	reset();
	sh("mkdir -p /tmp/mcpx-wsfiles-elsewhere && printf X > "
	   "/tmp/mcpx-wsfiles-elsewhere/vars.out "
	   "&& ln -s /tmp/mcpx-wsfiles-elsewhere '%s/.mcpx'",
	   base);
	REQUIRE_INT(collect(true, &prev, NULL, &s, &err), 0);
	CHECK(!s.vars_new);
	CHECK_INT(s.vars_bytes, 4);
	mcpx_wsfiles_saved_free(&s);
	sh("rm -rf /tmp/mcpx-wsfiles-elsewhere");
	/* vars.out a symlink, or a hard link: the previous ones. */
	reset();
	sh("cd '%s' && mkdir .mcpx && ln -s /etc/hostname .mcpx/vars.out", base);
	REQUIRE_INT(collect(true, &prev, NULL, &s, &err), 0);
	CHECK(!s.vars_new);
	mcpx_wsfiles_saved_free(&s);
	reset();
	sh("cd '%s' && mkdir .mcpx && echo x > .mcpx/vars.out && ln .mcpx/vars.out keep", base);
	REQUIRE_INT(collect(true, &prev, NULL, &s, &err), 0);
	CHECK(!s.vars_new);
	mcpx_wsfiles_saved_free(&s);
	/* A run that did not end by itself: its vars.out is not taken. */
	reset();
	sh("cd '%s' && mkdir .mcpx && printf NEW > .mcpx/vars.out && printf '+new\\n' > "
	   ".mcpx/names",
	   base);
	REQUIRE_INT(collect(false, &prev, NULL, &s, &err), 0);
	CHECK(!s.vars_new);
	CHECK(s.names_len == 5 && memcmp(s.names, "+old\n", 5) == 0);
	mcpx_wsfiles_saved_free(&s);
	REQUIRE_INT(collect(true, &prev, NULL, &s, &err), 0);
	CHECK(s.vars_new);
	CHECK_INT(s.vars_bytes, 3);
	CHECK(s.names_len == 5 && memcmp(s.names, "+new\n", 5) == 0);
	mcpx_wsfiles_saved_free(&s);
	/* A names' list too long: the variables are kept, no names shown. */
	sh("cd '%s' && head -c %u /dev/zero | tr '\\0' x > .mcpx/names", base,
	   MCPX_WSPACK_NAMES_BYTES + 1);
	REQUIRE_INT(collect(true, &prev, NULL, &s, &err), 0);
	CHECK(s.vars_new);
	CHECK_INT(s.names_len, 0);
	mcpx_wsfiles_saved_free(&s);
}

int main(void)
{
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	test_round_trip();
	test_restore_never_follows();
	test_inputs();
	test_hostile_workdir();
	test_caps();
	test_vars_judged();
	sh("rm -rf '%s'", base);
	return check_failures ? 1 : 0;
}
