/*
 * seccomp_policy.c - the sandbox's seccomp policy, as a table.
 *
 * What it does: compiles, once at start-up, a default-ALLOW deny-list with
 * libseccomp and exports it as classic BPF (seccomp_export_bpf into a memfd,
 * read back into a struct sock_fprog) that the forked child installs as its
 * last step before execve. Every rule carries the sentence that justifies it.
 * Deliberate denials answer EPERM (Python raises a clear PermissionError);
 * syscalls that libraries probe and then fall back from answer ENOSYS; only a
 * foreign architecture (i386 int 0x80, x32) is killed: the whole process
 * where the kernel can, else the calling thread, else a trap (whichever
 * seccomp_probe.c saw act; gVisor kills threads only).
 *
 * What it does not do: act as an allowlist. In a pod it stacks on top of the
 * runtime's RuntimeDefault allowlist; on its own (local runs, CI) it closes
 * the holes that matter for this threat model: network, namespaces, mounts,
 * cross-process access (including the scheduling and limits of other
 * processes), IPC objects that outlive a run, kernel attack surface,
 * escaping the process group or the run's reaping (CLONE_PARENT) and
 * signalling the server. It cannot know pids that appear after start-up
 * (later server threads, other runs); Landlock's signal scope (ABI >= 6) and
 * the uid drop cover those.
 */
#include "seccomp_policy.h"

#include <dirent.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* open_tree_attr (Linux 6.15) is newer than libseccomp 2.5.4's table; the
 * number is the same in the generic table used by x86_64 and arm64. */
#define MCPX_NR_OPEN_TREE_ATTR 467

#ifndef IOPRIO_WHO_PROCESS
#define IOPRIO_WHO_PROCESS 1
#endif

/* One deny rule: the syscall, the errno it answers and at most one argument
 * comparison (libseccomp rejects two comparisons on the same argument). */
struct deny_rule {
	const char *name;
	int nr;
	int err;
	int arg; /* -1: every call; else the argument index compared */
	enum scmp_compare op;
	scmp_datum_t a; /* NE/EQ operand, or the mask for MASKED_EQ */
	scmp_datum_t b; /* the value for MASKED_EQ */
	const char *why;
	bool run_only; /* left out of the zygote's variant */
};

/* clang-format off */
#define DENY(sys, e, reason)                                                                       \
	{                                                                                          \
		#sys, SCMP_SYS(sys), e, -1, SCMP_CMP_EQ, 0, 0, reason, false                       \
	}
#define DENY_IF_NE(sys, e, argi, val, reason)                                                      \
	{                                                                                          \
		#sys, SCMP_SYS(sys), e, argi, SCMP_CMP_NE, (scmp_datum_t)(val), 0, reason, false   \
	}
#define DENY_IF_BITS(sys, e, argi, bits, reason)                                                   \
	{                                                                                          \
		#sys, SCMP_SYS(sys), e, argi, SCMP_CMP_MASKED_EQ, (scmp_datum_t)(bits),            \
			(scmp_datum_t)(bits), reason, false                                        \
	}
/* Denied to runs, allowed to the fork server's zygote, which calls it once
 * per child before the child installs the run's filter on top. */
#define DENY_RUN_ONLY(sys, e, reason)                                                              \
	{                                                                                          \
		#sys, SCMP_SYS(sys), e, -1, SCMP_CMP_EQ, 0, 0, reason, true                        \
	}
/* A 32-bit argument (an int or unsigned int) equal to val, whatever the
 * caller left in the upper half of the register. */
#define DENY_IF_EQ32(sys, e, argi, val, reason)                                                    \
	{                                                                                          \
		#sys, SCMP_SYS(sys), e, argi, SCMP_CMP_MASKED_EQ, 0xffffffffULL,                   \
			(scmp_datum_t)(uint32_t)(val), reason, false                               \
	}

static const struct deny_rule deny_rules[] = {
	/* Network. */
	DENY_IF_NE(socket, EPERM, 0, AF_UNIX,
		   "No network: every family but AF_UNIX (inet, inet6, netlink, packet, vsock, "
		   "...); a 64-bit compare, so junk in the upper half is denied too."),
	DENY_IF_NE(socketpair, EPERM, 0, AF_UNIX,
		   "Same rule for socketpair, which accepts the same families."),

	/* io_uring and clone3: ENOSYS so libraries fall back. */
	DENY(io_uring_setup, ENOSYS,
	     "io_uring operations (socket, connect, openat) run without passing seccomp."),
	DENY(io_uring_enter, ENOSYS, "See io_uring_setup."),
	DENY(io_uring_register, ENOSYS, "See io_uring_setup."),
	DENY(clone3, ENOSYS,
	     "clone3 passes its flags in memory that seccomp cannot inspect; glibc >= 2.34 "
	     "falls back to clone on ENOSYS (EPERM would break pthread_create), and the "
	     "flags of clone are in a register the rules below compare."),
	DENY_IF_BITS(clone, EPERM, 0, CLONE_PARENT,
		     "CLONE_PARENT makes the new process a child of the run's parent (the "
		     "zygote, or the server): it is outside the run's reaping, and its zombies "
		     "would eat the process budget of later runs. fork, threads and "
		     "posix_spawn never set it."),

	/* Namespaces: one masked compare per flag, as in RuntimeDefault. */
	DENY_IF_BITS(clone, EPERM, 0, CLONE_NEWNS,
		     "A new mount namespace is the first step of most container escapes."),
	DENY_IF_BITS(clone, EPERM, 0, CLONE_NEWCGROUP, "No new cgroup namespace."),
	DENY_IF_BITS(clone, EPERM, 0, CLONE_NEWUTS, "No new UTS namespace."),
	DENY_IF_BITS(clone, EPERM, 0, CLONE_NEWIPC, "No new IPC namespace."),
	DENY_IF_BITS(clone, EPERM, 0, CLONE_NEWUSER,
		     "User namespaces hand out capabilities and a large kernel attack surface."),
	DENY_IF_BITS(clone, EPERM, 0, CLONE_NEWPID,
		     "A new pid namespace would hide processes from the server's sweep."),
	DENY_IF_BITS(clone, EPERM, 0, CLONE_NEWNET, "A new network namespace."),
	DENY(unshare, EPERM, "Same namespaces, entered without forking."),
	DENY(setns, EPERM, "Joining another process's namespaces."),

	/* Mounts. */
	DENY(mount, EPERM, "Mounts change what Landlock's paths mean."),
	DENY(umount2, EPERM, "See mount."),
	DENY(pivot_root, EPERM, "See mount."),
	DENY(chroot, EPERM, "A chroot with a kept directory fd is a classic escape."),
	DENY(move_mount, EPERM, "New mount API, same risk as mount."),
	DENY(open_tree, EPERM, "New mount API, same risk as mount."),
	DENY(fsopen, EPERM, "New mount API, same risk as mount."),
	DENY(fsconfig, EPERM, "New mount API, same risk as mount."),
	DENY(fsmount, EPERM, "New mount API, same risk as mount."),
	DENY(fspick, EPERM, "New mount API, same risk as mount."),
	DENY(mount_setattr, EPERM, "New mount API, same risk as mount."),

	/* Cross-process access: in the pod the server has the run's uid. */
	DENY(ptrace, EPERM, "Attaching to the server or another run reads and rewrites it."),
	DENY(process_vm_readv, EPERM, "Reads another process's memory."),
	DENY(process_vm_writev, EPERM, "Writes another process's memory."),
	DENY(kcmp, EPERM, "Compares kernel objects of other processes (an info leak)."),
	DENY(pidfd_open, EPERM, "A pidfd of the server is a handle for signals and fd theft."),
	DENY(pidfd_getfd, EPERM, "Copies a file descriptor out of another process."),
	DENY(pidfd_send_signal, EPERM, "Signals through a pidfd bypass the kill rules below."),
	DENY(process_madvise, EPERM, "Changes another process's memory advice."),
	DENY(process_mrelease, EPERM, "Reaps another process's memory."),
	DENY(move_pages, EPERM, "Moves another process's pages between NUMA nodes."),
	DENY(migrate_pages, EPERM, "Migrates another process's pages."),

	/* Scheduling and limits: only the caller itself. The filter is compiled
	 * once, before any run exists, so a run's own pid cannot be written
	 * into it; pid 0 ("the calling thread") is the one value that means
	 * the caller in every process. glibc, CPython (os.nice, resource,
	 * os.sched_setaffinity(0, ...)), numpy and OpenBLAS (whose affinity
	 * code is off unless built with it) only ever pass 0; an explicit
	 * os.getpid() gets EPERM. Every compare is 64-bit: 0 with junk in the
	 * upper half is denied too. */
	DENY_IF_NE(prlimit64, EPERM, 0, 0,
		   "Setting another process's rlimits (the server's RLIMIT_NOFILE) is a "
		   "denial of service; pid 0, which glibc's setrlimit uses, stays allowed."),
	DENY_IF_NE(setpriority, EPERM, 0, PRIO_PROCESS,
		   "PRIO_USER and PRIO_PGRP renice the server when it shares the uid."),
	DENY_IF_NE(setpriority, EPERM, 1, 0, "Only the caller itself may be reniced."),
	DENY_IF_NE(ioprio_set, EPERM, 0, IOPRIO_WHO_PROCESS,
		   "IOPRIO_WHO_USER/PGRP reach the server when it shares the uid."),
	DENY_IF_NE(ioprio_set, EPERM, 1, 0, "Only the caller's own I/O priority."),
	DENY_IF_NE(sched_setscheduler, EPERM, 0, 0,
		   "Scheduling policy of another process (the zygote, whose children "
		   "inherit it, or the server in the pod) is off limits."),
	DENY_IF_NE(sched_setparam, EPERM, 0, 0, "See sched_setscheduler."),
	DENY_IF_NE(sched_setattr, EPERM, 0, 0, "See sched_setscheduler."),
	DENY_IF_NE(sched_setaffinity, EPERM, 0, 0,
		   "Pinning the zygote or the server to one CPU starves later runs or the "
		   "server."),

	/* SysV IPC and POSIX message queues: kernel objects that belong to
	 * the IPC namespace and the uid, not to a process. Whatever a run
	 * creates outlives it (nothing of the run's cleanup reaches them),
	 * can be found and read by the next run (keys are guessable, ids are
	 * listed in /proc/sysvipc), and pins memory beyond the server's own
	 * life. Python's multiprocessing uses POSIX shared memory and
	 * semaphores in /dev/shm instead, which the server wipes. */
	DENY(shmget, EPERM, "A SysV shared memory segment outlives the run (see above)."),
	DENY(shmat, EPERM, "Attaching a segment another run left behind."),
	DENY(shmctl, EPERM, "See shmget."),
	DENY(shmdt, EPERM, "See shmget."),
	DENY(msgget, EPERM, "A SysV message queue outlives the run."),
	DENY(msgsnd, EPERM, "See msgget."),
	DENY(msgrcv, EPERM, "See msgget."),
	DENY(msgctl, EPERM, "See msgget."),
	DENY(semget, EPERM, "A SysV semaphore set outlives the run."),
	DENY(semop, EPERM, "See semget."),
	DENY(semtimedop, EPERM, "See semget."),
	DENY(semctl, EPERM, "See semget."),
	DENY(mq_open, EPERM,
	     "A POSIX message queue outlives the run (RLIMIT_MSGQUEUE 0 only stops "
	     "creating one, not opening one another process made)."),
	DENY(mq_unlink, EPERM, "See mq_open."),
	DENY(mq_timedsend, EPERM, "See mq_open."),
	DENY(mq_timedreceive, EPERM, "See mq_open."),
	DENY(mq_notify, EPERM, "See mq_open."),
	DENY(mq_getsetattr, EPERM, "See mq_open."),

	/* Kernel attack surface that Python code never needs. */
	DENY(keyctl, EPERM, "Keyrings are not namespaced; keys of the uid are shared."),
	DENY(add_key, EPERM, "See keyctl."),
	DENY(request_key, EPERM, "See keyctl."),
	DENY(bpf, EPERM, "eBPF is a large attack surface."),
	DENY(perf_event_open, EPERM, "Side channels and a history of kernel bugs."),
	DENY(userfaultfd, EPERM, "Turns kernel race windows into reliable exploits."),
	DENY(fanotify_init, EPERM, "Filesystem-wide event monitoring."),
	DENY(lookup_dcookie, EPERM, "Kernel profiling interface."),
	DENY(open_by_handle_at, EPERM, "Opens files by handle, bypassing path checks."),
	DENY(name_to_handle_at, EPERM, "Produces the handles open_by_handle_at uses."),
	DENY(acct, EPERM, "Process accounting is host configuration."),
	DENY(swapon, EPERM, "Host configuration."),
	DENY(swapoff, EPERM, "Host configuration."),
	DENY(reboot, EPERM, "Host configuration."),
	DENY(kexec_load, EPERM, "Replaces the kernel."),
	DENY(kexec_file_load, EPERM, "Replaces the kernel."),
	DENY(init_module, EPERM, "Loads kernel code."),
	DENY(finit_module, EPERM, "Loads kernel code."),
	DENY(delete_module, EPERM, "Unloads kernel code."),
	DENY(iopl, EPERM, "Raw port I/O."),
	DENY(ioperm, EPERM, "Raw port I/O."),
	DENY(syslog, EPERM, "The kernel log leaks addresses."),
	DENY(quotactl, EPERM, "Host configuration."),
	DENY(quotactl_fd, EPERM, "Host configuration."),
	DENY(sethostname, EPERM, "Host configuration."),
	DENY(setdomainname, EPERM, "Host configuration."),
	DENY(settimeofday, EPERM, "The clock is shared with the server and the host."),
	DENY(clock_settime, EPERM, "See settimeofday."),
	DENY(clock_adjtime, EPERM, "See settimeofday."),
	DENY(adjtimex, EPERM, "See settimeofday."),
	DENY(vhangup, EPERM, "Hangs up the controlling terminal."),
	DENY(uselib, EPERM, "Obsolete loader interface."),
	DENY_IF_NE(personality, EPERM, 0, 0,
		   "READ_IMPLIES_EXEC and ADDR_NO_RANDOMIZE weaken the next exec; the "
		   "query form 0xffffffff is denied too (one compare per argument)."),

	/* Terminals. */
	DENY_IF_EQ32(ioctl, EPERM, 1, TIOCSTI,
		     "TIOCSTI pushes input into a terminal the run might share."),
	DENY_IF_EQ32(ioctl, EPERM, 1, TIOCLINUX, "TIOCLINUX can also inject console input."),

	/* The process group is how the server kills the whole run. */
	DENY_RUN_ONLY(setsid, EPERM,
		      "A new session leaves the process group the server kills (the zygote "
		      "needs it once per child, before the child stacks this filter)."),
	DENY(setpgid, EPERM, "Moving to another process group escapes the group kill."),
};
/* clang-format on */

/* Signals aimed at the server. pid arguments are ints: masked 32-bit
 * compares, because glibc sign-extends -1 to 0xffffffffffffffff and a raw
 * syscall may pass 0x00000000ffffffff. */
enum signal_target {
	TGT_ALL = 1 << 0,        /* pid -1: every process the caller may signal */
	TGT_SERVER = 1 << 1,     /* the server's pid */
	TGT_SERVER_GRP = 1 << 2, /* -pid and -pgrp of the server */
	TGT_THREADS = 1 << 3,    /* every server thread id known at start-up */
};

struct signal_rule {
	const char *name;
	int nr;
	int arg;
	unsigned targets;
	const char *why;
};

/* clang-format off */
static const struct signal_rule signal_rules[] = {
	{"kill", SCMP_SYS(kill), 0, TGT_ALL | TGT_SERVER | TGT_SERVER_GRP | TGT_THREADS,
	 "kill(-1) reaches every process of the uid; kill(tid) of any server thread "
	 "signals the whole server."},
	{"tkill", SCMP_SYS(tkill), 0, TGT_SERVER | TGT_THREADS,
	 "tkill addresses one server thread directly."},
	{"tgkill", SCMP_SYS(tgkill), 0, TGT_SERVER, "tgkill names the server's tgid first."},
	{"rt_sigqueueinfo", SCMP_SYS(rt_sigqueueinfo), 0, TGT_ALL | TGT_SERVER | TGT_THREADS,
	 "A queued signal is still a signal."},
	{"rt_tgsigqueueinfo", SCMP_SYS(rt_tgsigqueueinfo), 0, TGT_SERVER,
	 "A queued signal to a server thread."},
};
/* clang-format on */

#define MAX_SERVER_TIDS 256

static int add_deny_rule(scmp_filter_ctx ctx, const struct deny_rule *r, struct mcpx_err *err)
{
	struct scmp_arg_cmp cmp = {0};
	int rc;

	if (r->arg < 0) {
		rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(r->err), r->nr, 0, NULL);
	} else {
		cmp.arg = (unsigned)r->arg;
		cmp.op = r->op;
		cmp.datum_a = r->a;
		cmp.datum_b = r->b;
		rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(r->err), r->nr, 1, &cmp);
	}
	/* -EDOM: the syscall does not exist on this architecture, so there is
	 * nothing to deny (iopl on arm64, for instance). */
	if (rc == -EDOM)
		return 0;
	if (rc < 0)
		return mcpx_err_set(err, -rc, "seccomp: rule for %s: %s", r->name, strerror(-rc));
	return 0;
}

/* Thread ids of the server right now, from /proc/self/task. kill(tid) on a
 * non-leader thread signals the whole thread group, so each one is a target. */
static size_t server_tids(pid_t server_pid, uint32_t *tids, size_t cap)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < cap) {
		long tid = strtol(de->d_name, NULL, 10);

		if (tid > 0 && tid != server_pid)
			tids[n++] = (uint32_t)tid;
	}
	closedir(d);
	return n;
}

static int add_signal_target(scmp_filter_ctx ctx, const struct signal_rule *r, uint32_t pid,
                             struct mcpx_err *err)
{
	struct scmp_arg_cmp cmp = {
	    .arg = (unsigned)r->arg,
	    .op = SCMP_CMP_MASKED_EQ,
	    .datum_a = 0xffffffffULL,
	    .datum_b = pid,
	};
	int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), r->nr, 1, &cmp);

	if (rc < 0)
		return mcpx_err_set(err, -rc, "seccomp: signal rule for %s(%d): %s", r->name,
		                    (int)pid, strerror(-rc));
	return 0;
}

static int add_signal_rules(scmp_filter_ctx ctx, pid_t server_pid, struct mcpx_err *err)
{
	uint32_t tids[MAX_SERVER_TIDS];
	size_t ntids = server_tids(server_pid, tids, MAX_SERVER_TIDS);
	pid_t pgrp = getpgrp();
	size_t i, t;
	int rc;

	for (i = 0; i < sizeof(signal_rules) / sizeof(signal_rules[0]); i++) {
		const struct signal_rule *r = &signal_rules[i];

		rc = 0;
		if (!rc && (r->targets & TGT_ALL))
			rc = add_signal_target(ctx, r, (uint32_t)-1, err);
		if (!rc && (r->targets & TGT_SERVER))
			rc = add_signal_target(ctx, r, (uint32_t)server_pid, err);
		if (!rc && (r->targets & TGT_SERVER_GRP))
			rc = add_signal_target(ctx, r, (uint32_t)-server_pid, err);
		if (!rc && (r->targets & TGT_SERVER_GRP) && pgrp > 1 && pgrp != server_pid)
			rc = add_signal_target(ctx, r, (uint32_t)-pgrp, err);
		for (t = 0; !rc && (r->targets & TGT_THREADS) && t < ntids; t++)
			rc = add_signal_target(ctx, r, tids[t], err);
		if (rc)
			return rc;
	}
	return 0;
}

/* libseccomp 2.5.4 has no export-to-memory call, so the program goes through
 * a memfd, as flatpak does before handing it to bwrap. */
static int export_bpf(scmp_filter_ctx ctx, struct sock_fprog *out, struct mcpx_err *err)
{
	struct sock_filter *insns = NULL;
	off_t size;
	size_t got = 0;
	int fd, rc;

	fd = memfd_create("mcpx-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return mcpx_err_set(err, errno, "seccomp: memfd_create: %s", strerror(errno));
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0) {
		rc = mcpx_err_set(err, -rc, "seccomp: export: %s", strerror(-rc));
		goto out;
	}
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) ||
	    size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS) {
		rc = mcpx_err_set(err, EINVAL, "seccomp: exported program has %lld bytes",
		                  (long long)size);
		goto out;
	}
	insns = malloc((size_t)size);
	if (!insns) {
		rc = mcpx_err_set(err, ENOMEM, "seccomp: out of memory");
		goto out;
	}
	while (got < (size_t)size) {
		ssize_t n = pread(fd, (char *)insns + got, (size_t)size - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = mcpx_err_set(err, n < 0 ? errno : EIO,
			                  "seccomp: reading export failed");
			goto out;
		}
		got += (size_t)n;
	}
	out->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
	out->filter = insns;
	insns = NULL;
	rc = 0;
out:
	free(insns);
	close(fd);
	return rc;
}

/* The libseccomp action for a foreign architecture's syscalls. libseccomp
 * accepts a process kill only at API level 3, which it detects through
 * SECCOMP_GET_ACTION_AVAIL; where that query is missing but the probe saw
 * a process kill end every thread, the level is raised to what was seen
 * (this program only exports the filter, so no other use of the level
 * follows). */
static int badarch_action(enum mcpx_seccomp_kill k, uint32_t *act)
{
	switch (k) {
	case MCPX_SECCOMP_KILL_PROCESS:
		if (seccomp_api_get() < 3 && seccomp_api_set(3) < 0)
			return -EINVAL;
		*act = SCMP_ACT_KILL_PROCESS;
		return 0;
	case MCPX_SECCOMP_KILL_THREAD:
		*act = SCMP_ACT_KILL_THREAD;
		return 0;
	case MCPX_SECCOMP_KILL_TRAP:
		*act = SCMP_ACT_TRAP;
		return 0;
	default:
		return -EINVAL;
	}
}

int mcpx_seccomp_policy_build(pid_t server_pid, enum mcpx_seccomp_variant variant,
			      enum mcpx_seccomp_kill badarch, struct sock_fprog *out,
			      struct mcpx_err *err)
{
	scmp_filter_ctx ctx;
	uint32_t act = 0;
	size_t i;
	int rc;

	out->len = 0;
	out->filter = NULL;
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return mcpx_err_set(err, ENOMEM, "seccomp: seccomp_init failed");

	/* Only the native architecture is in the filter; anything else (i386
	 * int 0x80 with its socketcall multiplexer, x32) has its own syscall
	 * table that the rules above do not describe, so it never runs. */
	rc = badarch_action(badarch, &act);
	if (!rc)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, act);
	if (rc < 0) {
		rc = mcpx_err_set(err, -rc, "seccomp: bad-arch action %s: %s",
				  mcpx_seccomp_kill_name(badarch), strerror(-rc));
		goto out;
	}
	for (i = 0; i < sizeof(deny_rules) / sizeof(deny_rules[0]); i++) {
		if (deny_rules[i].run_only && variant == MCPX_SECCOMP_ZYGOTE)
			continue;
		rc = add_deny_rule(ctx, &deny_rules[i], err);
		if (rc)
			goto out;
	}
	/* Newer than libseccomp's syscall table, so added by number. */
	rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), MCPX_NR_OPEN_TREE_ATTR, 0, NULL);
	if (rc < 0 && rc != -EDOM) {
		rc = mcpx_err_set(err, -rc, "seccomp: rule for open_tree_attr: %s", strerror(-rc));
		goto out;
	}
	rc = add_signal_rules(ctx, server_pid, err);
	if (!rc)
		rc = export_bpf(ctx, out, err);
out:
	seccomp_release(ctx);
	return rc;
}

void mcpx_seccomp_policy_free(struct sock_fprog *prog)
{
	free(prog->filter);
	prog->filter = NULL;
	prog->len = 0;
}
