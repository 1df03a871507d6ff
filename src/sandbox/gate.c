/*
 * gate.c - a bash run started before its call: the runtime has started
 * inside every layer of the sandbox and waits at a gate for its script.
 *
 * How bash is held: it starts as a cold run does (`bash --noprofile --norc
 * main.sh` in its workdir) with one more variable, BASH_ENV naming a FIFO
 * in the workdir. A non-interactive bash reads the file BASH_ENV names
 * after its own start-up and before it opens its script, and opening a
 * FIFO for reading blocks until a writer opens it. So the process is
 * loaded, linked and initialised, and waits in open(2) holding nothing of
 * any call. When the call comes the server writes main.sh and the input
 * files, unlinks the FIFO, writes one line through it and closes it: bash
 * runs that line, which lowers its CPU and memory limits to the call's
 * (`ulimit`: a process may always lower its own; the server could not set
 * them from outside without CAP_SYS_RESOURCE) and unsets BASH_ENV (so no
 * shell the script starts reads the gate again, and the script sees no
 * BASH_ENV); a second line resets what a cold bash would show differently
 * at its first line ($SECONDS, counted from bash's start, that is from its
 * preparation; $_, which the first line leaves at its last word); then bash
 * runs its script as any cold run would. What still differs is listed in
 * docs/security.md ("Can the script tell?").
 *
 * Why bash reaches the gate before it is released: the server opens the
 * write end with O_NONBLOCK, which fails with ENXIO until a reader is
 * inside open(2); once it succeeds both ends are open and bash waits in
 * read(2), so the line written later is never lost with the pipe.
 *
 * All of the gate is here: the spawn of a held bash (spawn.c's cold
 * sequence, told to add the gate's variable and make the FIFO instead of
 * the script: spawn_held.h), the try that finds it waiting, and the call
 * handed over (the script and files written, the line computed from the
 * same rlimits a cold spawn sets, the gate released).
 *
 * What it does not do: decide when a bash is prepared (the executor's
 * bash_pool.c), or fork (spawn.c).
 */
#include "gate.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "spawn_held.h"

static int open_workdir(const char *workdir)
{
	int dfd = open(workdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	return dfd < 0 ? -errno : dfd;
}

int mcpx_gate_create(const char *workdir, bool chown_to, uid_t uid, gid_t gid)
{
	int dfd = open_workdir(workdir), rc = 0;

	if (dfd < 0)
		return dfd;
	if (mkfifoat(dfd, MCPX_GATE_NAME, 0600) < 0)
		rc = -errno;
	else if (chown_to && fchownat(dfd, MCPX_GATE_NAME, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		rc = -errno;
	close(dfd);
	return rc;
}

int mcpx_gate_reached(int workdir_fd, int *gate_fd)
{
	/* O_NOFOLLOW: the name is the FIFO the server made (nobody else can
	 * write this workdir before the run is released). */
	int fd = openat(workdir_fd, MCPX_GATE_NAME, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return errno == ENXIO ? 0 : -errno;
	*gate_fd = fd;
	return 1;
}

int mcpx_gate_unlink(const char *workdir)
{
	int dfd = open_workdir(workdir), rc = 0;

	if (dfd < 0)
		return dfd;
	if (unlinkat(dfd, MCPX_GATE_NAME, 0) < 0)
		rc = -errno;
	close(dfd);
	return rc;
}

/* ulimit's value: seconds for -t, KiB for -v. */
static void put_limit(char *out, size_t len, rlim_t v, rlim_t unit)
{
	if (v == RLIM_INFINITY)
		snprintf(out, len, "unlimited");
	else
		snprintf(out, len, "%llu", (unsigned long long)(v / unit));
}

int mcpx_gate_line(char *buf, size_t len, const struct mcpx_rlimit *rl, int n)
{
	char soft[2][24] = {"", ""}, hard[2][24] = {"", ""}, opts[2][64] = {"", ""};
	size_t used;
	int w;

	for (int i = 0; i < n; i++) {
		int k = rl[i].resource == RLIMIT_CPU ? 0 : rl[i].resource == RLIMIT_AS ? 1 : -1;
		rlim_t unit = k == 0 ? 1 : 1024;

		if (k < 0)
			continue;
		put_limit(soft[k], sizeof(soft[k]), rl[i].lim.rlim_cur, unit);
		put_limit(hard[k], sizeof(hard[k]), rl[i].lim.rlim_max, unit);
	}
	for (int h = 0; h < 2; h++) {
		char(*v)[24] = h ? hard : soft;

		snprintf(opts[h], sizeof(opts[h]), "%s%s%s%s", v[0][0] ? " -t " : "", v[0],
		         v[1][0] ? " -v " : "", v[1]);
	}
	/* Soft first: a hard limit below the current soft one is refused.
	 * Lowering its own limits cannot fail; if it ever did, the run ends
	 * before its script rather than run with the looser ones. */
	if (opts[0][0])
		w = snprintf(buf, len,
		             "ulimit -S%s && ulimit -H%s && unset BASH_ENV || kill -KILL $$\n",
		             opts[0], opts[1]);
	else
		w = snprintf(buf, len, "unset BASH_ENV || kill -KILL $$\n");
	used = w < 0 ? len : (size_t)w;
	return used < len ? (int)used : -ENAMETOOLONG;
}

int mcpx_gate_fresh_line(char *buf, size_t len, const char *bash_path)
{
	size_t used;
	int w = snprintf(buf, len, "SECONDS=0; : '");

	if (w < 0 || (size_t)w >= len)
		return -ENAMETOOLONG;
	used = (size_t)w;
	for (const char *p = bash_path; *p; p++) {
		/* A quote ends the quoted word, is escaped, and opens it again. */
		const char *piece = *p == '\'' ? "'\\''" : NULL;
		size_t n = piece ? strlen(piece) : 1;

		if (used + n + 3 > len)
			return -ENAMETOOLONG;
		if (piece)
			memcpy(buf + used, piece, n);
		else
			buf[used] = *p;
		used += n;
	}
	memcpy(buf + used, "'\n", 3);
	return (int)(used + 2);
}

int mcpx_gate_release(int *gate_fd, const char *line, size_t line_len)
{
	ssize_t w;
	int rc = 0;

	/* Below PIPE_BUF: one write, never partial. A bash that died while it
	 * waited gives EPIPE (the server ignores SIGPIPE). */
	do
		w = write(*gate_fd, line, line_len);
	while (w < 0 && errno == EINTR);
	if (w != (ssize_t)line_len)
		rc = w < 0 ? -errno : -EIO;
	close(*gate_fd);
	*gate_fd = -1;
	return rc;
}

/* ---- the prepared bash, for the executor (sandbox.h) ---------------------- */

static int make_gate(const struct mcpx_sandbox *sb, const char *workdir, struct mcpx_err *err)
{
	int rc = mcpx_gate_create(workdir, sb->layers.uid_drop, sb->run_uid, sb->run_gid);

	return rc ? mcpx_err_set(err, -rc, "sandbox: cannot make the gate: %s", strerror(-rc)) : 0;
}

/* Gone before the script runs: the gate's line unsets it. */
static const struct mcpx_spawn_hold gate_hold = {MCPX_GATE_ENV, make_gate};

int mcpx_sandbox_spawn_gated(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
                             struct mcpx_sandbox_proc *proc, struct mcpx_err *err)
{
	return mcpx_spawn_held(sb, lim, MCPX_LANG_BASH, &gate_hold, proc, err);
}

int mcpx_sandbox_gate_reached(int workdir_fd, int *gate_fd)
{
	return mcpx_gate_reached(workdir_fd, gate_fd);
}

int mcpx_sandbox_gate_open(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
                           const char *code, size_t code_len, const struct mcpx_workdir_fill *fill,
                           int *gate_fd, struct mcpx_sandbox_proc *proc, struct mcpx_err *err)
{
	struct mcpx_rlimit rl[MCPX_MAX_RLIMITS];
	char line[PIPE_BUF];
	int rc, n, line_len, fresh_len;

	/* The name first, so an input file may carry it. */
	rc = mcpx_gate_unlink(proc->workdir);
	if (rc)
		return mcpx_err_set(err, -rc, "sandbox: cannot remove the gate: %s", strerror(-rc));
	rc = mcpx_spawn_write_code(sb, proc, MCPX_LANG_BASH, code, code_len, err);
	if (!rc && fill)
		rc = fill->fn(fill->ctx, proc->workdir, err);
	if (rc)
		return rc;
	/* The limits a cold run gets, set by bash on itself. Its RLIMIT_CPU
	 * counts from its start, as a cold run's counts its setup. */
	n = mcpx_spawn_rlimits(sb, MCPX_LANG_BASH, lim, rl);
	line_len = mcpx_gate_line(line, sizeof(line), rl, n);
	if (line_len < 0)
		return mcpx_err_set(err, -line_len, "sandbox: the gate's line is too long");
	/* Then what a cold bash would show at its script's first line: $SECONDS
	 * counted from now, $_ the path it was started with (docs/security.md,
	 * "Can the script tell?"). The whole is one write below PIPE_BUF. */
	fresh_len = mcpx_gate_fresh_line(line + line_len, sizeof(line) - (size_t)line_len,
	                                 sb->langs.rt[MCPX_LANG_BASH].path);
	if (fresh_len < 0)
		return mcpx_err_set(err, -fresh_len, "sandbox: the gate's line is too long");
	line_len += fresh_len;
	clock_gettime(CLOCK_REALTIME_COARSE, &proc->started);
	rc = mcpx_gate_release(gate_fd, line, (size_t)line_len);
	return rc ? mcpx_err_set(err, -rc, "sandbox: the prepared bash is gone: %s", strerror(-rc))
	          : 0;
}
