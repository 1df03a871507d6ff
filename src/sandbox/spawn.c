/*
 * spawn.c - start one sandboxed process: a cold run, a warm interpreter or
 * the fork server's zygote, or take charge of a leader the zygote forked.
 *
 * What it does: per run it puts back the guarded directories above the
 * workdirs (dirguard.c), creates the workdir, writes the code file,
 * prepares every string and limit the child needs, forks (through the
 * leader registry, reaper.c), and waits on a close-on-exec error pipe until
 * the child has either exec'd its runtime or reported the step that failed
 * (the child's side is sandbox_child.c). In the pod it then raises the
 * child's oom_score_adj.
 *
 * What it does not do: decide the layers or the limits (sandbox.c, at
 * start-up), kill or reap (reaper.c), remove what a run left (cleanup.c),
 * or watch the returned fds (the executor).
 */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dirguard.h"
#include "exit_watch.h"
#include "fdutil.h"
#include "reaper.h"
#include "sandbox_child.h"
#include "spawn_held.h"
#include "workdir.h"

/* Everything the child reads lives here, filled before fork. */
struct spawn_buf {
	struct mcpx_child_args args;
	char home[4200], tmpdir[4200], mplconfig[4200];
	char *envp[16];
	char *argv[8];
	char scratch[64]; /* an argument built for this run (language.c) */
};

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
	const struct mcpx_spawn_hold *hold;   /* held before its code (gate.c), or NULL */
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
	/* A held run's (gate.c says what becomes of it). */
	if (what->hold && what->hold->env)
		b->envp[i++] = (char *)what->hold->env;
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
 * still be root's for a moment: EACCES is retried for up to 50 ms. A run
 * that has already ended (or let go of its memory to end) needs no score. */
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

/* Whether pid has let go of its memory on its way out: the window between
 * the kernel's exit_mm and the zombie has_exited sees, which a loaded
 * machine can stretch past the retries. /proc/<pid>/stat is readable by
 * anyone, and its vsize (field 23) is 0 once the task has no memory; a
 * task in execve always has one, old or new. */
static bool has_no_memory(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long long vsize = 1;
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	/* After the name: state is field 3, vsize field 23, 21 spaces on. */
	for (int field = 2; p && field < 23; field++)
		p = strchr(p + 1, ' ');
	return p && sscanf(p, " %llu", &vsize) == 1 && vsize == 0;
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
		if (fd < 0 && (has_exited(pid) || has_no_memory(pid)))
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
	if (what->hold)
		return what->hold->make(sb, proc->workdir, err);
	rc = mcpx_spawn_write_code(sb, proc, what->lang, what->code, what->code_len, err);
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
static void fill_args(struct spawn_buf *b, const struct mcpx_sandbox *sb,
                      const struct spawn_what *what, const struct spawn_fds *f, const char *workdir)
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
	/* Where Landlock is absent, the view holds its paths (workdir is the
	 * run's absolute path). */
	b->args.fs_view = !sb->layers.landlock && sb->layers.fs_view;
	/* The prefix of this run's runtime when it lies outside the standard
	 * roots (a zygote's is Python's). */
	b->args.runtime_root =
	    sb->langs.rt[what->lang].root[0] ? sb->langs.rt[what->lang].root : NULL;
	/* Only the zygote's own exec needs its binary: a cold run's ruleset
	 * leaves it out. */
	b->args.exe_fd = what->zygote_mode ? sb->zygote_fd : -1;
	b->args.filter = !sb->layers.seccomp     ? NULL
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

	/* Race-free: an unreaped child's pid cannot be recycled. A pidfd, or
	 * where there are none an eventfd a watcher thread writes
	 * (exit_watch.c). */
	proc->pidfd = mcpx_exit_watch_open(proc->pid);
	if (proc->pidfd < 0)
		return mcpx_err_set(err, -proc->pidfd, "sandbox: exit watch: %s",
				    strerror(-proc->pidfd));
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
	b->args.n_rlimits = mcpx_spawn_rlimits(sb, what->lang, lim, b->args.rlimits);
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
		mcpx_exit_watch_settle(proc->pid);
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

int mcpx_spawn_held(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
                    enum mcpx_lang lang, const struct mcpx_spawn_hold *hold,
                    struct mcpx_sandbox_proc *proc, struct mcpx_err *err)
{
	struct spawn_what what = {.control_fd = -1, .lang = lang, .hold = hold};

	if ((unsigned)lang >= MCPX_LANG_COUNT || !sb->langs.rt[lang].available) {
		mcpx_sandbox_proc_reset(proc);
		return mcpx_err_set(err, ENOEXEC, "sandbox: %s is not available here",
		                    mcpx_lang_name(lang));
	}
	return spawn(sb, lim, &what, proc, err);
}

int mcpx_spawn_rlimits(const struct mcpx_sandbox *sb, enum mcpx_lang lang,
                       const struct mcpx_limits *lim, struct mcpx_rlimit out[MCPX_MAX_RLIMITS])
{
	int n = (int)mcpx_sandbox_rlimits(sb, lim, out);

	mcpx_lang_adjust_rlimits(lang, out, n);
	return n;
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

int mcpx_spawn_write_code(const struct mcpx_sandbox *sb, const struct mcpx_sandbox_proc *proc,
                          enum mcpx_lang lang, const char *code, size_t code_len,
                          struct mcpx_err *err)
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
	return mcpx_spawn_write_code(sb, proc, MCPX_LANG_PYTHON, code, code_len, err);
}

int mcpx_sandbox_spawn_zygote(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
                              const char *preload, int control_fd, struct mcpx_sandbox_proc *proc,
                              struct mcpx_err *err)
{
	struct spawn_what what = {
	    .zygote_mode = "serve", .preload = preload, .control_fd = control_fd};

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
	/* A grandchild cannot be waited for: only a pidfd tells its exit
	 * (without pidfds the fork server is not used, warm_pool.c). */
	if (!mcpx_exit_watch_pidfd())
		return mcpx_err_set(err, ENOSYS, "sandbox: adopting a child needs pidfds");
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
