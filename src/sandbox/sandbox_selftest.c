/*
 * sandbox_selftest.c - start-up proof that every active sandbox layer holds.
 *
 * What it does: runs a small Python probe through the real spawn path and
 * checks, for each layer marked active in sb->layers, that the probe really
 * was stopped: no AF_INET socket, no SysV shared memory, no CLONE_PARENT and
 * no change to the CPU affinity of a pid other than 0 (seccomp), no write outside
 * the workdir and no read of a token-like file beside it (Landlock, or the
 * filesystem view where Landlock is absent, which must also leave the run no
 * capability), no signal to the server, no read of the server's
 * environ, a scrubbed environment, uid 65532 when started as root,
 * no_new_privs and a zero core limit. When both seccomp and Landlock are active, a second probe
 * runs with seccomp off, so Landlock's own TCP and scope rules are proven and
 * not hidden behind seccomp's socket filter. A layer the kernel lacks is not
 * a failure here (the caller decides what is required); a layer that claims
 * to be active and does not hold is.
 *
 * The same probe and checks also run in a process started another way: the
 * fork server proves each new zygote's first child with it
 * (mcpx_sandbox_selftest_in).
 *
 * What it does not do: measure resource limits beyond RLIMIT_CORE, or run
 * concurrently with anything (it blocks; call it before serving).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fdutil.h"
#include "sandbox.h"

#define PROBE_TIMEOUT_MS 20000
#define PROBE_OUT_MAX 8192

/* The probe reads its parameters from stdin (not spliced into the code, so a
 * base path with quotes cannot break it) and prints key=value lines. */
static const char probe_py[] =
    "import os, sys, socket, resource, ctypes\n"
    "server, base, abstract, nr_clone, token = (sys.stdin.read().split('\\n') + [''])[:5]\n"
    "server = int(server)\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "def c(r):\n"
    "    if r == -1:\n"
    "        e = ctypes.get_errno()\n"
    "        raise OSError(e, os.strerror(e))\n"
    "    return r\n"
    "def t(name, fn):\n"
    "    try:\n"
    "        fn()\n"
    "        print(name + '=ok')\n"
    "    except OSError as e:\n"
    "        print('%s=errno:%d' % (name, e.errno))\n"
    "t('inet', lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close())\n"
    "def bind_tcp():\n"
    "    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
    "    try:\n"
    "        s.bind(('127.0.0.1', 0))\n"
    "    finally:\n"
    "        s.close()\n"
    "t('bind_tcp', bind_tcp)\n"
    "def write_in(d):\n"
    "    p = os.path.join(d, 'mcpx-selftest-%d' % os.getpid())\n"
    "    os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))\n"
    "    os.unlink(p)\n"
    "t('write_base', lambda: write_in(base))\n"
    "t('write_tmp', lambda: write_in('/tmp'))\n"
    "t('write_wd', lambda: write_in(os.getcwd()))\n"
    "t('list_base', lambda: os.listdir(base))\n"
    /* A file beside the workdir that the run uid could read, as it could
     * read the mounted auth token: Landlock or the view must hide it. */
    "if token:\n"
    "    t('read_token', lambda: open(token).read())\n"
    "t('kill_server', lambda: os.kill(server, 0))\n"
    /* What the server's environ file shows: denied (dumpable, uid), or
     * only zeros (gVisor serves it to all; sandbox.c zeroes it). */
    "def environ_server():\n"
    "    if open('/proc/%d/environ' % server, 'rb').read(65536).strip(b'\\0'):\n"
    "        return\n"
    "    raise OSError(0, 'only zeros')\n"
    "t('environ_server', environ_server)\n"
    "def abstract_connect():\n"
    "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
    "    try:\n"
    "        s.connect('\\0' + abstract)\n"
    "    finally:\n"
    "        s.close()\n"
    "if abstract:\n"
    "    t('abstract', abstract_connect)\n"
    /* SysV IPC outlives the run: a segment made here is removed again. */
    "t('sysv_shm', lambda: libc.shmctl(c(libc.shmget(0, 4096, 0o1600)), 0, None))\n"
    /* CLONE_PARENT|SIGCHLD: a would-be child of the server or zygote,
     * which exits at once if the filter let it be made. */
    "def clone_parent():\n"
    "    if c(libc.syscall(ctypes.c_long(int(nr_clone)), ctypes.c_long(0x8011), 0, 0, 0, 0)) == "
    "0:\n"
    "        os._exit(0)\n"
    "t('clone_parent', clone_parent)\n"
    /* Scheduling of any pid but 0: the filter cannot tell the caller's
     * own pid from another's, so naming our own proves the rule with no
     * uid check in the way (and no fork, which a busy uid could refuse). */
    "t('sched_pid', lambda: os.sched_setaffinity(os.getpid(), os.sched_getaffinity(0)))\n"
    "print('uid=%d' % os.getuid())\n"
    "print('gid=%d' % os.getgid())\n"
    "print('groups=%d' % len(os.getgroups()))\n"
    "print('env=' + ','.join(sorted(os.environ)))\n"
    "print('home_is_cwd=%d' % (os.environ.get('HOME') == os.getcwd()))\n"
    /* From prctl, not /proc/self/status: gVisor's has no NoNewPrivs. */
    "print('NoNewPrivs=%d' % libc.prctl(39, 0, 0, 0, 0))\n"
    "print('Seccomp=%d' % libc.prctl(21, 0, 0, 0, 0))\n"
    "print('core=%d' % resource.getrlimit(resource.RLIMIT_CORE)[1])\n"
    /* capget, version 3: effective, permitted and inheritable of both
     * words; the view's namespace must have left none. */
    "hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)\n"
    "caps = (ctypes.c_uint32 * 6)()\n"
    "print('caps=%d' % (sum(caps) if libc.capget(hdr, caps) == 0 else -1))\n"
    "print('done=1')\n";

static const char expected_env[] = "HOME,LANG,MALLOC_ARENA_MAX,MKL_NUM_THREADS,MPLBACKEND,"
                                   "MPLCONFIGDIR,OMP_NUM_THREADS,OPENBLAS_NUM_THREADS,PATH,"
                                   "PYTHONIOENCODING,TMPDIR";

struct probe_out {
	char buf[PROBE_OUT_MAX];
	size_t len;
	int status;
};

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Returns the value of "key=value" in the output, or NULL. */
static const char *value_of(const struct probe_out *o, const char *key, char *val, size_t len)
{
	size_t klen = strlen(key);
	const char *p = o->buf;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t l = eol ? (size_t)(eol - p) : strlen(p);

		if (l > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			size_t vl = l - klen - 1;

			if (vl >= len)
				vl = len - 1;
			memcpy(val, p + klen + 1, vl);
			val[vl] = '\0';
			return val;
		}
		p = eol ? eol + 1 : NULL;
	}
	return NULL;
}

/* What the probe reads on stdin, one per line: the server's pid, the
 * workdir base, an abstract socket it must not reach ("" when none could be
 * made), the clone syscall number (for the CLONE_PARENT check) and a
 * token-like file it must not read ("": none). Both the blocking self-test
 * and the piecewise one (mcpx_sandbox_probe_plan) feed exactly this.
 * Returns snprintf's count. */
static int probe_input(const struct mcpx_sandbox *sb, const char *abstract, const char *token,
                       char *buf, size_t len)
{
	return snprintf(buf, len, "%d\n%s\n%s\n%ld\n%s\n", (int)sb->server_pid, sb->workdir_base,
	                abstract, (long)SYS_clone, token);
}

/* Runs the probe in a spawned process, or in given (a warm process that
 * feed hands the code and stdin to), and collects its output. Consumes
 * given. */
static int run_probe(const struct mcpx_sandbox *sb, const char *abstract, const char *token,
                     struct probe_out *o, struct mcpx_sandbox_proc *given, mcpx_probe_feed_fn feed,
                     void *ctx, struct mcpx_err *err)
{
	struct mcpx_limits lim = {
	    .cpu_s = 10, .memory_mb = 512, .max_procs = 16, .file_mb = 1, .open_files = 64};
	struct mcpx_sandbox_proc spawned, *p = given ? given : &spawned;
	struct mcpx_sandbox_proc proc;
	char input[8600];
	int n, rc;

	memset(o, 0, sizeof(*o));
	if (!given) {
		rc = mcpx_sandbox_spawn(sb, &lim, probe_py, sizeof(probe_py) - 1, &spawned, err);
		if (rc)
			return rc;
	}
	proc = *p;
	/* Fits the pipe buffer, so the non-blocking write completes at once. */
	n = probe_input(sb, abstract, token, input, sizeof(input));
	if (given)
		rc = feed(ctx, &proc, probe_py, sizeof(probe_py) - 1, input, (size_t)n, err);
	else
		rc = n > 0 && write(proc.stdin_fd, input, (size_t)n) != n
			 ? mcpx_err_set(err, EIO, "sandbox self-test: cannot write probe stdin")
			 : 0;
	if (rc) {
		mcpx_sandbox_cleanup(&proc);
		return rc;
	}
	close(proc.stdin_fd);
	proc.stdin_fd = -1;
	o->len = mcpx_sandbox_drain(&proc, o->buf, sizeof(o->buf), NULL, 0, PROBE_TIMEOUT_MS);
	mcpx_sandbox_kill(&proc);
	rc = mcpx_sandbox_reap(&proc, &o->status, NULL);
	mcpx_sandbox_cleanup(&proc);
	if (rc)
		return mcpx_err_set(err, -rc, "sandbox self-test: reap failed");
	if (!strstr(o->buf, "done=1\n"))
		return mcpx_err_set(err, EPERM,
		                    "sandbox self-test: probe did not finish (status 0x%x)",
		                    (unsigned)o->status);
	return 0;
}

/* Fails unless key's value is want (or, with negate, unless it is not). */
static int expect(const struct probe_out *o, const char *layer, const char *key, const char *want,
                  bool negate, struct mcpx_err *err)
{
	char val[512];
	bool match;

	if (!value_of(o, key, val, sizeof(val)))
		return mcpx_err_set(err, EPERM, "sandbox self-test: layer %s: no result for %s",
		                    layer, key);
	match = !strcmp(val, want);
	if (match == negate)
		return mcpx_err_set(
		    err, EPERM, "sandbox self-test: layer %s does not hold: %s=%s (expected %s%s)",
		    layer, key, val, negate ? "not " : "", want);
	return 0;
}

/* An abstract socket in the server's network namespace: with Landlock's
 * scope the probe must not be able to connect to it. */
static int listen_abstract(char *name, size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	socklen_t salen;
	int fd;

	snprintf(name, len, "mcpx-selftest-%d-%ld", (int)getpid(), now_ms());
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memcpy(sa.sun_path + 1, name, strlen(name));
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
	if (bind(fd, (struct sockaddr *)&sa, salen) < 0 || listen(fd, 4) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The run's uid as the run sees it. In the filesystem view's unmapped
 * user namespace every id reads as the kernel's overflow uid (65534 unless
 * configured otherwise); the real one was checked by the child before it
 * entered the view (sandbox_child.c, verify_uid: a spawn whose drop did not
 * happen fails), and the kernel keeps judging files and signals by it. */
static unsigned view_uid(const struct mcpx_sandbox_layers *l)
{
	unsigned overflow = 65534;
	FILE *f;

	if (!l->fs_view || l->landlock)
		return (unsigned)MCPX_SANDBOX_UID;
	f = fopen("/proc/sys/kernel/overflowuid", "re");
	if (f) {
		if (fscanf(f, "%u", &overflow) != 1)
			overflow = 65534;
		fclose(f);
	}
	return overflow;
}

static int check_full(const struct mcpx_sandbox *sb, const struct probe_out *o, bool abstract,
                      bool token, struct mcpx_err *err)
{
	const struct mcpx_sandbox_layers *l = &sb->layers;
	char uid[32];
	int rc = 0;

	if (!WIFEXITED(o->status) || WEXITSTATUS(o->status) != 0)
		return mcpx_err_set(err, EPERM, "sandbox self-test: probe exited with status 0x%x",
		                    (unsigned)o->status);
	/* The workdir must be usable, or every check below proves nothing. */
	rc = expect(o, "workdir", "write_wd", "ok", false, err);
	if (!rc)
		rc = expect(o, "workdir", "home_is_cwd", "1", false, err);
	if (!rc)
		rc = expect(o, "environment", "env", expected_env, false, err);
	if (!rc && l->seccomp)
		rc = expect(o, "seccomp", "inet", "errno:1", false, err);
	if (!rc && l->seccomp)
		rc = expect(o, "seccomp", "Seccomp", "2", false, err);
	if (!rc && l->seccomp)
		rc = expect(o, "seccomp-sysv-ipc", "sysv_shm", "errno:1", false, err);
	if (!rc && l->seccomp)
		rc = expect(o, "seccomp-clone-parent", "clone_parent", "errno:1", false, err);
	if (!rc && l->seccomp)
		rc = expect(o, "seccomp-sched", "sched_pid", "errno:1", false, err);
	if (!rc && l->landlock)
		rc = expect(o, "landlock", "write_base", "ok", true, err);
	if (!rc && l->landlock)
		rc = expect(o, "landlock", "write_tmp", "ok", true, err);
	if (!rc && l->landlock)
		rc = expect(o, "landlock-read", "list_base", "ok", true, err);
	if (!rc && (l->landlock || l->fs_view) && token)
		rc = expect(o, l->landlock ? "landlock-read" : "fs-view", "read_token", "ok", true,
		            err);
	if (!rc && l->fs_view && !l->landlock)
		rc = expect(o, "fs-view", "write_base", "ok", true, err);
	if (!rc && l->fs_view && !l->landlock)
		rc = expect(o, "fs-view", "write_tmp", "ok", true, err);
	if (!rc && l->fs_view && !l->landlock)
		rc = expect(o, "fs-view", "caps", "0", false, err);
	if (!rc && (l->seccomp || l->landlock_scope || l->uid_drop))
		rc = expect(o, "signals", "kill_server", "ok", true, err);
	if (!rc && (l->dumpable_off || l->uid_drop || l->landlock || l->environ_hidden))
		rc = expect(o, "server-environ", "environ_server", "ok", true, err);
	if (!rc && l->landlock_scope && abstract)
		rc = expect(o, "landlock-scope", "abstract", "ok", true, err);
	if (!rc && l->uid_drop) {
		snprintf(uid, sizeof(uid), "%u", view_uid(l));
		rc = expect(o, "uid-drop", "uid", uid, false, err);
		if (!rc)
			rc = expect(o, "uid-drop", "groups", "0", false, err);
	}
	if (!rc && l->no_new_privs)
		rc = expect(o, "no_new_privs", "NoNewPrivs", "1", false, err);
	if (!rc && l->rlimits)
		rc = expect(o, "rlimits", "core", "0", false, err);
	return rc;
}

/* Landlock alone (seccomp off): its TCP rule and scopes must hold by
 * themselves. */
static int check_landlock_only(const struct mcpx_sandbox *sb, const struct probe_out *o,
                               bool abstract, struct mcpx_err *err)
{
	const struct mcpx_sandbox_layers *l = &sb->layers;
	int rc;

	rc = expect(o, "landlock", "write_base", "ok", true, err);
	if (!rc)
		rc = expect(o, "landlock", "write_tmp", "ok", true, err);
	if (!rc && l->landlock_net)
		rc = expect(o, "landlock-net", "bind_tcp", "errno:13", false, err);
	if (!rc && l->landlock_scope)
		rc = expect(o, "landlock-scope", "kill_server", "ok", true, err);
	if (!rc && l->landlock_scope && abstract)
		rc = expect(o, "landlock-scope", "abstract", "ok", true, err);
	return rc;
}

/* A token-like file in the workdir base, beside every workdir, that the
 * run uid could read (mode 0644) as it could read the mounted auth token:
 * Landlock or the filesystem view must hide it from the probe. */
static int make_token(const struct mcpx_sandbox *sb, char *path, size_t len, struct mcpx_err *err)
{
	static const char text[] = "mcpx-selftest-token\n";
	int fd, rc = 0;

	if ((size_t)snprintf(path, len, "%s/mcpx-selftest-token-%d", sb->workdir_base,
	                     (int)getpid()) >= len)
		return mcpx_err_set(err, ENAMETOOLONG, "sandbox self-test: workdir base too long");
	(void)unlink(path); /* left by a server of the same pid that was killed */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || fchmod(fd, 0644) < 0 ||
	    write(fd, text, sizeof(text) - 1) != (ssize_t)(sizeof(text) - 1))
		rc =
		    mcpx_err_set(err, errno ? errno : EIO, "sandbox self-test: cannot write %s: %s",
		                 path, strerror(errno ? errno : EIO));
	if (fd >= 0)
		close(fd);
	if (rc)
		(void)unlink(path);
	return rc;
}

/* A workdir base beneath /dev/shm (workdirs on tmpfs): Landlock and the
 * view both grant runs /dev/shm, where multiprocessing's semaphores live,
 * so a file beside a workdir there is readable by its name and no token
 * can prove anything (docs/security.md, "Files in and out"). Listing the
 * base stays denied (list_base). */
static bool base_in_shm(const struct mcpx_sandbox *sb)
{
	return strncmp(sb->workdir_base, "/dev/shm", 8) == 0 &&
	       (sb->workdir_base[8] == '\0' || sb->workdir_base[8] == '/');
}

int mcpx_sandbox_selftest(const struct mcpx_sandbox *sb, struct mcpx_err *err)
{
	struct probe_out *o;
	struct mcpx_sandbox *alone = NULL;
	char name[96], token[4200];
	int lfd, rc;

	o = malloc(sizeof(*o));
	if (!o)
		return mcpx_err_set(err, ENOMEM, "sandbox self-test: out of memory");
	token[0] = '\0';
	rc = base_in_shm(sb) ? 0 : make_token(sb, token, sizeof(token), err);
	if (rc) {
		free(o);
		return rc;
	}
	lfd = listen_abstract(name, sizeof(name));
	rc = run_probe(sb, lfd >= 0 ? name : "", token, o, NULL, NULL, NULL, err);
	if (token[0])
		(void)unlink(token);
	if (!rc)
		rc = check_full(sb, o, lfd >= 0, token[0] != '\0', err);
	if (!rc && sb->layers.seccomp && sb->layers.landlock) {
		alone = malloc(sizeof(*alone));
		if (!alone) {
			rc = mcpx_err_set(err, ENOMEM, "sandbox self-test: out of memory");
		} else {
			/* A shallow copy: the filter stays owned by sb. */
			memcpy(alone, sb, sizeof(*alone));
			alone->layers.seccomp = false;
			rc = run_probe(alone, lfd >= 0 ? name : "", "", o, NULL, NULL, NULL, err);
			if (!rc)
				rc = check_landlock_only(alone, o, lfd >= 0, err);
		}
	}
	if (lfd >= 0)
		close(lfd);
	free(alone);
	free(o);
	return rc;
}

int mcpx_sandbox_selftest_in(const struct mcpx_sandbox *sb, struct mcpx_sandbox_proc *proc,
			     mcpx_probe_feed_fn feed, void *ctx, struct mcpx_err *err)
{
	struct probe_out *o;
	char name[96];
	int lfd, rc;

	o = malloc(sizeof(*o));
	if (!o) {
		mcpx_sandbox_cleanup(proc);
		return mcpx_err_set(err, ENOMEM, "sandbox self-test: out of memory");
	}
	lfd = listen_abstract(name, sizeof(name));
	rc = run_probe(sb, lfd >= 0 ? name : "", "", o, proc, feed, ctx, err);
	if (!rc)
		rc = check_full(sb, o, lfd >= 0, false, err);
	if (lfd >= 0)
		close(lfd);
	free(o);
	return rc;
}

int mcpx_sandbox_probe_plan(const struct mcpx_sandbox *sb, struct mcpx_probe_plan *plan,
			    struct mcpx_err *err)
{
	char name[96];
	int n;

	memset(plan, 0, sizeof(*plan));
	plan->code = probe_py;
	plan->code_len = sizeof(probe_py) - 1;
	plan->listen_fd = listen_abstract(name, sizeof(name));
	n = probe_input(sb, plan->listen_fd >= 0 ? name : "", "", plan->input, sizeof(plan->input));
	if (n < 0 || (size_t)n >= sizeof(plan->input)) {
		mcpx_sandbox_probe_plan_free(plan);
		return mcpx_err_set(err, ENAMETOOLONG, "sandbox self-test: probe input too long");
	}
	plan->input_len = (size_t)n;
	return 0;
}

void mcpx_sandbox_probe_plan_free(struct mcpx_probe_plan *plan)
{
	if (plan->listen_fd >= 0)
		close(plan->listen_fd);
	plan->listen_fd = -1;
}

int mcpx_sandbox_probe_verdict(const struct mcpx_sandbox *sb, const struct mcpx_probe_plan *plan,
			       const char *out, size_t len, int status, struct mcpx_err *err)
{
	struct probe_out *o = malloc(sizeof(*o));
	int rc;

	if (!o)
		return mcpx_err_set(err, ENOMEM, "sandbox self-test: out of memory");
	o->len = len < sizeof(o->buf) - 1 ? len : sizeof(o->buf) - 1;
	memcpy(o->buf, out, o->len);
	o->buf[o->len] = '\0';
	o->status = status;
	if (!strstr(o->buf, "done=1\n"))
		rc = mcpx_err_set(err, EPERM, "sandbox self-test: probe did not finish (status 0x%x)",
				  (unsigned)status);
	else
		rc = check_full(sb, o, plan->listen_fd >= 0, false, err);
	free(o);
	return rc;
}
