/*
 * sandbox.c - the sandbox's start-up: what the kernel offers, the paths,
 * the zygote binary and the limits every run gets.
 *
 * What it does: at start-up it makes the server non-dumpable (same-uid code
 * cannot read its /proc files) and a child subreaper (orphans of a run come
 * back to us instead of init), probes Landlock and seccomp and compiles the
 * filter once, and guards the directories above the workdirs that a run
 * could change the metadata of (dirguard.c). It finds and checks the warm
 * interpreter's binary, computes a run's rlimits, says what a run may read
 * and describes the active layers. It creates the reaper's state for this
 * server (struct mcpx_reaper) and frees it with the rest.
 *
 * What it does not do: start a run (spawn.c), kill or reap one (reaper.c),
 * remove what it left (cleanup.c), watch fds or enforce wall-clock time (the
 * executor), or know anything about MCP.
 */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "dirguard.h"
#include "exit_watch.h"
#include "fdutil.h"
#include "fs_view.h"
#include "landlock.h"
#include "log.h"
#include "reach.h"
#include "reaper.h"
#include "runner.h"
#include "seccomp_policy.h"

/* ---- start-up ---------------------------------------------------------- */

/* Landlock lets runs read only the runtime's directories. An interpreter
 * that lives elsewhere (/opt/python/bin/python3) brings its prefix along:
 * the parent of its bin directory, resolved through symlinks. */
static void set_runtime_root(struct mcpx_sandbox *sb)
{
	static const char *const std_roots[] = {"/usr/", "/bin/", "/sbin/", "/lib"};
	char real[PATH_MAX], *slash;

	sb->runtime_root[0] = '\0';
	if (!realpath(sb->python, real))
		return;
	for (size_t i = 0; i < sizeof(std_roots) / sizeof(std_roots[0]); i++)
		if (strncmp(real, std_roots[i], strlen(std_roots[i])) == 0)
			return;
	for (int up = 0; up < 2; up++) {
		slash = strrchr(real, '/');
		if (!slash || slash == real)
			return;
		*slash = '\0';
	}
	snprintf(sb->runtime_root, sizeof(sb->runtime_root), "%s", real);
}

/* Guards the workdir base and its ancestors that a run could change the
 * metadata of (dirguard.c); logs which, since each costs a repair per run. */
static int guard_base(struct mcpx_sandbox *sb, struct mcpx_err *err)
{
	int rc;

	sb->guards = malloc(sizeof(*sb->guards));
	if (!sb->guards)
		return mcpx_err_set(err, ENOMEM, "sandbox: out of memory");
	mcpx_dirguards_init(sb->guards);
	rc = mcpx_dirguards_add_chain(sb->guards, sb->workdir_base, sb->run_uid, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < sb->guards->n; i++)
		mcpx_info("sandbox: %s can be changed by uid %u; it is put back before every run",
			  sb->guards->g[i].path, (unsigned)sb->run_uid);
	return 0;
}

/* Checks and stores the paths; the base in its canonical form, since the
 * guards and Landlock work on what the path resolves to. */
static int set_paths(struct mcpx_sandbox *sb, const char *python, const char *workdir_base,
		     struct mcpx_err *err)
{
	char real[PATH_MAX];
	struct stat st;

	if (!python || python[0] != '/')
		return mcpx_err_set(err, EINVAL, "python must be an absolute path");
	if (!workdir_base || workdir_base[0] != '/')
		return mcpx_err_set(err, EINVAL, "workdir base must be an absolute path");
	if (strlen(python) >= sizeof(sb->python) || strlen(workdir_base) > MCPX_WORKDIR_BASE_MAX)
		return mcpx_err_set(err, ENAMETOOLONG, "python or workdir base path too long");
	if (access(python, X_OK) < 0)
		return mcpx_err_set(err, errno, "python %s is not executable: %s", python,
		                    strerror(errno));
	if (stat(workdir_base, &st) < 0 || !S_ISDIR(st.st_mode) || !realpath(workdir_base, real))
		return mcpx_err_set(err, errno ? errno : ENOTDIR,
		                    "workdir base %s is not a directory", workdir_base);
	if (strlen(real) >= sizeof(sb->workdir_base) - 64)
		return mcpx_err_set(err, ENAMETOOLONG, "workdir base path too long");
	sb->runner = mcpx_runner_cold();
	if (!sb->runner)
		return mcpx_err_set(err, ENOMEM, "out of memory building the run's runner");
	strcpy(sb->python, python);
	strcpy(sb->workdir_base, real);
	return 0;
}

/* A cold run execs the interpreter by path as the run uid, and the
 * interpreter opens its standard library by path: it must be within that
 * uid's reach, not only the server's (a pyenv under root's 0700 home is
 * not). No descriptor can stand in for a whole installation, so this is a
 * refusal that names what to change. */
static int python_reachable(const struct mcpx_sandbox *sb, struct mcpx_err *err)
{
	char real[PATH_MAX], why[PATH_MAX + 128];

	if (!sb->layers.uid_drop || !realpath(sb->python, real))
		return 0;
	if (mcpx_reach_dirs(real, sb->run_uid, sb->run_gid, why, sizeof(why)) < 0)
		return mcpx_err_set(err, EACCES,
				    "python %s cannot be run by the runs: %s; set MCP_EXEC_PYTHON to "
				    "an interpreter every uid can reach (e.g. /usr/bin/python3)",
				    sb->python, why);
	return 0;
}

/* gVisor's procfs serves /proc/<pid>/environ to every process, whatever
 * the owner's uid and dumpable flag (mode 0444, measured with Debian's
 * runsc 2022-12 and 2024-07), so a run could read the server's
 * environment. What that file shows is the block the kernel copied at
 * exec, not environ: so the environment moves to the heap (getenv and
 * setenv keep working on the copy) and the block is zeroed. Secrets given
 * through variables were already wiped there by config.c; this takes the
 * rest (addresses, names, whatever else a pod's environment holds). Once
 * per process: a second sandbox finds it done. */
static int hide_environment(void)
{
	static bool done;
	char **copy, **old = environ;
	size_t n = 0, i;

	if (done)
		return 0;
	while (old[n])
		n++;
	copy = calloc(n + 1, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		copy[i] = strdup(old[i]);
		if (!copy[i]) {
			while (i > 0)
				free(copy[--i]);
			free(copy);
			return -ENOMEM;
		}
	}
	environ = copy;
	for (i = 0; i < n; i++)
		explicit_bzero(old[i], strlen(old[i]));
	done = true;
	return 0;
}

/* Whether this kernel lets a process set RLIMIT_MSGQUEUE: setting it to
 * its own value changes nothing where it works. */
static bool msgqueue_settable(void)
{
	struct rlimit rl;

	return getrlimit(RLIMIT_MSGQUEUE, &rl) == 0 && setrlimit(RLIMIT_MSGQUEUE, &rl) == 0;
}

/* seccomp is judged by what a filter does in a throwaway child
 * (seccomp_probe.c), not by a query: then both filters are compiled, with
 * the strongest kill action seen to act for foreign ABIs. A filter that
 * does not act, or no action that stops a call, leaves the layer off (the
 * caller refuses to start without it). */
static int start_seccomp(struct mcpx_sandbox *sb, struct mcpx_err *err)
{
	struct mcpx_seccomp_support sup;
	int rc;

	mcpx_seccomp_probe(&sup);
	if (!sup.filter || sup.kill == MCPX_SECCOMP_KILL_NONE)
		return 0;
	rc = mcpx_seccomp_policy_build(sb->server_pid, MCPX_SECCOMP_RUN, sup.kill, &sb->filter,
				       err);
	if (!rc)
		rc = mcpx_seccomp_policy_build(sb->server_pid, MCPX_SECCOMP_ZYGOTE, sup.kill,
					       &sb->zygote_filter, err);
	if (rc)
		return rc;
	sb->layers.seccomp = true;
	sb->layers.seccomp_kill = (int)sup.kill;
	sb->layers.seccomp_stacks = sup.stacks;
	return 0;
}

/* The layers that confine a run's files: Landlock as the kernel offers
 * it, and without it (gVisor) a filesystem view of each run's own, which
 * stands in for its file rules where the kernel lets one be made. */
static void set_file_layers(struct mcpx_sandbox *sb)
{
	sb->layers.landlock_abi = mcpx_landlock_abi();
	sb->layers.landlock = sb->layers.landlock_abi > 0;
	sb->layers.landlock_net = sb->layers.landlock_abi >= 4;
	sb->layers.landlock_scope = sb->layers.landlock_abi >= 6;
	if (!sb->layers.landlock)
		sb->layers.fs_view =
		    mcpx_fs_view_probe(sb->workdir_base, sb->layers.uid_drop, sb->run_uid,
		                       sb->run_gid, sb->fs_view_why, sizeof(sb->fs_view_why)) == 0;
}

int mcpx_sandbox_init(struct mcpx_sandbox *sb, const char *python, const char *workdir_base,
                      struct mcpx_err *err)
{
	int rc;

	memset(sb, 0, sizeof(*sb));
	sb->zygote_fd = -1;
	rc = set_paths(sb, python, workdir_base, err);
	if (rc)
		return rc;
	set_runtime_root(sb);
	sb->reaper = mcpx_reaper_new();
	if (!sb->reaper)
		return mcpx_err_set(err, ENOMEM, "sandbox: out of memory");
	/* Python until mcpx_sandbox_find_languages proves the others. */
	sb->langs.rt[MCPX_LANG_PYTHON].available = true;
	strcpy(sb->langs.rt[MCPX_LANG_PYTHON].path, sb->python);
	strcpy(sb->langs.rt[MCPX_LANG_PYTHON].root, sb->runtime_root);
	sb->langs.mask = 1u << MCPX_LANG_PYTHON;
	sb->server_pid = getpid();

	/* Without this, same-uid run code reads /proc/<server>/environ and
	 * maps (measured in the pod simulation). */
	sb->layers.dumpable_off = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0;
	sb->layers.environ_hidden = hide_environment() == 0;
	/* Orphans of a run come back to us, so the sweep can find them. */
	sb->layers.subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
	sb->layers.no_new_privs = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) >= 0;
	sb->layers.rlimits = true;
	sb->layers.msgqueue_limit = msgqueue_settable();
	sb->layers.uid_drop = geteuid() == 0;
	sb->run_uid = sb->layers.uid_drop ? MCPX_SANDBOX_UID : geteuid();
	sb->run_gid = sb->layers.uid_drop ? (gid_t)(MCPX_SANDBOX_GID_BASE + (unsigned)getpid())
	                                  : getegid();
	rc = python_reachable(sb, err);
	if (!rc)
		rc = guard_base(sb, err);
	if (rc) {
		mcpx_sandbox_free(sb);
		return rc;
	}

	set_file_layers(sb);

	rc = start_seccomp(sb, err);
	if (rc) {
		mcpx_sandbox_free(sb);
		return rc;
	}
	sb->layers.pidfd = mcpx_exit_watch_pidfd();
	mcpx_sandbox_set_runtime(sb, MCPX_RUNTIME_AUTO);
	return 0;
}

/* The filters name the server's threads by id (kill(tid) of any thread
 * signals the whole server; without Landlock's signal scope, and with the
 * pod's one uid, nothing else stops it). Threads started after
 * mcpx_sandbox_init (worker threads) are named by rebuilding both filters
 * once they exist, before the first zygote or run receives one. */
int mcpx_sandbox_refresh_signal_rules(struct mcpx_sandbox *sb, struct mcpx_err *err)
{
	struct sock_fprog run = {0}, zygote = {0};
	enum mcpx_seccomp_kill kill;
	int rc;

	if (!sb->layers.seccomp)
		return 0;
	kill = (enum mcpx_seccomp_kill)sb->layers.seccomp_kill;
	rc = mcpx_seccomp_policy_build(sb->server_pid, MCPX_SECCOMP_RUN, kill, &run, err);
	if (!rc)
		rc = mcpx_seccomp_policy_build(sb->server_pid, MCPX_SECCOMP_ZYGOTE, kill, &zygote,
					       err);
	if (rc) {
		mcpx_seccomp_policy_free(&run);
		mcpx_seccomp_policy_free(&zygote);
		return rc;
	}
	mcpx_seccomp_policy_free(&sb->filter);
	mcpx_seccomp_policy_free(&sb->zygote_filter);
	sb->filter = run;
	sb->zygote_filter = zygote;
	return 0;
}

#ifndef MCPX_ZYGOTE_PYTHON
#error "MCPX_ZYGOTE_PYTHON: the interpreter mcp-exec-zygote embeds (CMakeLists.txt)"
#endif

/* The binary next to the running one: found once, at start-up, so moving
 * files later changes nothing. */
static int zygote_next_to_self(char *out, size_t len, struct mcpx_err *err)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0)
		return mcpx_err_set(err, errno ? errno : EIO, "cannot resolve /proc/self/exe: %s",
				    strerror(errno ? errno : EIO));
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return mcpx_err_set(err, ENOENT, "cannot resolve /proc/self/exe");
	*slash = '\0';
	if ((size_t)snprintf(out, len, "%.*s/mcp-exec-zygote", (int)(len - 20), self) >= len)
		return mcpx_err_set(err, ENAMETOOLONG, "server path too long");
	return 0;
}

int mcpx_sandbox_use_zygote(struct mcpx_sandbox *sb, const char *path, struct mcpx_err *err)
{
	char found[PATH_MAX], real[PATH_MAX], py[PATH_MAX], embedded[PATH_MAX];
	char why[PATH_MAX + 128];
	struct stat st;
	int rc, fd;

	sb->zygote[0] = '\0';
	mcpx_close_fd(&sb->zygote_fd);
	if (!path) {
		rc = zygote_next_to_self(found, sizeof(found), err);
		if (rc)
			return rc;
		path = found;
	}
	if (!realpath(path, real) || stat(real, &st) < 0 || !S_ISREG(st.st_mode) ||
	    access(real, X_OK) < 0)
		return mcpx_err_set(err, errno ? errno : ENOEXEC, "%s is not an executable file: %s",
				    path, strerror(errno ? errno : ENOEXEC));
	if (strlen(real) >= sizeof(sb->zygote))
		return mcpx_err_set(err, ENAMETOOLONG, "%s: path too long", real);
	/* A warm run must be the interpreter a cold run execs. */
	if (!realpath(sb->python, py) || !realpath(MCPX_ZYGOTE_PYTHON, embedded) ||
	    strcmp(py, embedded) != 0)
		return mcpx_err_set(err, EINVAL, "%s embeds %s, but the configured python is %s",
				    real, MCPX_ZYGOTE_PYTHON, sb->python);
	/* Opened now, by the server: the run uid may not be able to look the
	 * path up (a build tree in root's 0700 home), but it can execute the
	 * file through this descriptor when the file's own mode allows it. */
	fd = open(real, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return mcpx_err_set(err, errno, "cannot open %s: %s", real, strerror(errno));
	if (sb->layers.uid_drop &&
	    mcpx_reach_file(fd, real, sb->run_uid, sb->run_gid, MCPX_REACH_EXEC, why, sizeof(why)) < 0) {
		close(fd);
		return mcpx_err_set(err, EACCES, "%s", why);
	}
	sb->zygote_fd = fd;
	strcpy(sb->zygote, real);
	return 0;
}

void mcpx_sandbox_free(struct mcpx_sandbox *sb)
{
	mcpx_close_fd(&sb->zygote_fd);
	mcpx_seccomp_policy_free(&sb->filter);
	mcpx_seccomp_policy_free(&sb->zygote_filter);
	if (sb->guards) {
		mcpx_dirguards_close(sb->guards);
		free(sb->guards);
		sb->guards = NULL;
	}
	mcpx_reaper_free(sb->reaper);
	sb->reaper = NULL;
}

static bool beneath(const char *path, const char *root)
{
	size_t n = strlen(root);

	while (n > 1 && root[n - 1] == '/')
		n--;
	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/' || n == 1);
}

bool mcpx_sandbox_files_confined(const struct mcpx_sandbox *sb)
{
	return sb->layers.landlock || sb->layers.fs_view;
}

bool mcpx_sandbox_run_may_read(const struct mcpx_sandbox *sb, const char *path)
{
	struct mcpx_landlock_plan plan;
	/* The view is made of the rules of any ABI's plan (fs_view.c). */
	int abi = sb->layers.landlock ? sb->layers.landlock_abi : 1;

	if (!mcpx_sandbox_files_confined(sb))
		return true;
	if (beneath(path, sb->workdir_base))
		return true;
	struct mcpx_landlock_exe exe = {.path = sb->zygote, .fd = -1};

	/* Each language's runs get their runtime's own prefix. */
	for (int l = 0; l < MCPX_LANG_COUNT; l++) {
		const struct mcpx_runtime *rt = &sb->langs.rt[l];

		if (!rt->available)
			continue;
		mcpx_landlock_plan(abi, NULL, rt->root[0] ? rt->root : NULL,
		                   sb->zygote[0] ? &exe : NULL, &plan);
		for (size_t i = 0; i < plan.n_rules; i++)
			if (plan.rules[i].path &&
			    (plan.rules[i].rights & LANDLOCK_ACCESS_FS_READ_FILE) &&
			    beneath(path, plan.rules[i].path))
				return true;
	}
	return false;
}

void mcpx_sandbox_describe(const struct mcpx_sandbox *sb, char *buf, size_t len)
{
	const struct mcpx_sandbox_layers *l = &sb->layers;
	char ll[64], sc[48];

	if (l->landlock)
		snprintf(ll, sizeof(ll), "landlock(abi=%d%s%s)", l->landlock_abi,
		         l->landlock_net ? ",net" : "", l->landlock_scope ? ",scope" : "");
	else
		snprintf(ll, sizeof(ll), "landlock=off%s", l->fs_view ? " fs-view" : "");
	/* The foreign-ABI action only where it is not the full process kill. */
	if (l->seccomp && l->seccomp_kill != MCPX_SECCOMP_KILL_PROCESS)
		snprintf(sc, sizeof(sc), "seccomp(foreign-abi=%s)",
			 mcpx_seccomp_kill_name((enum mcpx_seccomp_kill)l->seccomp_kill));
	else
		snprintf(sc, sizeof(sc), "%s", l->seccomp ? "seccomp" : "seccomp=off");
	snprintf(buf, len, "%s %s uid=%u%s %s %s %s %s%s runtime=%s", sc, ll,
	         (unsigned)sb->run_uid, l->uid_drop ? "(dropped-from-root)" : "(same-as-server)",
	         l->no_new_privs ? "no_new_privs" : "no_new_privs=off",
	         l->rlimits ? "rlimits" : "rlimits=off",
	         l->subreaper ? "subreaper" : "subreaper=off",
	         l->dumpable_off ? "nondumpable" : "dumpable",
	         l->pidfd ? "" : " exit-watch=threads", mcpx_runtime_name(sb->runtime));
}

/* ---- limits ------------------------------------------------------------- */

/* Adds one limit, never above the current hard limit: the child sets its
 * limits after dropping privileges, when it can only lower them. */
static void add_rlimit(struct mcpx_rlimit *out, size_t *n, int resource, rlim_t soft, rlim_t hard)
{
	struct rlimit cur;

	if (*n >= MCPX_MAX_RLIMITS)
		return;
	if (getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY) {
		if (hard > cur.rlim_max)
			hard = cur.rlim_max;
		if (soft > hard)
			soft = hard;
	}
	out[*n].resource = resource;
	out[*n].lim.rlim_cur = soft;
	out[*n].lim.rlim_max = hard;
	(*n)++;
}

size_t mcpx_sandbox_rlimits(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
                            struct mcpx_rlimit out[MCPX_MAX_RLIMITS])
{
	size_t n = 0;

	add_rlimit(out, &n, RLIMIT_CORE, 0, 0);
	if (lim->memory_mb) {
		rlim_t as = ((rlim_t)lim->memory_mb << 20) + (rlim_t)lim->as_inherited;

		add_rlimit(out, &n, RLIMIT_AS, as, lim->as_hard_open ? RLIM_INFINITY : as);
	}
	if (lim->cpu_s)
		add_rlimit(out, &n, RLIMIT_CPU, lim->cpu_s, (rlim_t)lim->cpu_s + 1);
	if (lim->file_mb)
		add_rlimit(out, &n, RLIMIT_FSIZE, (rlim_t)lim->file_mb << 20,
		           (rlim_t)lim->file_mb << 20);
	if (lim->open_files)
		add_rlimit(out, &n, RLIMIT_NOFILE, lim->open_files, lim->open_files);
	if (lim->max_procs) {
		rlim_t procs =
		    (rlim_t)mcpx_reaper_uid_tasks(sb->reaper, sb->run_uid, lim->uncounted_pgrp) +
		    lim->max_procs;

		add_rlimit(out, &n, RLIMIT_NPROC, procs, procs);
	}
	if (sb->layers.msgqueue_limit)
		add_rlimit(out, &n, RLIMIT_MSGQUEUE, 0, 0);
	add_rlimit(out, &n, RLIMIT_MEMLOCK, 0, 0);
	return n;
}
