/*
 * landlock.c - the Landlock ruleset of a run.
 *
 * What it does: probes the ABI (parent, once) and, in the forked child, builds
 * and enforces one ruleset: every write-type filesystem right is handled and
 * granted only beneath the run's workdir, plus /dev/null (writable) and
 * /dev/shm (multiprocessing's SemLock calls sem_open there). Reading and
 * executing are handled too and granted only beneath the runtime's
 * directories (/usr, /lib*, /bin, /sbin, /etc, /proc, /sys, /dev and the
 * interpreter's own prefix): a run cannot read a mounted Secret such as the
 * auth token file, other runs' leftovers in /tmp, or anything else the
 * server's uid can read. From ABI 4 TCP
 * bind and connect are handled with no rule, so both are denied; from ABI 6
 * signals and abstract unix sockets are scoped to the run's own domain, so
 * run code can neither signal nor reach the server or another run.
 *
 * What it does not do: decide whether Landlock is required; sandbox.c and
 * the self-test do that. Everything after the probe is async-signal-safe:
 * plain syscalls on stack memory, no malloc, no stdio.
 */
#include "landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Filesystem rights newer than Debian 12's header (Linux 6.1, ABI 2); the
 * header's own definitions win where it has them. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13) /* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#endif
/* Network rights (ABI 4) and scopes (ABI 6). */
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

/* The ABI 6 layout of struct landlock_ruleset_attr, whose Debian 12 header
 * has only the first field. The kernel accepts a larger struct than it knows
 * as long as the unknown tail is zero, so one layout serves every ABI:
 * fields an old kernel does not know stay 0. */
struct mcpx_landlock_ruleset_attr {
	__u64 handled_access_fs;
	__u64 handled_access_net;
	__u64 scoped;
};

/* Rights that create, change or remove filesystem content. */
#define FS_WRITE_ABI1                                                                              \
	(LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |                           \
	 LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |                           \
	 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |                               \
	 LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |                             \
	 LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)

/* Rights that read or run what exists. */
#define FS_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_READ_EXEC (FS_READ | LANDLOCK_ACCESS_FS_EXECUTE)

/* Rights Landlock accepts on a single file (not a directory) in a rule. */
#define FS_FILE_RIGHTS                                                                             \
	(LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |                             \
	 LANDLOCK_ACCESS_FS_IOCTL_DEV | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE)

/* Where the interpreter, its libraries and the system's configuration live:
 * readable (and, except /dev, /proc and /sys, executable). Paths missing on
 * a given system are skipped. */
static const struct {
	const char *path;
	__u64 rights;
} read_roots[] = {
    {"/usr", FS_READ_EXEC},    {"/bin", FS_READ_EXEC},   {"/sbin", FS_READ_EXEC},
    {"/lib", FS_READ_EXEC},    {"/lib32", FS_READ_EXEC}, {"/lib64", FS_READ_EXEC},
    {"/libx32", FS_READ_EXEC}, {"/etc", FS_READ},        {"/proc", FS_READ},
    {"/sys", FS_READ},         {"/dev", FS_READ},
};

int mcpx_landlock_abi(void)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	return abi > 0 ? (int)abi : 0;
}

/* The write rights this kernel knows; handling a right the kernel does not
 * know makes landlock_create_ruleset fail with EINVAL. */
static __u64 handled_fs(int abi)
{
	__u64 fs = FS_WRITE_ABI1 | FS_READ_EXEC;

	if (abi >= 2)
		fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	/* ioctl on device files (ttys, block devices) is an old source of
	 * kernel bugs; the run only needs ioctl on pipes and its own files. */
	if (abi >= 5)
		fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return fs;
}

/* Grants rights beneath path, or beneath the file fd was opened on. A path
 * that does not exist (a minimal container without /dev/shm) is skipped:
 * not granting is the safe side. The given fd is the caller's: not closed. */
static int allow_path(int ruleset, const char *path, int given_fd, __u64 rights, bool optional)
{
	struct landlock_path_beneath_attr pb;
	int fd = given_fd, rc, saved;

	if (fd < 0)
		fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return optional && errno == ENOENT ? 0 : -errno;
	pb.allowed_access = rights;
	pb.parent_fd = fd;
	rc = (int)syscall(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	saved = errno;
	if (fd != given_fd)
		close(fd);
	return rc < 0 ? -saved : 0;
}

/* Appends one rule to the plan (the table has room for every rule below). */
static void plan_rule(struct mcpx_landlock_plan *p, const char *path, int fd, uint64_t rights,
                      bool optional)
{
	if (p->n_rules >= MCPX_LANDLOCK_MAX_RULES)
		return;
	p->rules[p->n_rules].path = path;
	p->rules[p->n_rules].fd = fd;
	p->rules[p->n_rules].rights = rights;
	p->rules[p->n_rules].optional = optional;
	p->n_rules++;
}

void mcpx_landlock_plan(int abi, const char *workdir, const char *runtime_root,
                        const struct mcpx_landlock_exe *exe, struct mcpx_landlock_plan *p)
{
	uint64_t fs = handled_fs(abi);

	p->handled_fs = fs;
	/* TCP is handled with no rule at all: every bind and connect fails,
	 * a second wall behind seccomp's socket-family filter. */
	p->handled_net =
	    abi >= 4 ? LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP : 0;
	/* Without scoping, same-uid code (the pod case) could kill the server
	 * or the fork server, or connect to an abstract socket. */
	p->scoped = abi >= 6 ? LANDLOCK_SCOPE_SIGNAL | LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET : 0;
	p->n_rules = 0;

	/* The workdir is the run's own: every handled right. */
	plan_rule(p, workdir, -1, fs, false);
	/* Writes to /dev/null are how programs discard output. */
	plan_rule(p, "/dev/null", -1, fs & FS_FILE_RIGHTS, true);
	/* multiprocessing's SemLock needs sem_open in /dev/shm. Device nodes
	 * and cross-directory renames are left out; the server wipes what the
	 * run leaves there. */
	plan_rule(p, "/dev/shm", -1,
	          fs & ~(LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
	                 LANDLOCK_ACCESS_FS_REFER | LANDLOCK_ACCESS_FS_IOCTL_DEV),
	          true);
	for (size_t i = 0; i < sizeof(read_roots) / sizeof(read_roots[0]); i++)
		plan_rule(p, read_roots[i].path, -1, read_roots[i].rights, true);
	/* An interpreter outside the standard roots (/opt/python, say). */
	if (runtime_root && runtime_root[0])
		plan_rule(p, runtime_root, -1, FS_READ_EXEC, true);
	/* The zygote's binary, which may live outside the standard roots (next
	 * to the server in a build tree): this one file, read and executed,
	 * granted through the descriptor the server opened before the uid
	 * drop (the run uid may not be able to look its path up). */
	if (exe && (exe->fd >= 0 || (exe->path && exe->path[0])))
		plan_rule(p, exe->path, exe->fd, FS_READ_EXEC & FS_FILE_RIGHTS, false);
}

int mcpx_landlock_enforce(const struct mcpx_landlock_plan *p)
{
	struct mcpx_landlock_ruleset_attr attr = {0};
	int ruleset, rc = 0;

	attr.handled_access_fs = p->handled_fs;
	attr.handled_access_net = p->handled_net;
	attr.scoped = p->scoped;
	ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (ruleset < 0)
		return -errno;
	for (size_t i = 0; !rc && i < p->n_rules; i++)
		rc = allow_path(ruleset, p->rules[i].path, p->rules[i].fd, p->rules[i].rights,
		                p->rules[i].optional);
	if (!rc && syscall(__NR_landlock_restrict_self, ruleset, 0) < 0)
		rc = -errno;
	close(ruleset);
	return rc;
}

int mcpx_landlock_apply(int abi, const char *workdir, const char *runtime_root,
                        const struct mcpx_landlock_exe *exe)
{
	struct mcpx_landlock_plan plan;

	if (abi <= 0)
		return -EOPNOTSUPP;
	mcpx_landlock_plan(abi, workdir, runtime_root, exe, &plan);
	return mcpx_landlock_enforce(&plan);
}
