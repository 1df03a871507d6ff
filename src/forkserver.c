/*
 * forkserver.c - the server's side of the fork server (forkserver.h).
 *
 * What it does: starts the zygote through the sandbox (its own workdir,
 * limits, Landlock ruleset and the zygote variant of the seccomp filter),
 * hands it once what every child must enforce (the run's seccomp program and
 * the shape of the run's Landlock ruleset, both computed by the same code the
 * cold path uses), and then, per run, creates the run's workdir beneath the
 * zygote's and its pipes, computes its rlimits, sends one request with the
 * child's pipe ends and an fd of its workdir attached (SCM_RIGHTS; and, for
 * a run with egress, its end of the broker channel as a fifth) and adopts
 * the child it gets back. Once the zygote is ready its directory is emptied
 * and, on a root server, given to root; where a run could still change it
 * (the pod), it is guarded and put back before every fork and every run
 * (dirguard.c).
 *
 * The control channel is a SOCK_SEQPACKET socketpair: one JSON object per
 * message, requests and answers strictly alternating. Every wait for an
 * answer is bounded, so a wedged zygote costs a timeout, never a hung server.
 *
 * What it does not do: decide when forking is safe (executor.c), or run
 * anything itself: the child's setup is Python in the zygote (warm.c).
 */
#include "forkserver.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirguard.h"
#include "fdutil.h"
#include "landlock.h"
#include "log.h"
#include "warm.h"
#include "workdir.h"

/* How long an answer may take: a fork of the preloaded zygote is a few
 * milliseconds, a reap of an exited child less. */
#define ANSWER_TIMEOUT_MS 5000
#define MAX_MESSAGE 65536

/* A fork asked for and not yet taken: the server's ends of the child's
 * pipes and its workdir, then the zygote's answer. */
struct pending_fork {
	bool active;
	bool answered;
	pid_t pid;      /* from the answer; 0 when the fork failed */
	int err;        /* errno of a failed fork */
	int stdin_w, stdout_r, stderr_r;
	int channel; /* the server's end of the run's broker channel, or -1 */
	char workdir[4096];
	int parent_fd; /* the zygote's directory, O_PATH */
};

struct mcpx_forkserver {
	const struct mcpx_sandbox *sb;
	struct mcpx_sandbox_proc zygote;
	int ctl;
	bool ready;
	bool dead;
	struct pending_fork next;
	/* The zygote's directory once it is ready (when a run could change
	 * it), under the sandbox's guards of the workdir base. */
	struct mcpx_dirguards guards;
};

/* Logs what the zygote wrote to its stderr (a traceback, say), once it has
 * failed. */
static void log_zygote_stderr(struct mcpx_forkserver *fs)
{
	char buf[2048];
	ssize_t n;

	if (fs->zygote.stderr_fd < 0)
		return;
	n = read(fs->zygote.stderr_fd, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		mcpx_warn("fork server: the zygote said: %s", buf);
	}
}

static int mark_dead(struct mcpx_forkserver *fs, struct mcpx_err *err, const char *what)
{
	if (!fs->dead) {
		fs->dead = true;
		log_zygote_stderr(fs);
	}
	return mcpx_err_set(err, EPIPE, "fork server: %s", what);
}

static int send_json(struct mcpx_forkserver *fs, const cJSON *msg, const int *fds, size_t nfds)
{
	char *text = cJSON_PrintUnformatted(msg);
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(5 * sizeof(int))];
	} ctrl;
	struct iovec iov;
	struct msghdr mh = {0};
	ssize_t n;

	if (!text)
		return -ENOMEM;
	iov.iov_base = text;
	iov.iov_len = strlen(text);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds) {
		struct cmsghdr *c;

		memset(&ctrl, 0, sizeof(ctrl));
		mh.msg_control = ctrl.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	do
		n = sendmsg(fs->ctl, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	free(text);
	return n == (ssize_t)iov.iov_len ? 0 : -EPIPE;
}

/* Receives one answer, waiting at most timeout_ms (0: do not wait). Returns
 * the parsed object, or NULL with *rc = -EAGAIN (nothing yet) or -EPIPE. */
static cJSON *recv_json(struct mcpx_forkserver *fs, int timeout_ms, int *rc)
{
	struct pollfd pfd = {.fd = fs->ctl, .events = POLLIN};
	char *buf;
	cJSON *msg;
	ssize_t n;
	int r;

	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		*rc = timeout_ms ? -EPIPE : -EAGAIN;
		return NULL;
	}
	buf = malloc(MAX_MESSAGE + 1);
	if (!buf) {
		*rc = -ENOMEM;
		return NULL;
	}
	do
		n = recv(fs->ctl, buf, MAX_MESSAGE, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		free(buf);
		*rc = n < 0 && errno == EAGAIN ? -EAGAIN : -EPIPE;
		return NULL;
	}
	buf[n] = '\0';
	msg = cJSON_Parse(buf);
	free(buf);
	*rc = msg ? 0 : -EPIPE;
	return msg;
}

/* ---- start -------------------------------------------------------------- */

static cJSON *landlock_json(const struct mcpx_sandbox *sb)
{
	struct mcpx_landlock_plan plan;
	cJSON *ll = cJSON_CreateObject(), *rules = cJSON_CreateArray();

	mcpx_landlock_plan(sb->layers.landlock_abi, NULL,
			   sb->runtime_root[0] ? sb->runtime_root : NULL, &plan);
	cJSON_AddNumberToObject(ll, "fs", (double)plan.handled_fs);
	cJSON_AddNumberToObject(ll, "net", (double)plan.handled_net);
	cJSON_AddNumberToObject(ll, "scoped", (double)plan.scoped);
	for (size_t i = 0; i < plan.n_rules; i++) {
		cJSON *r = cJSON_CreateArray();

		/* null: the child's own workdir */
		cJSON_AddItemToArray(r, plan.rules[i].path ? cJSON_CreateString(plan.rules[i].path)
							   : cJSON_CreateNull());
		cJSON_AddItemToArray(r, cJSON_CreateNumber((double)plan.rules[i].rights));
		cJSON_AddItemToArray(r, cJSON_CreateBool(plan.rules[i].optional));
		cJSON_AddItemToArray(rules, r);
	}
	cJSON_AddItemToObject(ll, "rules", rules);
	return ll;
}

static cJSON *bpf_json(const struct sock_fprog *prog)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = (size_t)prog->len * sizeof(struct sock_filter);
	const unsigned char *p = (const unsigned char *)prog->filter;
	char *s = malloc(2 * len + 1);
	cJSON *out;

	if (!s)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		s[2 * i] = hex[p[i] >> 4];
		s[2 * i + 1] = hex[p[i] & 15];
	}
	s[2 * len] = '\0';
	out = cJSON_CreateString(s);
	free(s);
	return out;
}

/* What every child enforces, sent once. The Landlock rights are below 2^53,
 * so JSON numbers carry them exactly. */
static int send_init(struct mcpx_forkserver *fs)
{
	const struct mcpx_sandbox *sb = fs->sb;
	cJSON *init = cJSON_CreateObject();
	int rc;

	if (!init)
		return -ENOMEM;
	if (sb->layers.landlock)
		cJSON_AddItemToObject(init, "landlock", landlock_json(sb));
	if (sb->layers.seccomp)
		cJSON_AddItemToObject(init, "bpf", bpf_json(&sb->filter));
	rc = send_json(fs, init, NULL, 0);
	cJSON_Delete(init);
	return rc;
}

int mcpx_forkserver_start(const struct mcpx_sandbox *sb, const char *bootstrap,
			  const struct mcpx_limits *lim, struct mcpx_forkserver **out,
			  struct mcpx_err *err)
{
	struct mcpx_forkserver *fs;
	struct mcpx_limits zl = *lim;
	int sv[2], rc;

	*out = NULL;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return mcpx_err_set(err, ENOMEM, "fork server: out of memory");
	fs->sb = sb;
	fs->next.stdin_w = fs->next.stdout_r = fs->next.stderr_r = fs->next.parent_fd = -1;
	fs->next.channel = -1;
	mcpx_dirguards_init(&fs->guards);
	fs->guards.parent = sb->guards;
	mcpx_sandbox_proc_reset(&fs->zygote);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		rc = mcpx_err_set(err, errno, "fork server: socketpair: %s", strerror(errno));
		free(fs);
		return rc;
	}
	fs->ctl = sv[0];
	/* The zygote lives across runs: no CPU limit of its own (each child
	 * sets the run's), no process budget (each child gets the run's). */
	zl.cpu_s = 0;
	zl.max_procs = 0;
	zl.channel = false;
	rc = mcpx_sandbox_spawn_zygote(sb, &zl, bootstrap, sv[1], &fs->zygote, err);
	close(sv[1]);
	if (rc < 0) {
		close(fs->ctl);
		free(fs);
		return rc;
	}
	/* It reads nothing on stdin and writes nothing on stdout. */
	mcpx_close_fd(&fs->zygote.stdin_fd);
	mcpx_close_fd(&fs->zygote.stdout_fd);
	rc = send_init(fs);
	if (rc < 0) {
		mcpx_forkserver_stop(fs);
		return mcpx_err_set(err, -rc, "fork server: cannot send the zygote its setup");
	}
	*out = fs;
	return 0;
}

/* Once the zygote has preloaded, its directory holds nothing but the runs'
 * workdirs. What the preload left there (matplotlib's font cache, say) is
 * removed: it belongs to the run uid, and a run could change its metadata
 * or its contents' for a later run to see. A root server then gives the
 * directory to root, mode 0711 (runs still pass through it to their own
 * workdirs): no run can change it any more. In the pod, where the server
 * is the run uid and nothing can belong to anyone else, it is guarded
 * instead and put back before every fork and every run (dirguard.c). */
static int settle_zygote_dir(struct mcpx_forkserver *fs, struct mcpx_err *err)
{
	const char *dir = fs->zygote.workdir;
	int fd, rc;

	rc = mcpx_workdir_empty(dir);
	if (rc)
		return mcpx_err_set(err, -rc, "cannot empty the zygote's directory: %s",
				    strerror(-rc));
	if (fs->sb->layers.uid_drop) {
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fchown(fd, geteuid(), getegid()) < 0 || fchmod(fd, 0711) < 0)
			rc = mcpx_err_set(err, errno, "cannot hand the zygote's directory to the "
					  "server: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		if (rc)
			return rc;
	}
	return mcpx_dirguards_add(&fs->guards, dir, fs->sb->run_uid, err);
}

bool mcpx_forkserver_alive(const struct mcpx_forkserver *fs)
{
	struct pollfd pfd = {.fd = fs->zygote.pidfd, .events = POLLIN};

	return fs->zygote.pidfd >= 0 && poll(&pfd, 1, 0) == 0;
}

pid_t mcpx_forkserver_pid(const struct mcpx_forkserver *fs)
{
	return fs->zygote.pid;
}

int mcpx_forkserver_poll(struct mcpx_forkserver *fs)
{
	struct mcpx_err err = {{0}};
	cJSON *msg;
	int rc;

	if (!fs->dead && !mcpx_forkserver_alive(fs))
		(void)mark_dead(fs, NULL, "the zygote exited");
	if (fs->dead)
		return -EPIPE;
	if (fs->ready)
		return 1;
	msg = recv_json(fs, 0, &rc);
	if (!msg) {
		if (rc == -EAGAIN)
			return 0;
		return mark_dead(fs, NULL, "the zygote exited while preloading");
	}
	fs->ready = cJSON_IsTrue(cJSON_GetObjectItem(msg, "ready"));
	cJSON_Delete(msg);
	if (!fs->ready)
		return mark_dead(fs, NULL, "unexpected message from the zygote");
	if (settle_zygote_dir(fs, &err) < 0) {
		fs->ready = false;
		mcpx_warn("fork server: %s", err.msg);
		return mark_dead(fs, NULL, "its directory could not be prepared");
	}
	return 1;
}

/* ---- fork and reap ------------------------------------------------------ */

/* An answer must be an object with a number in field (or "errno"). */
static int answer_number(struct mcpx_forkserver *fs, const char *field, double *val,
			 cJSON **msgp, struct mcpx_err *err)
{
	cJSON *msg, *v;
	int rc;

	msg = recv_json(fs, ANSWER_TIMEOUT_MS, &rc);
	if (!msg)
		return mark_dead(fs, err, "no answer from the zygote");
	v = cJSON_GetObjectItem(msg, field);
	if (!cJSON_IsNumber(v)) {
		cJSON *e = cJSON_GetObjectItem(msg, "errno");
		int code = cJSON_IsNumber(e) && e->valueint > 0 ? e->valueint : EPROTO;

		cJSON_Delete(msg);
		if (!cJSON_IsNumber(e))
			return mark_dead(fs, err, "malformed answer from the zygote");
		return mcpx_err_set(err, code, "fork server: the zygote could not %s: %s",
				    field[0] == 'p' ? "fork" : "reap", strerror(code));
	}
	*val = v->valuedouble;
	if (msgp)
		*msgp = msg;
	else
		cJSON_Delete(msg);
	return 0;
}

/* Reads the answer to an outstanding fork request, so that the next
 * request's answer is the next message. */
static void settle(struct mcpx_forkserver *fs)
{
	struct pending_fork *p = &fs->next;
	double pid = 0;
	int rc;

	if (!p->active || p->answered)
		return;
	p->answered = true;
	rc = answer_number(fs, "pid", &pid, NULL, NULL);
	if (rc == 0 && (pid < 2 || pid > 1 << 30))
		rc = mark_dead(fs, NULL, "the zygote answered a bad pid");
	p->pid = rc == 0 ? (pid_t)pid : 0;
	p->err = rc == 0 ? 0 : -rc;
}

static void drop_pending(struct mcpx_forkserver *fs)
{
	struct pending_fork *p = &fs->next;

	mcpx_close_fd(&p->stdin_w);
	mcpx_close_fd(&p->stdout_r);
	mcpx_close_fd(&p->stderr_r);
	mcpx_close_fd(&p->channel);
	if (p->workdir[0])
		(void)mcpx_workdir_remove_in(p->parent_fd, p->workdir);
	mcpx_close_fd(&p->parent_fd);
	p->workdir[0] = '\0';
	p->active = false;
}

/* A non-negative count from an answer; 0 when missing. */
static long long count_field(const cJSON *msg, const char *name)
{
	double v = cJSON_GetNumberValue(cJSON_GetObjectItem(msg, name));

	return v == v && v >= 0 && v < 9e15 ? (long long)v : 0;
}

static struct timeval timeval_us(long long us)
{
	struct timeval tv = {.tv_sec = (time_t)(us / 1000000), .tv_usec = (suseconds_t)(us % 1000000)};

	return tv;
}

static int reap_via_zygote(void *ctx, pid_t pid, int *status, struct rusage *ru)
{
	struct mcpx_forkserver *fs = ctx;
	struct mcpx_err err = {{0}};
	cJSON *req, *msg = NULL;
	double st = 0;
	int rc;

	settle(fs);
	if (fs->dead)
		return -EPIPE;
	req = cJSON_CreateObject();
	if (!req)
		return -ENOMEM;
	cJSON_AddNumberToObject(req, "reap", pid);
	rc = send_json(fs, req, NULL, 0);
	cJSON_Delete(req);
	if (rc < 0)
		return mark_dead(fs, &err, "cannot ask the zygote to reap");
	rc = answer_number(fs, "status", &st, &msg, &err);
	if (rc < 0) {
		mcpx_warn("%s", err.msg);
		return rc;
	}
	memset(ru, 0, sizeof(*ru));
	*status = (int)st;
	ru->ru_utime = timeval_us(count_field(msg, "utime_us"));
	ru->ru_stime = timeval_us(count_field(msg, "stime_us"));
	ru->ru_maxrss = (long)count_field(msg, "maxrss_kb");
	cJSON_Delete(msg);
	return 0;
}

static cJSON *fork_request(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
			   const char *workdir)
{
	struct mcpx_rlimit rl[MCPX_MAX_RLIMITS];
	size_t n = mcpx_sandbox_rlimits(lim, sb->run_uid, rl);
	cJSON *req = cJSON_CreateObject(), *arr = cJSON_CreateArray();

	cJSON_AddBoolToObject(req, "fork", 1);
	cJSON_AddStringToObject(req, "workdir", workdir);
	for (size_t i = 0; i < n; i++) {
		cJSON *r = cJSON_CreateArray();

		/* -1 stands for RLIM_INFINITY, which a double cannot carry. */
		cJSON_AddItemToArray(r, cJSON_CreateNumber(rl[i].resource));
		cJSON_AddItemToArray(r, cJSON_CreateNumber(rl[i].lim.rlim_cur == RLIM_INFINITY
								? -1
								: (double)rl[i].lim.rlim_cur));
		cJSON_AddItemToArray(r, cJSON_CreateNumber(rl[i].lim.rlim_max == RLIM_INFINITY
								? -1
								: (double)rl[i].lim.rlim_max));
		cJSON_AddItemToArray(arr, r);
	}
	cJSON_AddItemToObject(req, "rlimits", arr);
	return req;
}

/* The pending fork's workdir, beneath the zygote's directory, which is put
 * back first (the running run may have changed it, and the server needs it
 * as it made it). Returns an fd of the new workdir for the child, which
 * enters it through that fd rather than its path: the run executing now
 * cannot make the child's setup fail by changing the directories above it.
 * Returns the fd or -errno. */
static int pending_workdir(struct mcpx_forkserver *fs, struct mcpx_err *err)
{
	const struct mcpx_sandbox *sb = fs->sb;
	struct pending_fork *p = &fs->next;
	int rc, wd;

	rc = mcpx_dirguards_repair(&fs->guards, err);
	if (rc)
		return rc;
	rc = mcpx_workdir_create(fs->zygote.workdir, sb->layers.uid_drop, sb->run_uid, sb->run_gid,
				 p->workdir, sizeof(p->workdir), &p->parent_fd);
	if (rc) {
		p->workdir[0] = '\0';
		return mcpx_err_set(err, -rc, "fork server: cannot create a workdir: %s",
				    strerror(-rc));
	}
	wd = openat(p->parent_fd, strrchr(p->workdir, '/') + 1,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wd < 0)
		return mcpx_err_set(err, errno, "fork server: cannot open the workdir: %s",
				    strerror(errno));
	return wd;
}

/* The child's stdin, stdout and stderr and, with a channel, its end of the
 * broker channel: the server's ends go into p (non-blocking), the child's
 * into child[0..2] and child[4] (-1 when absent). */
static int make_ends(struct pending_fork *p, bool channel, int child[5], struct mcpx_err *err)
{
	int in[2], out[2], errp[2], ch[2] = {-1, -1};

	if (pipe2(in, O_CLOEXEC) < 0)
		return mcpx_err_set(err, errno, "fork server: pipe2: %s", strerror(errno));
	child[0] = in[0];
	p->stdin_w = in[1];
	if (pipe2(out, O_CLOEXEC) < 0)
		return mcpx_err_set(err, errno, "fork server: pipe2: %s", strerror(errno));
	child[1] = out[1];
	p->stdout_r = out[0];
	if (pipe2(errp, O_CLOEXEC) < 0)
		return mcpx_err_set(err, errno, "fork server: pipe2: %s", strerror(errno));
	child[2] = errp[1];
	p->stderr_r = errp[0];
	if (channel && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ch) < 0)
		return mcpx_err_set(err, errno, "fork server: socketpair: %s", strerror(errno));
	child[4] = ch[1];
	p->channel = ch[0];
	if (mcpx_set_nonblock(p->stdin_w) || mcpx_set_nonblock(p->stdout_r) ||
	    mcpx_set_nonblock(p->stderr_r) || (p->channel >= 0 && mcpx_set_nonblock(p->channel)))
		return mcpx_err_set(err, errno, "fork server: O_NONBLOCK: %s", strerror(errno));
	return 0;
}

int mcpx_forkserver_fork(struct mcpx_forkserver *fs, const struct mcpx_limits *lim,
			 struct mcpx_err *err)
{
	struct pending_fork *p = &fs->next;
	int child[5] = {-1, -1, -1, -1, -1}; /* stdin, stdout, stderr, workdir, channel */
	cJSON *req;
	int rc, i;

	if (fs->dead)
		return mcpx_err_set(err, EPIPE, "fork server: the zygote is gone");
	if (!fs->ready)
		return mcpx_err_set(err, EAGAIN, "fork server: the zygote is still preloading");
	if (p->active)
		return mcpx_err_set(err, EBUSY, "fork server: a fork is already pending");
	memset(p, 0, sizeof(*p));
	p->stdin_w = p->stdout_r = p->stderr_r = p->parent_fd = p->channel = -1;
	p->active = true;
	rc = pending_workdir(fs, err);
	if (rc < 0)
		goto out;
	child[3] = rc;
	rc = make_ends(p, lim->channel, child, err);
	if (rc < 0)
		goto out;
	req = fork_request(fs->sb, lim, p->workdir);
	if (!req) {
		rc = mcpx_err_set(err, ENOMEM, "fork server: out of memory");
		goto out;
	}
	rc = send_json(fs, req, child, child[4] >= 0 ? 5 : 4);
	cJSON_Delete(req);
	if (rc < 0)
		rc = mark_dead(fs, err, "cannot reach the zygote");
out:
	/* The zygote has its own copies of the child's ends now. */
	for (i = 0; i < 5; i++)
		mcpx_close_fd(&child[i]);
	if (rc < 0)
		drop_pending(fs);
	return rc < 0 ? rc : 0;
}

int mcpx_forkserver_take(struct mcpx_forkserver *fs, struct mcpx_sandbox_proc *proc,
			 struct mcpx_err *err)
{
	struct pending_fork *p = &fs->next;
	int rc;

	mcpx_sandbox_proc_reset(proc);
	if (!p->active)
		return mcpx_err_set(err, ENOENT, "fork server: no fork was asked for");
	settle(fs);
	if (!p->pid) {
		rc = mcpx_err_set(err, p->err ? p->err : EIO, "fork server: the fork failed: %s",
				  strerror(p->err ? p->err : EIO));
		drop_pending(fs);
		return rc;
	}
	proc->run_uid = fs->sb->run_uid;
	/* The run before this one is gone by now: what it changed above the
	 * workdir is put back before this run's code arrives. */
	rc = mcpx_dirguards_repair(&fs->guards, err);
	if (!rc)
		rc = mcpx_sandbox_adopt(proc, p->pid, reap_via_zygote, fs, err);
	if (rc < 0) {
		int st;
		struct rusage ru;

		/* Cannot supervise it: end it before anything runs. */
		(void)kill(p->pid, SIGKILL);
		(void)reap_via_zygote(fs, p->pid, &st, &ru);
		drop_pending(fs);
		return rc;
	}
	memcpy(proc->workdir, p->workdir, sizeof(proc->workdir));
	proc->parent_fd = p->parent_fd;
	proc->stdin_fd = p->stdin_w;
	proc->stdout_fd = p->stdout_r;
	proc->stderr_fd = p->stderr_r;
	proc->channel_fd = p->channel;
	p->stdin_w = p->stdout_r = p->stderr_r = p->parent_fd = p->channel = -1;
	p->workdir[0] = '\0';
	p->active = false;
	return 0;
}

bool mcpx_forkserver_pending(const struct mcpx_forkserver *fs)
{
	return fs && fs->next.active;
}

bool mcpx_forkserver_answered(struct mcpx_forkserver *fs)
{
	struct pollfd pfd = {.fd = fs->ctl, .events = POLLIN};

	if (!fs->next.active || fs->next.answered || fs->dead)
		return true;
	return poll(&pfd, 1, 0) != 0;
}

int mcpx_forkserver_reap(struct mcpx_forkserver *fs, pid_t pid, int *status, struct rusage *ru)
{
	return reap_via_zygote(fs, pid, status, ru);
}

/* ---- self-test ---------------------------------------------------------- */

/* Hands a forked child the probe the way the executor hands it a run: wait
 * for its ready byte, main.py, then header, code and stdin; the byte that
 * says it has the whole code is taken off its output here. */
static int feed_probe(void *ctx, struct mcpx_sandbox_proc *proc, const char *code,
		      size_t code_len, const char *input, size_t input_len, struct mcpx_err *err)
{
	struct mcpx_forkserver *fs = ctx;
	struct pollfd pfd = {.fd = proc->stdout_fd, .events = POLLIN};
	char hdr[64], marker = 1;
	size_t hlen = mcpx_warm_header(hdr, sizeof(hdr), code_len, 10);
	int rc;

	if (poll(&pfd, 1, ANSWER_TIMEOUT_MS) != 1 || read(proc->stdout_fd, &marker, 1) != 1 ||
	    marker != MCPX_WARM_READY)
		return mcpx_err_set(err, EPERM, "fork server self-test: the child never became ready");
	rc = mcpx_sandbox_write_main(fs->sb, proc, code, code_len, err);
	if (rc)
		return rc;
	/* Header, probe and its input fit the pipe buffer together. */
	if (!hlen || write(proc->stdin_fd, hdr, hlen) != (ssize_t)hlen ||
	    write(proc->stdin_fd, code, code_len) != (ssize_t)code_len ||
	    write(proc->stdin_fd, input, input_len) != (ssize_t)input_len)
		return mcpx_err_set(err, EIO, "fork server self-test: cannot feed the probe");
	if (poll(&pfd, 1, ANSWER_TIMEOUT_MS) != 1 || read(proc->stdout_fd, &marker, 1) != 1 ||
	    marker != MCPX_WARM_TAKEN)
		return mcpx_err_set(err, EPERM, "fork server self-test: the child did not take the probe");
	return 0;
}

int mcpx_forkserver_selftest(struct mcpx_forkserver *fs, struct mcpx_err *err)
{
	static const struct mcpx_limits lim = {
	    .cpu_s = 10, .memory_mb = 512, .max_procs = 16, .file_mb = 1, .open_files = 64};
	struct mcpx_sandbox_proc proc;
	int rc;

	rc = mcpx_forkserver_fork(fs, &lim, err);
	if (!rc)
		rc = mcpx_forkserver_take(fs, &proc, err);
	if (!rc)
		rc = mcpx_sandbox_selftest_in(fs->sb, &proc, feed_probe, fs, err);
	return rc;
}

void mcpx_forkserver_stop(struct mcpx_forkserver *fs)
{
	if (!fs)
		return;
	if (fs->next.active) {
		struct mcpx_sandbox_proc proc;

		/* A child nobody will use: adopted only to be ended and reaped. */
		if (mcpx_forkserver_take(fs, &proc, NULL) == 0)
			mcpx_sandbox_cleanup(&proc);
	}
	/* EOF on the control socket ends the zygote's loop; the kill covers a
	 * zygote that is not listening. */
	mcpx_close_fd(&fs->ctl);
	mcpx_sandbox_kill(&fs->zygote);
	(void)mcpx_sandbox_reap(&fs->zygote, NULL, NULL);
	mcpx_sandbox_cleanup(&fs->zygote);
	mcpx_dirguards_close(&fs->guards);
	free(fs);
}
