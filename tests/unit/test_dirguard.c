/*
 * test_dirguard.c - the guard of the directories above the workdirs: what a
 * process of the run uid can change there (mode, group, times, user.*
 * attributes) is put back by repair; a directory nobody else can touch is
 * not guarded; a path that names another directory now is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dirguard.h"

#define RUN_UID 65532

static bool has_xattr(const char *path, const char *name)
{
	char v[64];

	return getxattr(path, name, v, sizeof(v)) >= 0;
}

static void test_repair(const char *top)
{
	struct mcpx_dirguards gs;
	struct mcpx_err err = {{0}};
	char dir[4096];
	struct stat st;
	bool xattrs;

	printf("a directory of the run uid is put back\n");
	snprintf(dir, sizeof(dir), "%s/owned", top);
	CHECK(mkdir(dir, 0711) == 0);
	CHECK(chown(dir, RUN_UID, RUN_UID) == 0);
	CHECK(chmod(dir, 0711) == 0);
	xattrs = setxattr(dir, "user.kept", "v1", 2, 0) == 0;
	mcpx_dirguards_init(&gs);
	CHECK_INT(mcpx_dirguards_add_chain(&gs, dir, RUN_UID, &err), 0);
	/* Only the directory itself: its parents belong to root. */
	CHECK_INT((int)gs.n, 1);
	CHECK_STR(gs.g[0].path, dir);

	/* What a run of that uid could do to it. */
	CHECK(chmod(dir, 0) == 0);
	CHECK(chown(dir, (uid_t)-1, 1) == 0);
	{
		struct timespec t[2] = {{1000000000, 0}, {1000000000, 0}};

		CHECK(utimensat(AT_FDCWD, dir, t, 0) == 0);
	}
	if (xattrs) {
		CHECK(setxattr(dir, "user.planted", "x", 1, 0) == 0);
		CHECK(setxattr(dir, "user.kept", "changed", 7, 0) == 0);
	}
	CHECK_INT(mcpx_dirguards_repair(&gs, &err), 0);
	CHECK(stat(dir, &st) == 0);
	printf("  mode %o gid %u mtime %ld planted %d\n", (unsigned)(st.st_mode & 07777),
	       (unsigned)st.st_gid, (long)st.st_mtime, has_xattr(dir, "user.planted"));
	CHECK_INT((int)(st.st_mode & 07777), 0711);
	CHECK_INT((int)st.st_gid, RUN_UID);
	CHECK(st.st_mtime > 1000000000);
	if (xattrs) {
		char v[16] = {0};

		CHECK(!has_xattr(dir, "user.planted"));
		CHECK_INT((int)getxattr(dir, "user.kept", v, sizeof(v)), 2);
		CHECK_STR(v, "v1");
		/* A removed attribute comes back too. */
		CHECK(removexattr(dir, "user.kept") == 0);
		CHECK_INT(mcpx_dirguards_repair(&gs, &err), 0);
		CHECK(has_xattr(dir, "user.kept"));
	} else {
		printf("  user.* attributes: SKIP (not supported here)\n");
	}

	/* A path that names another directory now is refused. */
	{
		char moved[4200];

		snprintf(moved, sizeof(moved), "%s.moved", dir);
		CHECK(rename(dir, moved) == 0);
		CHECK(mkdir(dir, 0711) == 0);
		CHECK_INT(mcpx_dirguards_repair(&gs, &err), -ESTALE);
		printf("  replaced: %s\n", err.msg);
		CHECK(rmdir(dir) == 0);
		CHECK(rename(moved, dir) == 0);
		CHECK_INT(mcpx_dirguards_repair(&gs, &err), 0);
	}
	mcpx_dirguards_close(&gs);
	CHECK(rmdir(dir) == 0);
}

static void test_not_guarded(const char *top)
{
	struct mcpx_dirguards gs;
	struct mcpx_err err = {{0}};
	char dir[4096];

	printf("directories the run uid cannot change are not guarded\n");
	snprintf(dir, sizeof(dir), "%s/root-owned", top);
	CHECK(mkdir(dir, 0755) == 0);
	mcpx_dirguards_init(&gs);
	CHECK_INT(mcpx_dirguards_add_chain(&gs, dir, RUN_UID, &err), 0);
	CHECK_INT((int)gs.n, 0);
	/* World-writable and not sticky: user.* attributes are the run's to
	 * set, so it is guarded (attributes only). */
	CHECK(chmod(dir, 0777) == 0);
	CHECK_INT(mcpx_dirguards_add(&gs, dir, RUN_UID, &err), 0);
	CHECK_INT((int)gs.n, 1);
	CHECK(!gs.g[0].owner && gs.g[0].attrs);
	mcpx_dirguards_close(&gs);
	/* Sticky (like /tmp): only the owner may set them. */
	CHECK(chmod(dir, 01777) == 0);
	CHECK_INT(mcpx_dirguards_add(&gs, dir, RUN_UID, &err), 0);
	CHECK_INT((int)gs.n, 0);
	CHECK(rmdir(dir) == 0);
}

int main(void)
{
	char top[] = "/tmp/mcpx-guardtest-XXXXXX";

	if (geteuid() != 0) {
		printf("SKIP: needs root to give directories to uid %d\n", RUN_UID);
		return 0;
	}
	if (!mkdtemp(top) || chmod(top, 0755) < 0) {
		perror("mkdtemp");
		return 1;
	}
	test_repair(top);
	test_not_guarded(top);
	CHECK(rmdir(top) == 0);
	CHECK_DONE();
}
