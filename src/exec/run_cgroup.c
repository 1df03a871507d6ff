/*
 * run_cgroup.c - per-run cgroups v2 (run_cgroup.h).
 *
 * What it does: finds the server's own cgroup v2 directory, checks that it
 * is writable and offers the memory and pids controllers, and prepares it
 * once (processes into a leaf, controllers enabled for the children, a
 * parent for the runs). Per run it makes a child cgroup with the run's
 * limits, moves processes into it, kills it through cgroup.kill, reads its
 * usage and removes it (a removal that must wait for the last exits waits
 * on a worker thread, not on the loop). Every file is opened relative to
 * the run's directory fd, so a rename elsewhere in the hierarchy cannot
 * redirect a write.
 *
 * What it does not do: watch usage over time or decide what a number means
 * (run_budget.c), or touch cgroup v1 hierarchies (a hybrid host's memory
 * controller lives there; then this module reports "not usable" and the
 * watchdog does the work).
 */
#include "run_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "loop_guard.h"
#include "offload.h"

/* /proc/self/mountinfo of a busy host is large; nothing legitimate is near
 * this, and the cap keeps a bad read from growing without bound. */
#define PROC_TEXT_MAX (4u << 20)
/* Rounds of moving the server's processes out of its cgroup (a process may
 * fork while we move). */
#define MOVE_ROUNDS 16
/* How long removal waits for the last exits after cgroup.kill (1 ms steps). */
#define REMOVE_TRIES 200

static const char leaf_name[] = "mcp-exec-server";

/* Reads a whole file into b (capped). Returns 0 or -errno. */
static int read_text(int dirfd, const char *path, struct mcpx_buf *b)
{
	char chunk[8192];
	ssize_t n;
	int fd, rc = 0;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		rc = mcpx_buf_add(b, chunk, (size_t)n);
		if (rc < 0)
			break;
	}
	close(fd);
	return rc;
}

static int write_text(int dirfd, const char *name, const char *text)
{
	size_t len = strlen(text);
	ssize_t n;
	int fd, rc = 0;

	fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = write(fd, text, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		rc = -errno;
	else if ((size_t)n != len)
		rc = -EIO;
	close(fd);
	return rc;
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

static bool has_token(const char *csv, const char *tok)
{
	size_t n = strlen(tok);

	for (const char *p = csv; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, tok, n) && (p[n] == ',' || p[n] == '\0' || p[n] == ' '))
			return true;
	return false;
}

/* One mountinfo line: is it a cgroup2 mount whose root holds path? Fills
 * mnt (unescaped mount point) and the part of path below the root. */
static int match_mount(char *line, const char *path, char *dir, size_t len)
{
	char *f[6], *sep, *save = NULL, *fstype, *rest;
	size_t rl;
	int i;

	sep = strstr(line, " - ");
	if (!sep)
		return -ENOENT;
	*sep = '\0';
	fstype = sep + 3;
	if (strncmp(fstype, "cgroup2 ", 8) != 0)
		return -ENOENT;
	for (i = 0; i < 6; i++) {
		f[i] = strtok_r(i ? NULL : line, " ", &save);
		if (!f[i])
			return -ENOENT;
	}
	unescape(f[3]);
	unescape(f[4]);
	rl = strcmp(f[3], "/") ? strlen(f[3]) : 0;
	if (strncmp(path, f[3], rl) != 0 || (path[rl] != '/' && path[rl] != '\0'))
		return -ENOENT;
	rest = (char *)path + rl;
	if (has_token(f[5], "ro"))
		return -EROFS;
	if ((size_t)snprintf(dir, len, "%s%s", f[4], strcmp(rest, "/") ? rest : "") >= len)
		return -ENAMETOOLONG;
	return 0;
}

int mcpx_cgroup_locate(const char *cgroup_text, const char *mountinfo_text, char *dir, size_t len)
{
	const char *p = cgroup_text;
	char path[PATH_MAX], line[8192];
	int rc = -ENOENT;

	/* The unified hierarchy is the line with id 0 and no controllers. */
	while (p && strncmp(p, "0::", 3) != 0)
		p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL;
	if (!p)
		return -ENOENT;
	p += 3;
	if ((size_t)(strcspn(p, "\n")) >= sizeof(path))
		return -ENAMETOOLONG;
	snprintf(path, sizeof(path), "%.*s", (int)strcspn(p, "\n"), p);
	for (p = mountinfo_text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		size_t l = strcspn(p, "\n");

		if (l >= sizeof(line))
			continue;
		memcpy(line, p, l);
		line[l] = '\0';
		rc = match_mount(line, path, dir, len);
		if (rc != -ENOENT)
			return rc;
	}
	return -ENOENT;
}

/* ---- start-up ----------------------------------------------------------- */

static int locate_own(struct mcpx_cgroup_env *env)
{
	struct mcpx_buf cg, mi;
	int rc;

	mcpx_buf_init(&cg, PROC_TEXT_MAX);
	mcpx_buf_init(&mi, PROC_TEXT_MAX);
	rc = read_text(AT_FDCWD, "/proc/self/cgroup", &cg);
	if (!rc)
		rc = read_text(AT_FDCWD, "/proc/self/mountinfo", &mi);
	if (!rc)
		rc = mcpx_cgroup_locate(mcpx_buf_str(&cg), mcpx_buf_str(&mi), env->own,
		                        sizeof(env->own));
	if (rc == -ENOENT)
		snprintf(env->why, sizeof(env->why), "the server is in no cgroup v2 hierarchy");
	else if (rc == -EROFS)
		snprintf(env->why, sizeof(env->why),
		         "the cgroup v2 filesystem is mounted read-only");
	else if (rc)
		snprintf(env->why, sizeof(env->why), "cannot read the server's cgroup: %s",
		         strerror(-rc));
	mcpx_buf_free(&cg);
	mcpx_buf_free(&mi);
	return rc;
}

/* The controllers the per-run limits need, offered to the server's cgroup,
 * and write access to what setup changes. */
static int check_own(struct mcpx_cgroup_env *env)
{
	static const char *const need[] = {"cgroup.procs", "cgroup.subtree_control"};
	struct mcpx_buf b;
	int rc;

	char path[PATH_MAX + 32];

	mcpx_buf_init(&b, 4096);
	snprintf(path, sizeof(path), "%s/cgroup.controllers", env->own);
	rc = read_text(AT_FDCWD, path, &b);
	if (rc == 0) {
		const char *s = mcpx_buf_str(&b);

		if (!strstr(s, "memory") || !strstr(s, "pids")) {
			snprintf(env->why, sizeof(env->why),
			         "%.120s offers no memory and pids controllers (controllers: %.*s)",
			         env->own,
			         s[0] ? (int)(strcspn(s, "\n") < 40 ? strcspn(s, "\n") : 40) : 4,
			         s[0] ? s : "none");
			rc = -ENOTSUP;
		}
	} else {
		snprintf(env->why, sizeof(env->why), "cannot read %.150s/cgroup.controllers: %s",
		         env->own, strerror(-rc));
	}
	for (size_t i = 0; rc == 0 && i < sizeof(need) / sizeof(need[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", env->own, need[i]);
		if (access(env->own, W_OK) < 0 || access(path, W_OK) < 0) {
			snprintf(env->why, sizeof(env->why),
			         "%.180s is not writable (not delegated)", env->own);
			rc = -EACCES;
		}
	}
	mcpx_buf_free(&b);
	return rc;
}

/* Moves every process of from into to, repeating while new ones appear. */
static int move_all(int from, int to)
{
	struct mcpx_buf b;
	int rc = 0;

	mcpx_buf_init(&b, PROC_TEXT_MAX);
	for (int round = 0; round < MOVE_ROUNDS; round++) {
		const char *p;
		bool any = false;

		mcpx_buf_reset(&b);
		rc = read_text(from, "cgroup.procs", &b);
		if (rc)
			break;
		for (p = mcpx_buf_str(&b); *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0)) {
			char pid[24];

			snprintf(pid, sizeof(pid), "%.*s", (int)strcspn(p, "\n"), p);
			rc = write_text(to, "cgroup.procs", pid);
			if (rc && rc != -ESRCH)
				goto out;
			any = true;
		}
		rc = 0;
		if (!any)
			break;
	}
out:
	mcpx_buf_free(&b);
	return rc;
}

static int open_dir(const char *path)
{
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* A non-root cgroup with processes of its own cannot give its children
 * controllers: its processes move into a leaf first. The root cgroup (no
 * cgroup.type file) is exempt. Then the runs' parent gets the controllers. */
static int setup_subtree(struct mcpx_cgroup_env *env)
{
	int own = -1, leaf = -1, root = -1, rc;

	own = open_dir(env->own);
	if (own < 0)
		return -errno;
	if (faccessat(own, "cgroup.type", F_OK, 0) == 0) {
		if (mkdirat(own, leaf_name, 0755) < 0 && errno != EEXIST) {
			rc = -errno;
			goto out;
		}
		leaf = openat(own, leaf_name, O_PATH | O_DIRECTORY | O_CLOEXEC);
		rc = leaf < 0 ? -errno : move_all(own, leaf);
		if (rc)
			goto out;
	}
	rc = write_text(own, "cgroup.subtree_control", "+memory +pids");
	if (rc)
		goto out;
	if ((size_t)snprintf(env->root, sizeof(env->root), "%s/mcp-exec-%d", env->own,
	                     (int)getpid()) >= sizeof(env->root)) {
		rc = -ENAMETOOLONG;
		goto out;
	}
	if (mkdir(env->root, 0755) < 0 && errno != EEXIST) {
		rc = -errno;
		goto out;
	}
	env->set_up = true;
	root = open_dir(env->root);
	rc = root < 0 ? -errno : write_text(root, "cgroup.subtree_control", "+memory +pids");
out:
	if (own >= 0)
		close(own);
	if (leaf >= 0)
		close(leaf);
	if (root >= 0)
		close(root);
	return rc;
}

int mcpx_cgroup_env_init(struct mcpx_cgroup_env *env, bool setup)
{
	int rc;

	memset(env, 0, sizeof(*env));
	if (locate_own(env) || check_own(env))
		return 0;
	if (!setup) {
		env->usable = true;
		if ((size_t)snprintf(env->root, sizeof(env->root), "%s/mcp-exec-<pid>", env->own) >=
		    sizeof(env->root))
			env->root[0] = '\0';
		return 0;
	}
	rc = setup_subtree(env);
	if (rc) {
		snprintf(env->why, sizeof(env->why),
		         "cannot prepare %.150s for per-run cgroups: %s", env->own, strerror(-rc));
		mcpx_cgroup_env_free(env);
		return 0;
	}
	env->usable = true;
	return 0;
}

void mcpx_cgroup_env_free(struct mcpx_cgroup_env *env)
{
	if (env->set_up && env->root[0])
		(void)rmdir(env->root);
	env->set_up = false;
	env->usable = false;
}

/* ---- per run ------------------------------------------------------------ */

/* Makes the cgroup directory parent/name and opens it. Returns 0 or -errno
 * with err set; on failure nothing is left behind. */
static int make_cgroup(const char *parent, const char *name, struct mcpx_run_cgroup *cg,
                       struct mcpx_err *err)
{
	int rc;

	cg->dirfd = -1;
	if ((size_t)snprintf(cg->path, sizeof(cg->path), "%s/%s", parent, name) >=
	    sizeof(cg->path)) {
		cg->path[0] = '\0';
		return mcpx_err_set(err, ENAMETOOLONG, "cgroup: path too long");
	}
	if (mkdir(cg->path, 0755) < 0) {
		rc = mcpx_err_set(err, errno, "cgroup: mkdir %s: %s", cg->path, strerror(errno));
		cg->path[0] = '\0';
		return rc;
	}
	cg->dirfd = open_dir(cg->path);
	if (cg->dirfd < 0) {
		rc = mcpx_err_set(err, errno, "cgroup: open %s: %s", cg->path, strerror(errno));
		(void)rmdir(cg->path);
		cg->path[0] = '\0';
		return rc;
	}
	return 0;
}

int mcpx_cgroup_run_create_nested(const struct mcpx_run_cgroup *parent, const char *name,
                                  struct mcpx_run_cgroup *cg, struct mcpx_err *err)
{
	cg->dirfd = -1;
	cg->path[0] = '\0';
	if (parent->dirfd < 0)
		return mcpx_err_set(err, EBADF, "cgroup: the caller's run has no cgroup");
	/* No controllers of its own (its parent has processes, so it may not
	 * give any): its memory and tasks are charged to the parent's. */
	return make_cgroup(parent->path, name, cg, err);
}

int mcpx_cgroup_run_create(const struct mcpx_cgroup_env *env, const char *name,
                           uint64_t memory_bytes, unsigned pids_max, struct mcpx_run_cgroup *cg,
                           struct mcpx_err *err)
{
	char num[32];
	int rc;

	rc = make_cgroup(env->root, name, cg, err);
	if (rc)
		return rc;
	if (memory_bytes) {
		snprintf(num, sizeof(num), "%" PRIu64, memory_bytes);
		rc = write_text(cg->dirfd, "memory.max", num);
		/* No swap to escape to, and an OOM takes the whole run. Both
		 * files may be missing (no swap accounting, old kernels). */
		if (!rc && (rc = write_text(cg->dirfd, "memory.swap.max", "0")) == -ENOENT)
			rc = 0;
		if (!rc && (rc = write_text(cg->dirfd, "memory.oom.group", "1")) == -ENOENT)
			rc = 0;
	}
	if (!rc && pids_max) {
		snprintf(num, sizeof(num), "%u", pids_max);
		rc = write_text(cg->dirfd, "pids.max", num);
	}
	if (rc) {
		rc = mcpx_err_set(err, -rc, "cgroup: cannot set the limits of %s: %s", cg->path,
		                  strerror(-rc));
		goto fail;
	}
	return 0;
fail:
	if (cg->dirfd >= 0)
		close(cg->dirfd);
	cg->dirfd = -1;
	(void)rmdir(cg->path);
	cg->path[0] = '\0';
	return rc;
}

int mcpx_cgroup_run_add(struct mcpx_run_cgroup *cg, pid_t pid)
{
	char num[24];

	if (cg->dirfd < 0)
		return -EBADF;
	snprintf(num, sizeof(num), "%d", (int)pid);
	return write_text(cg->dirfd, "cgroup.procs", num);
}

int mcpx_cgroup_run_kill(struct mcpx_run_cgroup *cg)
{
	int rc;

	if (cg->dirfd < 0)
		return -EBADF;
	rc = write_text(cg->dirfd, "cgroup.kill", "1");
	return rc == -ENOENT ? -ENOTSUP : rc;
}

/* The number after "key " in a flat-keyed file ("oom_kill 3\n"). */
static uint64_t keyed(const char *text, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
	return 0;
}

static uint64_t read_u64(int dirfd, const char *name, int *found)
{
	struct mcpx_buf b;
	uint64_t v = 0;

	mcpx_buf_init(&b, 4096);
	if (read_text(dirfd, name, &b) == 0) {
		v = strtoull(mcpx_buf_str(&b), NULL, 10);
		(*found)++;
	}
	mcpx_buf_free(&b);
	return v;
}

static uint64_t read_keyed(int dirfd, const char *name, const char *key, int *found)
{
	struct mcpx_buf b;
	uint64_t v = 0;

	mcpx_buf_init(&b, 16384);
	if (read_text(dirfd, name, &b) == 0) {
		v = keyed(mcpx_buf_str(&b), key);
		(*found)++;
	}
	mcpx_buf_free(&b);
	return v;
}

int mcpx_cgroup_run_usage(const struct mcpx_run_cgroup *cg, struct mcpx_cgroup_usage *u)
{
	int found = 0;

	memset(u, 0, sizeof(*u));
	if (cg->dirfd < 0)
		return -EBADF;
	u->memory_bytes = read_u64(cg->dirfd, "memory.current", &found);
	u->memory_peak_bytes = read_u64(cg->dirfd, "memory.peak", &found);
	u->oom_kills = read_keyed(cg->dirfd, "memory.events", "oom_kill", &found);
	u->cpu_usec = read_keyed(cg->dirfd, "cpu.stat", "usage_usec", &found);
	u->populated = read_keyed(cg->dirfd, "cgroup.events", "populated", &found) != 0;
	return found ? 0 : -EIO;
}

long mcpx_cgroup_run_pids(const struct mcpx_run_cgroup *cg, pid_t *pids, size_t max)
{
	struct mcpx_buf b;
	size_t n = 0;
	int rc;

	if (cg->dirfd < 0)
		return -EBADF;
	mcpx_buf_init(&b, PROC_TEXT_MAX);
	rc = read_text(cg->dirfd, "cgroup.procs", &b);
	for (const char *p = mcpx_buf_str(&b); !rc && *p && n < max;
	     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "")
		pids[n++] = (pid_t)strtol(p, NULL, 10);
	mcpx_buf_free(&b);
	return rc ? rc : (long)n;
}

/* One try: 0 when the cgroup is gone (or cannot be removed: then it is
 * given up, as the waiting removal gives it up), -EBUSY while something
 * is still inside (what is left is killed). */
static int try_remove(struct mcpx_run_cgroup *cg)
{
	if (rmdir(cg->path) < 0 && errno == EBUSY) {
		(void)mcpx_cgroup_run_kill(cg);
		return -EBUSY;
	}
	close(cg->dirfd);
	cg->dirfd = -1;
	cg->path[0] = '\0';
	return 0;
}

void mcpx_cgroup_run_remove(struct mcpx_run_cgroup *cg)
{
	if (cg->dirfd < 0)
		return;
	/* The run was reaped before this; cgroup.kill covers what a kernel
	 * without it, or a process that was still exiting, left. */
	for (int i = 0; i < REMOVE_TRIES; i++) {
		if (try_remove(cg) == 0)
			return;
		mcpx_wait_sleep(1000000L, "a run's cgroup to empty");
	}
	close(cg->dirfd);
	cg->dirfd = -1;
	cg->path[0] = '\0';
}

/* A removal that has to wait, on the worker: the cgroup is its own. */
struct removal {
	struct mcpx_offload_task task; /* first: the task is the struct */
	struct mcpx_run_cgroup cg;
};

static void removal_work(struct mcpx_offload_task *t)
{
	mcpx_cgroup_run_remove(&((struct removal *)t)->cg);
}

static void removal_done(struct mcpx_offload_task *t)
{
	struct removal *r = (struct removal *)t;

	/* The worker is going away: removed here (teardown, off the loop). */
	if (t->cancelled)
		mcpx_cgroup_run_remove(&r->cg);
	free(r);
}

void mcpx_cgroup_run_remove_soon(struct mcpx_offload *worker, struct mcpx_run_cgroup *cg)
{
	struct removal *r;

	if (cg->dirfd < 0 || try_remove(cg) == 0)
		return;
	r = worker ? calloc(1, sizeof(*r)) : NULL;
	if (!r) {
		mcpx_cgroup_run_remove(cg);
		return;
	}
	r->cg = *cg;
	cg->dirfd = -1;
	cg->path[0] = '\0';
	r->task.work = removal_work;
	r->task.done = removal_done;
	mcpx_offload_submit(worker, &r->task);
}
