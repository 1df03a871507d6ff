/*
 * sandbox.c - the parent side of the sandbox: start-up probe, spawn, kill,
 * reap and clean up one run.
 *
 * What it does: at start-up it makes the server non-dumpable (same-uid code
 * cannot read its /proc files) and a child subreaper (orphans of a run come
 * back to us instead of init), probes Landlock and seccomp and compiles the
 * filter once, and guards the directories above the workdirs that a run
 * could change the metadata of (dirguard.c). Per run it puts those back,
 * creates the workdir, writes main.py, prepares every
 * string and limit the child needs, forks, and waits on a close-on-exec error
 * pipe until the child has either exec'd the interpreter or reported the step
 * that failed. Killing is by process group (the child called setsid and
 * seccomp keeps it there) plus a /proc sweep for anything re-parented to us;
 * reaping waits only for pids it found itself.
 *
 * What it does not do: watch fds or enforce wall-clock time (the executor
 * does, with the returned pipes and pidfd), or know anything about MCP.
 *
 * Bookkeeping: a small registry of live run leaders, guarded by a mutex held
 * across fork, tells the /proc sweep which children of the server are run
 * leaders (never touched by another run's sweep) and which are orphans.
 */
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/landlock.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "dirguard.h"
#include "fdutil.h"
#include "landlock.h"
#include "log.h"
#include "procstat.h"
#include "reach.h"
#include "reaper.h"
#include "runner.h"
#include "sandbox_child.h"
#include "seccomp_policy.h"
#include "workdir.h"

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
	/* Orphans of a run come back to us, so the sweep can find them. */
	sb->layers.subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
	sb->layers.no_new_privs = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) >= 0;
	sb->layers.rlimits = true;
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

	sb->layers.landlock_abi = mcpx_landlock_abi();
	sb->layers.landlock = sb->layers.landlock_abi > 0;
	sb->layers.landlock_net = sb->layers.landlock_abi >= 4;
	sb->layers.landlock_scope = sb->layers.landlock_abi >= 6;

	if (mcpx_seccomp_available()) {
		rc = mcpx_seccomp_policy_build(sb->server_pid, MCPX_SECCOMP_RUN, &sb->filter, err);
		if (!rc)
			rc = mcpx_seccomp_policy_build(sb->server_pid, MCPX_SECCOMP_ZYGOTE,
						       &sb->zygote_filter, err);
		if (rc) {
			mcpx_sandbox_free(sb);
			return rc;
		}
		sb->layers.seccomp = true;
	}
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
	int rc;

	if (!sb->layers.seccomp)
		return 0;
	rc = mcpx_seccomp_policy_build(sb->server_pid, MCPX_SECCOMP_RUN, &run, err);
	if (!rc)
		rc = mcpx_seccomp_policy_build(sb->server_pid, MCPX_SECCOMP_ZYGOTE, &zygote, err);
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

bool mcpx_sandbox_run_may_read(const struct mcpx_sandbox *sb, const char *path)
{
	struct mcpx_landlock_plan plan;

	if (!sb->layers.landlock)
		return true;
	if (beneath(path, sb->workdir_base))
		return true;
	struct mcpx_landlock_exe exe = {.path = sb->zygote, .fd = -1};

	/* Each language's runs get their runtime's own prefix. */
	for (int l = 0; l < MCPX_LANG_COUNT; l++) {
		const struct mcpx_runtime *rt = &sb->langs.rt[l];

		if (!rt->available)
			continue;
		mcpx_landlock_plan(sb->layers.landlock_abi, NULL, rt->root[0] ? rt->root : NULL,
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
	char ll[64];

	if (l->landlock)
		snprintf(ll, sizeof(ll), "landlock(abi=%d%s%s)", l->landlock_abi,
		         l->landlock_net ? ",net" : "", l->landlock_scope ? ",scope" : "");
	else
		snprintf(ll, sizeof(ll), "landlock=off");
	snprintf(buf, len, "%s %s uid=%u%s %s %s %s %s", l->seccomp ? "seccomp" : "seccomp=off", ll,
	         (unsigned)sb->run_uid, l->uid_drop ? "(dropped-from-root)" : "(same-as-server)",
	         l->no_new_privs ? "no_new_privs" : "no_new_privs=off",
	         l->rlimits ? "rlimits" : "rlimits=off",
	         l->subreaper ? "subreaper" : "subreaper=off",
	         l->dumpable_off ? "nondumpable" : "dumpable");
}

/* ---- spawn -------------------------------------------------------------- */

/* Everything the child reads lives here, filled before fork. */
struct spawn_buf {
	struct mcpx_child_args args;
	char home[4200], tmpdir[4200], mplconfig[4200];
	char *envp[16];
	char *argv[8];
	char scratch[64]; /* an argument built for this run (language.c) */
};

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
	add_rlimit(out, &n, RLIMIT_MSGQUEUE, 0, 0);
	add_rlimit(out, &n, RLIMIT_MEMLOCK, 0, 0);
	return n;
}

/* What a spawn starts: a run (code), a warm interpreter or the zygote (the
 * zygote binary in mode "once" or "serve", with a control fd for the
 * latter). */
struct spawn_what {
	const char *code;
	size_t code_len;
	const char *zygote_mode;
	const char *preload;
	int control_fd;
	const struct mcpx_workdir_fill *fill; /* a run's: may be NULL */
	enum mcpx_lang lang;                  /* a run's language; python for the rest */
};

static void prepare_exec(struct spawn_buf *b, const struct mcpx_sandbox *sb, const char *wd,
                         const struct spawn_what *what, const struct mcpx_limits *lim)
{
	size_t i = 0;

	snprintf(b->home, sizeof(b->home), "HOME=%s", wd);
	snprintf(b->tmpdir, sizeof(b->tmpdir), "TMPDIR=%s", wd);
	snprintf(b->mplconfig, sizeof(b->mplconfig), "MPLCONFIGDIR=%s", wd);
	/* The complete environment: nothing is inherited from the server. A
	 * zygote's child replaces each value naming the zygote's workdir with
	 * its own (runner.py, _mcpx_fresh). */
	b->envp[i++] = (char *)"PATH=/usr/bin:/bin";
	b->envp[i++] = b->home;
	b->envp[i++] = b->tmpdir;
	b->envp[i++] = (char *)"LANG=C.UTF-8";
	b->envp[i++] = (char *)"PYTHONIOENCODING=utf-8";
	/* One BLAS/OpenMP thread: each extra OpenBLAS thread reserves ~140 MB
	 * of address space (RLIMIT_AS), and OpenBLAS spins at exit under a
	 * tight RLIMIT_AS with more than one. */
	b->envp[i++] = (char *)"OPENBLAS_NUM_THREADS=1";
	b->envp[i++] = (char *)"OMP_NUM_THREADS=1";
	b->envp[i++] = (char *)"MKL_NUM_THREADS=1";
	/* glibc reserves 64 MiB of address space per malloc arena. */
	b->envp[i++] = (char *)"MALLOC_ARENA_MAX=2";
	b->envp[i++] = (char *)"MPLBACKEND=Agg";
	b->envp[i++] = b->mplconfig;
	/* Where the run's end of the broker channel is (python/mcpx.py). */
	_Static_assert(MCPX_SANDBOX_CHANNEL_FD == 4, "the variable below names fd 4");
	if (lim->channel)
		b->envp[i++] = (char *)MCPX_SANDBOX_CHANNEL_ENV "=4";
	b->envp[i] = NULL;

	if (what->zygote_mode) {
		/* A warm interpreter: the zygote binary embeds the interpreter
		 * the cold path execs and preloads the modules itself. */
		b->args.exec_path = sb->zygote;
		b->argv[0] = (char *)sb->zygote;
		b->argv[1] = (char *)what->zygote_mode;
		b->argv[2] = (char *)sb->python;
		b->argv[3] = (char *)what->preload;
		b->argv[4] = NULL;
		return;
	}
	/* A cold run: its language's runtime on its file (language.c). */
	b->args.exec_path =
	    mcpx_lang_argv(sb, what->lang, lim, b->argv, b->scratch, sizeof(b->scratch));
}

int mcpx_sandbox_child_error(int code, struct mcpx_err *err)
{
	int step = code >> 16, e = code & 0xffff;

	if (!e)
		e = EIO;
	return mcpx_err_set(err, e, "sandbox setup failed at step %s: %s",
			    mcpx_sandbox_child_step_name(step), strerror(e));
}

/* Reads the child's verdict: 0 when it closed the pipe without a word
 * (execve succeeded), else -errno with the failed step in err. */
static int read_verdict(int fd, struct mcpx_err *err)
{
	int code = 0;
	ssize_t n;

	do
		n = read(fd, &code, sizeof(code));
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return 0;
	if (n != (ssize_t)sizeof(code))
		return mcpx_err_set(err, EIO, "sandbox setup failed: unreadable error pipe");
	return mcpx_sandbox_child_error(code, err);
}

int mcpx_sandbox_await_setup(int errpipe, int timeout_ms, struct mcpx_err *err)
{
	struct pollfd pfd = {.fd = errpipe, .events = POLLIN};
	int r;

	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		r = mcpx_err_set(err, ETIMEDOUT, "sandbox setup failed: no verdict within %d ms",
				 timeout_ms);
	else
		r = read_verdict(errpipe, err);
	close(errpipe);
	return r;
}

int mcpx_sandbox_setup_verdict(struct mcpx_sandbox_proc *proc, struct mcpx_err *err)
{
	struct pollfd pfd = {.fd = proc->setup_fd, .events = POLLIN};
	int r = 0;

	if (proc->setup_fd < 0)
		return 0;
	if (poll(&pfd, 1, 0) == 1)
		r = read_verdict(proc->setup_fd, err);
	mcpx_close_fd(&proc->setup_fd);
	return r;
}

/* The pod case of the child's oom_score_adj step: once the child has exec'd
 * it is dumpable again and its /proc files belong to the shared uid, so the
 * parent can write them. The interpreter needs tens of milliseconds before
 * user code runs; this write lands well within that. The kernel closes the
 * close-on-exec error pipe (our sign that exec succeeded) just before it
 * makes the new image dumpable (fs/exec.c, begin_new_exec), so the file may
 * still be root's for a moment: EACCES is retried for up to 50 ms. */
#define OOM_OPEN_TRIES 500
#define OOM_OPEN_PAUSE_NS 100000L

/* Whether pid (our child) has exited and is not yet reaped: a task without
 * memory owns its /proc files as root for good (task_dump_owner), and has
 * nothing left for the OOM killer to choose. A run that ends within a few
 * milliseconds (bash `true`) gets there before this write. */
static bool has_exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

static int raise_oom_score_of(pid_t pid)
{
	struct timespec pause = {0, OOM_OPEN_PAUSE_NS};
	char path[64];
	ssize_t n;
	int fd = -1, rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)pid);
	for (int i = 0; i < OOM_OPEN_TRIES && fd < 0; i++) {
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 && errno != EACCES)
			return -errno;
		if (fd < 0 && has_exited(pid))
			return 0;
		if (fd < 0)
			nanosleep(&pause, NULL);
	}
	if (fd < 0)
		return -EACCES;
	n = write(fd, "1000", 4);
	if (n < 0)
		rc = -errno;
	else if (n != 4)
		rc = -EIO;
	close(fd);
	return rc;
}

void mcpx_sandbox_proc_reset(struct mcpx_sandbox_proc *proc)
{
	memset(proc, 0, sizeof(*proc));
	proc->pid = -1;
	proc->pidfd = -1;
	proc->stdin_fd = -1;
	proc->stdout_fd = -1;
	proc->stderr_fd = -1;
	proc->channel_fd = -1;
	proc->exit_fd = -1;
	proc->parent_fd = -1;
	proc->setup_fd = -1;
}

static int write_code(const struct mcpx_sandbox *sb, const struct mcpx_sandbox_proc *proc,
                      enum mcpx_lang lang, const char *code, size_t code_len, struct mcpx_err *err);

/* The run's workdir: the guarded directories above it put back first (a run
 * that failed to start because an earlier one changed them would be the
 * server's fault), then created, with main.py for a cold run. */
static int prepare_workdir(const struct mcpx_sandbox *sb, const struct spawn_what *what,
			   struct mcpx_sandbox_proc *proc, struct mcpx_err *err)
{
	int rc = mcpx_dirguards_repair(sb->guards, err);

	if (rc)
		return rc;
	rc = mcpx_workdir_create(sb->workdir_base, sb->layers.uid_drop, sb->run_uid, sb->run_gid,
	                         proc->workdir, sizeof(proc->workdir), &proc->parent_fd);
	if (rc)
		return mcpx_err_set(err, -rc, "sandbox: cannot create workdir in %s: %s",
				    sb->workdir_base, strerror(-rc));
	if (what->zygote_mode)
		return 0;
	rc = write_code(sb, proc, what->lang, what->code, what->code_len, err);
	if (!rc && what->fill)
		rc = what->fill->fn(what->fill->ctx, proc->workdir, err);
	return rc;
}

/* The descriptors of one spawn. For each pair [0] is the server's end and
 * [1] the child's, except in (stdin), where the child reads [0]. ep is the
 * close-on-exec error pipe; ch the run's broker channel, when it has one. */
struct spawn_fds {
	int in[2], out[2], errp[2], ep[2], ch[2];
};

static int open_fds(struct spawn_fds *f, bool channel, struct mcpx_err *err)
{
	if (pipe2(f->in, O_CLOEXEC) < 0 || pipe2(f->out, O_CLOEXEC) < 0 ||
	    pipe2(f->errp, O_CLOEXEC) < 0 || pipe2(f->ep, O_CLOEXEC) < 0)
		return mcpx_err_set(err, errno, "sandbox: pipe2: %s", strerror(errno));
	if (channel && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->ch) < 0)
		return mcpx_err_set(err, errno, "sandbox: socketpair: %s", strerror(errno));
	return 0;
}

/* After fork: the child has its copies. */
static void close_child_ends(struct spawn_fds *f)
{
	mcpx_close_fd(&f->in[0]);
	mcpx_close_fd(&f->out[1]);
	mcpx_close_fd(&f->errp[1]);
	mcpx_close_fd(&f->ep[1]);
	mcpx_close_fd(&f->ch[1]);
}

static void close_fds(struct spawn_fds *f)
{
	int *all = &f->in[0];

	for (size_t i = 0; i < sizeof(*f) / sizeof(int); i++)
		mcpx_close_fd(&all[i]);
}

/* Everything the child reads, filled before fork. */
static void fill_args(struct spawn_buf *b, const struct mcpx_sandbox *sb, const struct spawn_what *what,
		      const struct spawn_fds *f, const char *workdir)
{
	b->args.parent = getpid();
	b->args.stdin_fd = f->in[0];
	b->args.stdout_fd = f->out[1];
	b->args.stderr_fd = f->errp[1];
	b->args.errpipe_fd = f->ep[1];
	b->args.control_fd = f->ch[1] >= 0 ? f->ch[1] : what->control_fd;
	b->args.drop_uid = sb->layers.uid_drop;
	b->args.uid = sb->run_uid;
	b->args.gid = sb->run_gid;
	b->args.workdir = workdir;
	b->args.workdir_fd = -1;
	b->args.landlock_abi = sb->layers.landlock ? sb->layers.landlock_abi : 0;
	/* The prefix of this run's runtime when it lies outside the standard
	 * roots (a zygote's is Python's). */
	b->args.runtime_root =
	    sb->langs.rt[what->lang].root[0] ? sb->langs.rt[what->lang].root : NULL;
	/* Only the zygote's own exec needs its binary: a cold run's ruleset
	 * leaves it out. */
	b->args.exe_fd = what->zygote_mode ? sb->zygote_fd : -1;
	b->args.filter = !sb->layers.seccomp   ? NULL
			 : what->control_fd >= 0 ? &sb->zygote_filter
						 : &sb->filter;
	b->args.argv = b->argv;
	b->args.envp = b->envp;
}

/* In the new child: its setup, then the runtime (never returns). */
static void child_main(const void *arg)
{
	const struct spawn_buf *b = arg;

	mcpx_sandbox_child_exec(&b->args);
}

/* Forks the leader, registered before any sweep can see it (reaper.c).
 * Returns the pid, or -errno with err set. */
static pid_t fork_child(const struct spawn_buf *b, struct mcpx_err *err)
{
	return mcpx_leaders_fork(child_main, b, err);
}

/* The child's verdict, then the server's ends handed to proc. */
static int take_child(const struct mcpx_sandbox *sb, struct spawn_fds *f,
		      struct mcpx_sandbox_proc *proc, struct mcpx_err *err)
{
	int rc;

	/* Race-free: an unreaped child's pid cannot be recycled. */
	proc->pidfd = (int)syscall(__NR_pidfd_open, proc->pid, 0);
	if (proc->pidfd < 0)
		return mcpx_err_set(err, errno, "sandbox: pidfd_open: %s", strerror(errno));
	rc = read_verdict(f->ep[0], err);
	mcpx_close_fd(&f->ep[0]);
	if (rc)
		return rc;
	/* The zygote binary waits for this write before it turns non-dumpable
	 * (cmd/mcp-exec-zygote). */
	if (!sb->layers.uid_drop && (rc = raise_oom_score_of(proc->pid)) != 0)
		return mcpx_err_set(err, -rc, "sandbox setup failed at step oom_score_adj: %s",
				    strerror(-rc));
	if (mcpx_set_nonblock(f->in[1]) || mcpx_set_nonblock(f->out[0]) ||
	    mcpx_set_nonblock(f->errp[0]) || (f->ch[0] >= 0 && mcpx_set_nonblock(f->ch[0])))
		return mcpx_err_set(err, errno, "sandbox: O_NONBLOCK: %s", strerror(errno));
	proc->stdin_fd = f->in[1];
	proc->stdout_fd = f->out[0];
	proc->stderr_fd = f->errp[0];
	proc->channel_fd = f->ch[0];
	f->in[1] = f->out[0] = f->errp[0] = f->ch[0] = -1;
	return 0;
}

static int spawn(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
		 const struct spawn_what *what, struct mcpx_sandbox_proc *proc,
		 struct mcpx_err *err)
{
	struct spawn_fds f = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
	struct spawn_buf *b;
	int rc, st;

	mcpx_sandbox_proc_reset(proc);
	proc->run_uid = sb->run_uid;
	proc->run_gid = sb->run_gid;
	/* The zygote never runs code, so it never talks to the broker. */
	if (lim->channel && what->control_fd >= 0)
		return mcpx_err_set(err, EINVAL, "sandbox: a zygote gets no broker channel");
	b = calloc(1, sizeof(*b));
	if (!b)
		return mcpx_err_set(err, ENOMEM, "sandbox: out of memory");
	rc = prepare_workdir(sb, what, proc, err);
	if (rc || (rc = open_fds(&f, lim->channel, err)) < 0)
		goto fail;
	b->args.n_rlimits = (int)mcpx_sandbox_rlimits(sb, lim, b->args.rlimits);
	mcpx_lang_adjust_rlimits(what->lang, b->args.rlimits, b->args.n_rlimits);
	prepare_exec(b, sb, proc->workdir, what, lim);
	fill_args(b, sb, what, &f, proc->workdir);

	/* ctime of what the run creates is at or after this (same coarse
	 * clock the filesystem uses). */
	clock_gettime(CLOCK_REALTIME_COARSE, &proc->started);
	proc->pid = fork_child(b, err);
	if (proc->pid < 0) {
		rc = proc->pid;
		goto fail;
	}
	close_child_ends(&f);
	rc = take_child(sb, &f, proc, err);
	if (rc)
		goto fail;
	free(b);
	return 0;

fail:
	if (proc->pid > 0) {
		/* The child either exited with 127 or is killed here; either
		 * way it is reaped before we return. */
		(void)kill(proc->pid, SIGKILL);
		while (waitpid(proc->pid, &st, 0) < 0 && errno == EINTR)
			;
		mcpx_leaders_remove(proc->pid);
	}
	close_fds(&f);
	mcpx_close_fd(&proc->pidfd);
	if (proc->workdir[0])
		(void)mcpx_workdir_remove_in(proc->parent_fd, proc->workdir);
	mcpx_close_fd(&proc->parent_fd);
	proc->workdir[0] = '\0';
	proc->pid = -1;
	proc->started.tv_sec = 0;
	free(b);
	return rc < 0 ? rc : -EIO;
}

int mcpx_sandbox_spawn(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
		       const char *code, size_t code_len, struct mcpx_sandbox_proc *proc,
		       struct mcpx_err *err)
{
	return mcpx_sandbox_spawn_filled(sb, lim, code, code_len, NULL, proc, err);
}

int mcpx_sandbox_spawn_filled(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
			      const char *code, size_t code_len,
			      const struct mcpx_workdir_fill *fill, struct mcpx_sandbox_proc *proc,
			      struct mcpx_err *err)
{
	return mcpx_sandbox_spawn_lang(sb, lim, MCPX_LANG_PYTHON, code, code_len, fill, proc, err);
}

int mcpx_sandbox_spawn_lang(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
                            enum mcpx_lang lang, const char *code, size_t code_len,
                            const struct mcpx_workdir_fill *fill, struct mcpx_sandbox_proc *proc,
                            struct mcpx_err *err)
{
	struct spawn_what what = {
	    .code = code, .code_len = code_len, .control_fd = -1, .fill = fill, .lang = lang};

	if ((unsigned)lang >= MCPX_LANG_COUNT || !sb->langs.rt[lang].available) {
		mcpx_sandbox_proc_reset(proc);
		return mcpx_err_set(err, ENOEXEC, "sandbox: language %s is not available here",
		                    mcpx_lang_name(lang));
	}
	return spawn(sb, lim, &what, proc, err);
}

int mcpx_sandbox_spawn_warm(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
			    const char *preload, struct mcpx_sandbox_proc *proc,
			    struct mcpx_err *err)
{
	struct spawn_what what = {.zygote_mode = "once", .preload = preload, .control_fd = -1};

	if (!sb->zygote[0])
		return mcpx_err_set(err, ENOENT, "sandbox: no warm interpreter binary");
	return spawn(sb, lim, &what, proc, err);
}

static int write_code(const struct mcpx_sandbox *sb, const struct mcpx_sandbox_proc *proc,
                      enum mcpx_lang lang, const char *code, size_t code_len, struct mcpx_err *err)
{
	const char *name = mcpx_lang_main_file(lang);
	int rc = mcpx_workdir_write_file(proc->workdir, name, code, code_len, sb->layers.uid_drop,
	                                 sb->run_uid, sb->run_gid);

	if (rc)
		return mcpx_err_set(err, -rc, "sandbox: cannot write %s: %s", name, strerror(-rc));
	return 0;
}

int mcpx_sandbox_write_main(const struct mcpx_sandbox *sb, const struct mcpx_sandbox_proc *proc,
                            const char *code, size_t code_len, struct mcpx_err *err)
{
	return write_code(sb, proc, MCPX_LANG_PYTHON, code, code_len, err);
}

int mcpx_sandbox_spawn_zygote(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
			      const char *preload, int control_fd,
			      struct mcpx_sandbox_proc *proc, struct mcpx_err *err)
{
	struct spawn_what what = {.zygote_mode = "serve", .preload = preload, .control_fd = control_fd};

	if (!sb->zygote[0])
		return mcpx_err_set(err, ENOENT, "sandbox: no zygote binary");
	if (control_fd < 0)
		return mcpx_err_set(err, EBADF, "sandbox: the zygote needs a control socket");
	return spawn(sb, lim, &what, proc, err);
}

int mcpx_sandbox_adopt(struct mcpx_sandbox_proc *proc, pid_t pid, mcpx_reap_fn reaper,
		       void *reaper_ctx, struct mcpx_err *err)
{
	int rc;

	if (pid <= 0 || !reaper)
		return mcpx_err_set(err, EINVAL, "sandbox: nothing to adopt");
	proc->pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
	proc->exit_fd = proc->pidfd >= 0 ? (int)syscall(__NR_pidfd_open, pid, 0) : -1;
	if (proc->pidfd < 0 || proc->exit_fd < 0) {
		rc = mcpx_err_set(err, errno, "sandbox: pidfd_open(%d): %s", (int)pid,
				  strerror(errno));
		mcpx_close_fd(&proc->pidfd);
		mcpx_close_fd(&proc->exit_fd);
		return rc;
	}
	rc = mcpx_leaders_add(pid);
	if (rc) {
		mcpx_close_fd(&proc->pidfd);
		mcpx_close_fd(&proc->exit_fd);
		return mcpx_err_set(err, EAGAIN, "sandbox: too many live runs");
	}
	proc->pid = pid;
	proc->reaper = reaper;
	proc->reaper_ctx = reaper_ctx;
	clock_gettime(CLOCK_REALTIME_COARSE, &proc->started);
	return 0;
}

int mcpx_sandbox_workdir_open(const struct mcpx_sandbox_proc *proc)
{
	if (!proc->workdir[0])
		return -ENOENT;
	return mcpx_workdir_open_in(proc->parent_fd, proc->workdir);
}

size_t mcpx_sandbox_drain(struct mcpx_sandbox_proc *proc, char *out, size_t outlen, char *errbuf,
                          size_t errlen, long timeout_ms)
{
	struct timespec now;
	long deadline;
	int *fds[2] = {&proc->stdout_fd, &proc->stderr_fd};
	char *bufs[2] = {out, errbuf};
	size_t caps[2] = {outlen - 1, errbuf ? errlen - 1 : 0}, used[2] = {0, 0};
	char scratch[4096];
	int open_fds = 0;

	clock_gettime(CLOCK_MONOTONIC, &now);
	deadline = now.tv_sec * 1000L + now.tv_nsec / 1000000L + timeout_ms;
	open_fds = (*fds[0] >= 0) + (*fds[1] >= 0);
	while (open_fds > 0) {
		struct pollfd pfd[2] = {{*fds[0], POLLIN, 0}, {*fds[1], POLLIN, 0}};

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec * 1000L + now.tv_nsec / 1000000L >= deadline)
			break;
		if (poll(pfd, 2, 200) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			ssize_t r;

			if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (used[i] < caps[i])
				r = read(pfd[i].fd, bufs[i] + used[i], caps[i] - used[i]);
			else
				r = read(pfd[i].fd, scratch, sizeof(scratch));
			if (r > 0 && used[i] < caps[i])
				used[i] += (size_t)r;
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
				mcpx_close_fd(fds[i]);
				open_fds--;
			}
		}
	}
	out[used[0]] = '\0';
	if (errbuf)
		errbuf[used[1]] = '\0';
	return used[0];
}

void mcpx_sandbox_cleanup(struct mcpx_sandbox_proc *proc)
{
	int rc;

	if (!proc)
		return;
	if (proc->pid > 0 && !proc->reaped) {
		mcpx_sandbox_kill(proc);
		(void)mcpx_sandbox_reap(proc, NULL, NULL);
	}
	mcpx_close_fd(&proc->stdin_fd);
	mcpx_close_fd(&proc->stdout_fd);
	mcpx_close_fd(&proc->stderr_fd);
	mcpx_close_fd(&proc->channel_fd);
	mcpx_close_fd(&proc->pidfd);
	mcpx_close_fd(&proc->exit_fd);
	mcpx_close_fd(&proc->setup_fd);
	if (proc->workdir[0]) {
		rc = mcpx_workdir_remove_in(proc->parent_fd, proc->workdir);
		if (rc)
			mcpx_warn("sandbox: cannot remove workdir %s: %s", proc->workdir,
			          strerror(-rc));
		proc->workdir[0] = '\0';
	}
	mcpx_close_fd(&proc->parent_fd);
	if (proc->started.tv_sec) {
		rc = mcpx_workdir_wipe_owned_since("/dev/shm", proc->run_uid, proc->run_gid,
		                                   &proc->started);
		if (rc)
			mcpx_warn("sandbox: cannot wipe /dev/shm: %s", strerror(-rc));
		proc->started.tv_sec = 0;
	}
}
