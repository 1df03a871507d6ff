/*
 * test_fs_view.c - fs_view.c and fs_view_probe.c.
 *
 * Everywhere: the start-up probe either holds or names the step and the
 * error, and leaves nothing in the workdir base; entering the view either
 * holds or fails with a step (never half a view that reports success).
 *
 * Where the view holds (gVisor 2024-07: the gVisor pass runs this binary
 * under runsc as uid 65532, and runsc_wrap.py says which runsc in
 * MCPX_RUNSC_VERSION), a child enters it as a run's child does and attacks
 * it from inside: a token beside the workdir and the other entries of the
 * workdir base are gone; the root, the runtime's directories and /proc
 * cannot be written; nothing can be unmounted, mounted, pivoted or
 * chrooted; no capability is left; /proc/<pid>/root and /cwd of the parent
 * and of pid 1 lead nowhere; a nested namespace sees nothing more; while
 * the workdir, /dev/null, /dev/zero, /dev/shm, /dev/fd and /bin (a symlink
 * into /usr) work and a program can be executed. From outside, the file the
 * child wrote is in the real workdir. With runsc 2024-07 or newer the view
 * must hold.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fs_view.h"

static char base[256], workdir[PATH_MAX], token[PATH_MAX];

/* The runsc that runs this binary, as runsc_wrap.py says (20240729), or 0. */
static long runsc_version(void)
{
	const char *v = getenv("MCPX_RUNSC_VERSION");

	return v ? strtol(v, NULL, 10) : 0;
}

/* Entries of dir other than "." and "..", or -errno. */
static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void test_probe(bool *holds)
{
	char why[256] = "";
	int rc;

	printf("the start-up probe\n");
	rc = mcpx_fs_view_probe(base, geteuid() == 0, 65532, 65532, why, sizeof(why));
	printf("  rc=%d: %s\n", rc, why);
	*holds = rc == 0;
	CHECK(why[0] != '\0');
	if (rc)
		CHECK(strchr(why, ':') != NULL); /* "<step>: <error>" */
	CHECK_INT(count_entries(base), 0);       /* workdir and token removed */
	if (runsc_version() >= 20240729)
		CHECK_INT(rc, 0);
}

/* One attack from inside: prints it and counts a surprise. */
static int surprises;

static void expect(const char *what, bool as_expected)
{
	int err = errno; /* of the last call in as_expected's expression */

	printf("    %-52s %s (errno %d)\n", what, as_expected ? "as expected" : "SURPRISE", err);
	if (!as_expected)
		surprises++;
}

static void attack_files(void)
{
	char path[PATH_MAX + 64], cwd[PATH_MAX];
	int fd;

	fd = open(token, O_RDONLY);
	expect("token beside the workdir: gone", fd < 0 && errno == ENOENT);
	expect("workdir base: only the workdir in it", count_entries(base) == 1);
	expect("workdir is the current directory",
	       getcwd(cwd, sizeof(cwd)) && !strcmp(cwd, workdir));
	fd = open("inside", O_WRONLY | O_CREAT | O_EXCL, 0600);
	expect("workdir writable", fd >= 0 && write(fd, "x", 1) == 1);
	if (fd >= 0)
		close(fd);
	expect("mkdir in the root", mkdir("/mcpx-x", 0700) < 0);
	fd = open("/usr/mcpx-x", O_WRONLY | O_CREAT, 0600);
	expect("create in /usr", fd < 0);
	fd = open("/proc/self/oom_score_adj", O_WRONLY);
	expect("write into /proc", fd < 0);
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)getppid(), token);
	expect("the token through the parent's root in proc", open(path, O_RDONLY) < 0);
	snprintf(path, sizeof(path), "/proc/%d/cwd", (int)getppid());
	expect("the parent's cwd in proc", opendir(path) == NULL);
	snprintf(path, sizeof(path), "/proc/1/root%s", token);
	expect("the token through pid 1's root in proc", open(path, O_RDONLY) < 0);
}

static void attack_mounts(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};

	expect("umount2 /usr", umount2("/usr", MNT_DETACH) < 0);
	expect("umount2 the workdir", umount2(workdir, MNT_DETACH) < 0);
	expect("mount a tmpfs", mount("tmpfs", "/usr", "tmpfs", 0, NULL) < 0);
	expect("remount the root read-write",
	       mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL) < 0);
	expect("pivot_root", (int)syscall(SYS_pivot_root, ".", ".") < 0);
	expect("chroot", chroot("/usr") < 0);
	expect("no capability left", syscall(SYS_capget, &h, d) == 0 && !d[0].effective &&
	                                 !d[0].permitted && !d[1].effective && !d[1].permitted &&
	                                 !d[0].inheritable);
}

static void use_devices(void)
{
	struct stat st;
	char c;
	int fd;

	fd = open("/dev/null", O_WRONLY);
	expect("/dev/null writable", fd >= 0 && write(fd, "x", 1) == 1);
	if (fd >= 0)
		close(fd);
	fd = open("/dev/zero", O_RDONLY);
	expect("/dev/zero readable", fd >= 0 && read(fd, &c, 1) == 1 && c == 0);
	if (fd >= 0)
		close(fd);
	if (stat("/dev/shm", &st) == 0) {
		fd = open("/dev/shm/mcpx-fs-view-test", O_WRONLY | O_CREAT, 0600);
		expect("/dev/shm writable", fd >= 0);
		if (fd >= 0)
			close(fd);
		unlink("/dev/shm/mcpx-fs-view-test");
	}
	expect("/dev/fd/0 is stdin",
	       lstat("/dev/fd", &st) == 0 && S_ISLNK(st.st_mode) && stat("/dev/fd/0", &st) == 0);
	expect("/bin/sh through /bin (a link on merged /usr)", access("/bin/sh", X_OK) == 0);
}

/* The last attack: a nested user and mount namespace (Linux allows one
 * without privilege; gVisor refuses) sees no more than the view. */
static void nest(void)
{
	int rc = unshare(CLONE_NEWUSER | CLONE_NEWNS);

	printf("    nested namespaces: %s\n", rc ? strerror(errno) : "made");
	expect("token still gone after that", open(token, O_RDONLY) < 0 && errno == ENOENT);
	expect("workdir base still holds only the workdir", count_entries(base) == 1);
}

static void child(void)
{
	int step = 0, rc, st;
	pid_t pid;

	if (chdir(workdir) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(90);
	rc = mcpx_fs_view_enter(workdir, NULL, &step);
	printf("  enter: rc=%d step=%s\n", rc, rc ? mcpx_fs_view_step_name(step) : "-");
	fflush(stdout);
	if (rc)
		_exit(step > 0 ? 91 : 92);
	attack_files();
	attack_mounts();
	use_devices();
	pid = fork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(93);
	}
	expect("a program runs in the view",
	       pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st));
	nest();
	fflush(stdout);
	_exit(surprises ? 1 : 0);
}

static void test_enter(bool holds)
{
	char inside[PATH_MAX + 16];
	int fd, st = 0;
	pid_t pid;

	printf("entering the view (%s here)\n", holds ? "it holds" : "the probe said no");
	snprintf(workdir, sizeof(workdir), "%s/run-test", base);
	snprintf(token, sizeof(token), "%s/token", base);
	REQUIRE(mkdir(workdir, 0700) == 0);
	fd = open(token, O_WRONLY | O_CREAT, 0644);
	REQUIRE(fd >= 0);
	close(fd);
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		child();
	REQUIRE(pid > 0);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	snprintf(inside, sizeof(inside), "%s/inside", workdir);
	if (holds) {
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK(access(inside, F_OK) == 0); /* written through the view */
	} else {
		/* Failed with a step, before anything was attacked. */
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 91);
	}
	CHECK(access(token, F_OK) == 0);
	unlink(inside);
	unlink(token);
	CHECK(rmdir(workdir) == 0);
}

static void test_names(void)
{
	CHECK_STR(mcpx_fs_view_step_name(MCPX_FSV_PIVOT), "pivot_root");
	CHECK_STR(mcpx_fs_view_step_name(0), "unknown step");
	CHECK_STR(mcpx_fs_view_step_name(999), "unknown step");
	for (int s = MCPX_FSV_UNSHARE; s <= MCPX_FSV_PROBE_ESCAPE; s++)
		CHECK(strcmp(mcpx_fs_view_step_name(s), "unknown step") != 0);
}

int main(void)
{
	bool holds = false;

	snprintf(base, sizeof(base), "/tmp/mcpx-fsview-XXXXXX");
	if (!mkdtemp(base) || chmod(base, 0755) < 0) {
		perror("mkdtemp");
		return 1;
	}
	printf("runsc: %ld (0: not under runsc_wrap.py)\n", runsc_version());
	test_names();
	test_probe(&holds);
	test_enter(holds);
	CHECK(rmdir(base) == 0);
	CHECK_DONE();
}
