/*
 * fs_view.c - a run's private filesystem view, where Landlock is absent.
 *
 * What it does: in the forked child, after no_new_privs and before seccomp,
 * gives the process a mount namespace of its own whose root holds what
 * Landlock's ruleset would let the run reach (landlock.c's plan, so the two
 * cannot drift apart): the runtime's directories read-only, /dev with
 * null, zero, full, random, urandom and shm, and the run's workdir
 * read-write at its own path. The rest of the filesystem is not in the
 * view at all: the auth token file and every other mounted secret, the
 * workdir base with the other runs' workdirs, /tmp, the workspaces. The
 * capabilities the namespace gave are dropped before the interpreter
 * starts, and seccomp then denies every call that could undo the view
 * (mount, umount2, pivot_root, unshare, setns, chroot, clone with a
 * namespace flag). One straight-line sequence (mcpx_fs_view_enter), one
 * step per function, as bubblewrap builds its sandbox.
 *
 * Why this shape:
 * - A user namespace is what lets an unprivileged process mount. It stays
 *   unmapped: the child shares the server's memory (vfork), which is not
 *   dumpable, so its /proc/self/uid_map belongs to root and cannot be
 *   opened (EACCES, on gVisor as on Linux). Inside, the run sees itself as
 *   the overflow uid 65534; the kernel still knows it as its real uid, so
 *   permissions and the owner of every file it makes are as before.
 * - The new root is a tmpfs mounted over the workdir's own path: a
 *   directory that exists and is the run's, and the current directory
 *   stays the real workdir beneath it, so the workdir is bound from "."
 *   and never looked up by a path a concurrent run could have changed.
 * - pivot_root(".", ".") stacks the old root on the new one, and a lazy
 *   unmount of "." detaches it: no path leads out any more (runc does the
 *   same). A chroot would leave the old root one ".." away from a kept fd.
 *
 * Where it works: gVisor 2024-07 (Debian's bookworm-backports runsc). gVisor
 * 2022-12 refuses every mount in a user namespace (EPERM), and Linux
 * refuses to create a directory in a tmpfs of an unmapped namespace
 * (EOVERFLOW): there the start-up probe (fs_view_probe.c) fails and the
 * server says so; Linux has Landlock for this.
 *
 * What it does not do: decide whether to use it (sandbox.c, from the
 * probe), or allocate, format or log: it runs in the server's vfork child.
 */
#include "fs_view.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"

/* The rights of a read-only rule of the plan; a rule with any other right
 * is writable (the workdir, /dev/null, /dev/shm). */
#define FS_VIEW_READ_RIGHTS                                                                        \
	(LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_EXECUTE)

/* statfs's f_flags holds valid mount flags (the kernel's ST_VALID); they
 * have the values of the MS_* flags of the same name. */
#define STATFS_FLAGS_VALID 0x0020

/* The view's root is a handful of directories and mount points; it is
 * read-only once built. */
#define ROOT_OPTIONS "mode=0755,size=64k"

/* Landlock lets a run read all of /dev; the view's /dev holds the devices
 * programs open, read-only, besides the plan's writable /dev/null and
 * /dev/shm. Ttys, /dev/pts and the pod's /dev/termination-log stay out. */
static const char *const read_devices[] = {"/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};
/* What /dev/fd and the standard streams are on Linux (bash's process
 * substitution opens /dev/fd/N). */
static const char *const dev_links[][2] = {{"/dev/fd", "/proc/self/fd"},
                                           {"/dev/stdin", "/proc/self/fd/0"},
                                           {"/dev/stdout", "/proc/self/fd/1"},
                                           {"/dev/stderr", "/proc/self/fd/2"}};

/* The view being built: its root (the workdir's path, where the tmpfs is
 * mounted) and a scratch path beneath it. Stack memory only. */
struct view {
	const char *root;
	size_t root_len;
	char at[PATH_MAX];
};

/* v->at = the view's root + path: where path will be inside the view. */
static int place(struct view *v, const char *path)
{
	size_t n = strlen(path);

	if (v->root_len + n + 1 > sizeof(v->at))
		return -ENAMETOOLONG;
	memcpy(v->at, v->root, v->root_len);
	memcpy(v->at + v->root_len, path, n + 1);
	return 0;
}

/* Creates the directories of v->at beneath the view's root: every one but
 * the last, and the last too when last is true. */
static int make_dirs(struct view *v, bool last)
{
	for (char *p = v->at + v->root_len + 1;; p++) {
		char c = *p;
		int rc;

		if (c != '/' && c != '\0')
			continue;
		if (c == '\0' && !last)
			return 0;
		*p = '\0';
		rc = mkdir(v->at, 0700);
		*p = c;
		if (rc < 0 && errno != EEXIST)
			return -errno;
		if (c == '\0')
			return 0;
	}
}

/* An empty file to bind a device or a single file onto. */
static int make_file(struct view *v)
{
	int fd, rc = make_dirs(v, false);

	if (rc)
		return rc;
	fd = open(v->at, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Threat: the capabilities the user namespace handed out let the process
 * change or undo its own view. From here on the view can only be made
 * smaller (by nothing) or left (by nothing): every capability is dropped
 * and checked gone. An exec as the namespace's non-root uid would clear
 * them too; this does not rely on it. */
static int drop_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	for (int i = 0; i < 2; i++)
		if (d[i].effective || d[i].permitted || d[i].inheritable)
			return -EPERM;
	return 0;
}

/* Binds src onto the view's v->at read-only, without set-uid or device
 * files, and without execution unless exec. A remount in a user namespace
 * must keep the flags the source mount has locked (Linux: noexec, the
 * atime flags), so those are carried over. */
static int bind_read_only(struct view *v, const char *src, bool exec)
{
	unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV;
	struct statfs sf;

	if (mount(src, v->at, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -errno;
	if (!exec)
		flags |= MS_NOEXEC;
	if (statfs(v->at, &sf) == 0 && (sf.f_flags & STATFS_FLAGS_VALID))
		flags |= (unsigned long)sf.f_flags &
		         (MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME);
	return mount(NULL, v->at, NULL, flags, NULL) < 0 ? -errno : 0;
}

/* One read-only root of the plan. A symlink (merged /usr: /bin -> usr/bin)
 * is made again as the same symlink, so it resolves inside the view. */
static int add_read_root(struct view *v, const char *src, uint64_t rights, bool optional)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;
	int rc;

	if (lstat(src, &st) < 0)
		return optional && errno == ENOENT ? 0 : -errno;
	if ((rc = place(v, src)) < 0)
		return rc;
	if (S_ISLNK(st.st_mode)) {
		n = readlink(src, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		if ((rc = make_dirs(v, false)) < 0)
			return rc;
		return symlink(target, v->at) < 0 ? -errno : 0;
	}
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if ((rc = make_dirs(v, true)) < 0)
		return rc;
	return bind_read_only(v, src, rights & LANDLOCK_ACCESS_FS_EXECUTE);
}

/* A device or /dev/shm, bound as its own mount has it: devices are opened
 * whatever the mount's read-only flag, and /dev/shm is where
 * multiprocessing's semaphores live (the server wipes what a run left
 * there, as with Landlock). */
static int add_bind(struct view *v, const char *src, bool optional)
{
	struct stat st;
	int rc;

	if (stat(src, &st) < 0)
		return optional && errno == ENOENT ? 0 : -errno;
	if ((rc = place(v, src)) < 0)
		return rc;
	rc = S_ISDIR(st.st_mode) ? make_dirs(v, true) : make_file(v);
	if (rc < 0)
		return rc;
	return mount(src, v->at, NULL, MS_BIND | MS_REC, NULL) < 0 ? -errno : 0;
}

/* Threat: the token file, other mounted secrets, other runs' workdirs,
 * /tmp: everything Landlock would not let the run read. Only the plan's
 * read rules enter the view; its /dev rule is replaced by the devices
 * below, its workdir rule (rules[0]) is the workdir step. */
static int add_read_roots(struct view *v, const struct mcpx_landlock_plan *p)
{
	for (size_t i = 1; i < p->n_rules; i++) {
		const char *path = p->rules[i].path;
		int rc;

		if (!path || p->rules[i].fd >= 0 || (p->rules[i].rights & ~FS_VIEW_READ_RIGHTS) ||
		    strcmp(path, "/dev") == 0)
			continue;
		rc = add_read_root(v, path, p->rules[i].rights, p->rules[i].optional);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The plan's writable files and directories besides the workdir
 * (/dev/null, /dev/shm), the read-only devices, and the /dev links. */
static int add_devices(struct view *v, const struct mcpx_landlock_plan *p)
{
	int rc = 0;

	for (size_t i = 1; !rc && i < p->n_rules; i++)
		if (p->rules[i].path && p->rules[i].fd < 0 &&
		    (p->rules[i].rights & ~FS_VIEW_READ_RIGHTS))
			rc = add_bind(v, p->rules[i].path, p->rules[i].optional);
	for (size_t i = 0; !rc && i < sizeof(read_devices) / sizeof(read_devices[0]); i++)
		rc = add_bind(v, read_devices[i], true);
	for (size_t i = 0; !rc && i < sizeof(dev_links) / sizeof(dev_links[0]); i++) {
		rc = place(v, dev_links[i][0]);
		if (!rc)
			rc = make_dirs(v, false);
		if (!rc && symlink(dev_links[i][1], v->at) < 0)
			rc = -errno;
	}
	return rc;
}

/* The workdir, read-write, at its own path inside the view: bound from
 * ".", the real workdir beneath the tmpfs, last so nothing covers it. Not
 * recursively: the tmpfs itself is mounted on that directory, and a
 * recursive bind would stack a copy of the view's root on the workdir. */
static int add_workdir(struct view *v)
{
	int rc = place(v, v->root);

	if (!rc)
		rc = make_dirs(v, true);
	if (!rc && mount(".", v->at, NULL, MS_BIND, NULL) < 0)
		rc = -errno;
	return rc;
}

/* Threat: any path back to the old root. The tmpfs becomes "/", the old
 * root, stacked on it by pivot_root(".", "."), is detached: it stays
 * mounted only for processes that still have it (the server). */
static int pivot(struct view *v)
{
	if (chdir(v->root) < 0)
		return -errno;
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return -errno;
	return umount2(".", MNT_DETACH) < 0 ? -errno : 0;
}

/* Threat: a run filling the view's root (memory outside every limit) or
 * planting files in it. */
static int seal(void)
{
	unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;

	return mount(NULL, "/", NULL, flags, NULL) < 0 ? -errno : 0;
}

/* Back into the workdir, now through the view; it must be the very
 * directory the run was in (device and inode), or the run would work in
 * a directory the server does not clean up. */
static int enter(struct view *v, const struct stat *before)
{
	struct stat st;

	if (chdir(v->root) < 0 || stat(".", &st) < 0)
		return -errno;
	return st.st_dev == before->st_dev && st.st_ino == before->st_ino ? 0 : -EXDEV;
}

#define STEP(id, call)                                                                             \
	do {                                                                                       \
		*step = (id);                                                                      \
		if ((rc = (call)) < 0)                                                             \
			return rc;                                                                 \
	} while (0)

int mcpx_fs_view_enter(const char *workdir, const char *runtime_root, int *step)
{
	struct mcpx_landlock_plan plan;
	struct view v = {.root = workdir, .root_len = strlen(workdir)};
	struct stat before;
	int rc;

	*step = MCPX_FSV_UNSHARE;
	if (workdir[0] != '/' || v.root_len < 2 || stat(".", &before) < 0)
		return workdir[0] != '/' || v.root_len < 2 ? -EINVAL : -errno;
	/* What Landlock would grant this run, as data: the view is built
	 * from the same rules. The ABI only changes which rights are
	 * handled, not which paths are granted. */
	mcpx_landlock_plan(1, ".", runtime_root, NULL, &plan);
	STEP(MCPX_FSV_UNSHARE, unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0 ? -errno : 0);
	STEP(MCPX_FSV_PRIVATE, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ? -errno : 0);
	STEP(MCPX_FSV_ROOT,
	     mount("tmpfs", workdir, "tmpfs", MS_NOSUID | MS_NODEV, ROOT_OPTIONS) < 0 ? -errno : 0);
	STEP(MCPX_FSV_READ_ROOTS, add_read_roots(&v, &plan));
	STEP(MCPX_FSV_DEVICES, add_devices(&v, &plan));
	STEP(MCPX_FSV_WORKDIR, add_workdir(&v));
	STEP(MCPX_FSV_PIVOT, pivot(&v));
	STEP(MCPX_FSV_SEAL, seal());
	STEP(MCPX_FSV_ENTER, enter(&v, &before));
	STEP(MCPX_FSV_CAPS, drop_caps());
	*step = 0;
	return 0;
}

/* clang-format off */
static const char *const step_names[] = {
	[MCPX_FSV_UNSHARE] = "unshare of a user and mount namespace",
	[MCPX_FSV_PRIVATE] = "making the mounts private",
	[MCPX_FSV_ROOT] = "mount of the view's root (tmpfs)",
	[MCPX_FSV_READ_ROOTS] = "bind of the runtime's directories",
	[MCPX_FSV_DEVICES] = "bind of the devices and /dev/shm",
	[MCPX_FSV_WORKDIR] = "bind of the workdir",
	[MCPX_FSV_PIVOT] = "pivot_root",
	[MCPX_FSV_SEAL] = "remount of the view's root read-only",
	[MCPX_FSV_ENTER] = "entering the workdir in the view",
	[MCPX_FSV_CAPS] = "dropping the namespace's capabilities",
	[MCPX_FSV_PROBE_SETUP] = "the probe becoming a run",
	[MCPX_FSV_PROBE_VACUOUS] = "the probe's token readable before the view",
	[MCPX_FSV_PROBE_TOKEN] = "the probe's token gone inside the view",
	[MCPX_FSV_PROBE_WRITE] = "the workdir writable inside the view",
	[MCPX_FSV_PROBE_ESCAPE] = "the view's root read-only and its mounts fixed",
};
/* clang-format on */

const char *mcpx_fs_view_step_name(int step)
{
	if (step <= 0 || step >= (int)(sizeof(step_names) / sizeof(step_names[0])) ||
	    !step_names[step])
		return "unknown step";
	return step_names[step];
}
