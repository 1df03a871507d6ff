/*
 * sandbox.h - start one untrusted Python process inside every isolation layer
 * the kernel offers, and tear down everything it started.
 *
 * This is the only module that forks. The parent side is four files:
 * sandbox.c (start-up: layers, paths, the zygote binary, rlimits), spawn.c
 * (prepares a private workdir, pipes and a pidfd, forks, reads the setup
 * verdict), reaper.c (kill, reap, the leader registry) and cleanup.c (the
 * workdir and /dev/shm removed, fds closed). The child side
 * (sandbox_child.c) is one straight-line sequence of async-signal-safe steps
 * ending in execve. The seccomp policy (seccomp_policy.c) is compiled once at
 * start-up; Landlock (landlock.c) is probed once. Nothing here knows about MCP
 * or the event loop: the executor watches the returned fds. The layers the
 * kernel offers (sandbox_layers.h), a run's limits (sandbox_limits.h), its
 * process record and what is done to it once it
 * runs (sandbox_proc.h), and the self-test's probe (sandbox_probe.h) are
 * declared apart and included here.
 */
#ifndef MCPX_SANDBOX_H
#define MCPX_SANDBOX_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#include "err.h"
#include "language.h"
#include "sandbox_layers.h"
#include "sandbox_limits.h"
#include "sandbox_probe.h"
#include "sandbox_proc.h"

#define MCPX_SANDBOX_UID 65532
/* Started as root, each server's runs get a group of their own: this base
 * plus the server's pid. Every file a run creates carries it (a run cannot
 * give a file another group: setgroups(0) left it no other), so what a run
 * put in a host's shared /dev/shm is told apart from the files of another
 * server's runs, which all share the uid 65532. */
#define MCPX_SANDBOX_GID_BASE 0x40000000u

/* A run that may ask the egress broker for something (broker.h) finds its
 * end of the channel at this fd, named by this environment variable. */
#define MCPX_SANDBOX_CHANNEL_FD 4
#define MCPX_SANDBOX_CHANNEL_ENV "MCPX_CHANNEL_FD"

struct mcpx_dirguards;
struct mcpx_reaper;

struct mcpx_sandbox {
	struct mcpx_sandbox_layers layers;
	/* Directories above the workdirs whose metadata a run could change
	 * (the base and its ancestors that the run uid owns or may write):
	 * repaired before every spawn (dirguard.h). Owned; may be empty. */
	struct mcpx_dirguards *guards;
	/* The reaper's state for this server (reaper.h): the cached task count
	 * RLIMIT_NPROC is based on. Owned: made by init, freed by
	 * mcpx_sandbox_free. The registry of run leaders is the process's, not
	 * this object's (reaper.c says why). */
	struct mcpx_reaper *reaper;
	struct sock_fprog filter; /* compiled seccomp BPF; owned */
	struct sock_fprog zygote_filter; /* the same minus the setsid denial; owned */
	char python[4096];        /* absolute interpreter path */
	char zygote[4096];        /* the warm interpreter's binary (mcp-exec-zygote), or "" */
	/* zygote opened O_PATH by the server (as root, before any child drops
	 * its uid): Landlock's rule and the exec use it, so the run uid never
	 * looks the path up. -1 without a zygote; owned (mcpx_sandbox_free). */
	int zygote_fd;
	char runtime_root[4096];  /* the interpreter's prefix when outside /usr etc., else "" */
	const char *runner;       /* the cold run's -c program (runner.h); static storage */
	/* The languages runs may use (language.h); Python alone until
	 * mcpx_sandbox_find_languages. */
	struct mcpx_languages langs;
	char workdir_base[4096];
	/* The kernel beneath (config.h): never AUTO once init has run. How it
	 * was decided, for --check-config ("seen: ...", "configured"). */
	enum mcpx_runtime_class runtime;
	char runtime_why[96];
	/* Why the filesystem view holds or not (--check-config). */
	char fs_view_why[160];
	pid_t server_pid;
	uid_t run_uid;
	gid_t run_gid;
};

/* Probes the layers, compiles the seccomp policy, makes the server itself
 * non-dumpable and a child subreaper. python must be an absolute path;
 * workdir_base an absolute, existing directory (when started as root, uid
 * 65532 needs search permission on it and its parents); it is kept in its
 * canonical form (symlinks resolved), and it and its ancestors that the run
 * uid could change the metadata of are guarded: put back as they are now
 * before every spawn. Call it after the
 * server's long-lived threads exist: the filter denies kill/tkill aimed at
 * every thread id present at that moment (later ones rely on Landlock's
 * signal scope and the uid drop). Never set SIGCHLD to SIG_IGN: that
 * auto-reaps and breaks reap and the pidfd. */
int mcpx_sandbox_init(struct mcpx_sandbox *sb, const char *python, const char *workdir_base,
		      struct mcpx_err *err);
void mcpx_sandbox_free(struct mcpx_sandbox *sb);
/* Rebuilds the seccomp filters with the server's threads as they are now:
 * call after starting worker threads and before the first zygote or run.
 * 0, or -errno with err set (the old filters stay). */
int mcpx_sandbox_refresh_signal_rules(struct mcpx_sandbox *sb, struct mcpx_err *err);

/* The warm interpreter: mcp-exec-zygote, which embeds Debian's libpython.
 * path NULL: the binary next to the running one (/proc/self/exe). Checks
 * that it is an executable file, that the run uid may execute the file
 * itself (its directories need not be searchable: it is opened here and
 * handed on as a descriptor), and that the configured python is the
 * interpreter it embeds (a warm run must behave as a cold one). Keeps its
 * canonical path and an O_PATH descriptor (zygote_fd): the zygote's own
 * Landlock ruleset lets that one file be read and executed. Without it (an
 * error here, with the path, the uid and the cause), no warm mode is
 * possible. */
int mcpx_sandbox_use_zygote(struct mcpx_sandbox *sb, const char *path, struct mcpx_err *err);

/* Repairs the guarded directories above the workdir (a run that failed to
 * start because an earlier one changed them would be the server's fault),
 * creates the workdir, writes the code to main.py and starts the runner
 * (runner.h) on it. With lim->channel, a socketpair is made: the run finds
 * one end at MCPX_SANDBOX_CHANNEL_FD (and the variable
 * MCPX_SANDBOX_CHANNEL_ENV says so), proc->channel_fd is the other
 * (O_NONBLOCK, close-on-exec). The child's stdin is a pipe whose write
 * end is returned (the caller writes stdin data, then closes it; writes to a
 * dead run raise SIGPIPE, so the server must ignore it). On success the
 * process has passed every setup step: a failure in the child is reported
 * here with the step that failed ("sandbox setup failed at step <name>:
 * <strerror>"), never as a run result. A zero field in lim leaves that limit
 * as inherited. The returned fds are O_NONBLOCK and close-on-exec; the pidfd
 * is close-on-exec. Call from a long-lived thread: the child's parent-death
 * signal fires when the forking thread exits. Thread-safe. */
int mcpx_sandbox_spawn(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
		       const char *code, size_t code_len, struct mcpx_sandbox_proc *proc,
		       struct mcpx_err *err);

/* Fills a run's new workdir before its process starts (the run's input
 * files and out/ directory, runfiles.h): spawn calls fn after main.py is
 * written and before the fork. fn returns 0, or -errno with err set, and
 * then spawn fails with that error. */
struct mcpx_workdir_fill {
	int (*fn)(void *ctx, const char *workdir, struct mcpx_err *err);
	void *ctx;
};

/* mcpx_sandbox_spawn, with fill (may be NULL) run on the new workdir. */
int mcpx_sandbox_spawn_filled(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
			      const char *code, size_t code_len,
			      const struct mcpx_workdir_fill *fill, struct mcpx_sandbox_proc *proc,
			      struct mcpx_err *err);

/* mcpx_sandbox_spawn_filled for a run in lang: the code goes to that
 * language's file (main.py, main.sh, main.mjs) and its runtime starts
 * through the same child setup. lang must be available in sb->langs
 * (-ENOEXEC otherwise). */
int mcpx_sandbox_spawn_lang(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
                            enum mcpx_lang lang, const char *code, size_t code_len,
                            const struct mcpx_workdir_fill *fill, struct mcpx_sandbox_proc *proc,
                            struct mcpx_err *err);

/* A bash run started before its call (gate.c): spawn_lang for bash with
 * no code and no files yet; bash starts in every layer and waits at a gate
 * in its workdir. mcpx_sandbox_gate_reached (workdir_fd: the workdir, as
 * mcpx_sandbox_workdir_open gives it) returns 1 and the gate's write end
 * in *gate_fd (the caller owns it) once bash waits there, 0 before.
 * mcpx_sandbox_gate_open then gives it its call: main.sh and fill's files
 * written, and the gate opened (*gate_fd closed) with the line that sets
 * lim's CPU and memory limits as a cold spawn would (lim must not be looser
 * than the limits the bash was spawned with; its process budget stays the
 * one it was spawned with, as a warm interpreter's). On failure the caller
 * kills and cleans up the process; lim, fill and code are only read. */
int mcpx_sandbox_spawn_gated(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
			     struct mcpx_sandbox_proc *proc, struct mcpx_err *err);
int mcpx_sandbox_gate_reached(int workdir_fd, int *gate_fd);
int mcpx_sandbox_gate_open(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
			   const char *code, size_t code_len,
			   const struct mcpx_workdir_fill *fill, int *gate_fd,
			   struct mcpx_sandbox_proc *proc, struct mcpx_err *err);

/* Starts a warm interpreter: the same sandbox, but the zygote binary in
 * its one-run mode (`mcp-exec-zygote once`) and no main.py; it preloads
 * the modules of preload (a resolved list, mcpx_preload_list) and waits
 * for the code on stdin (warm.h). Needs mcpx_sandbox_use_zygote. */
int mcpx_sandbox_spawn_warm(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
			    const char *preload, struct mcpx_sandbox_proc *proc,
			    struct mcpx_err *err);

/* Writes the code to main.py in a warm interpreter's workdir (a cold spawn
 * does this itself), owned by the run's uid. Returns 0 or -errno. */
int mcpx_sandbox_write_main(const struct mcpx_sandbox *sb, const struct mcpx_sandbox_proc *proc,
			    const char *code, size_t code_len, struct mcpx_err *err);

/* Starts the fork server's zygote (`mcp-exec-zygote serve`): like
 * spawn_warm, but with the zygote's seccomp variant and control_fd (one end
 * of a socketpair) as its fd 4. The zygote only preloads and forks; it
 * never runs user code (forkserver.c, src/zygote/). */
int mcpx_sandbox_spawn_zygote(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
			      const char *preload, int control_fd,
			      struct mcpx_sandbox_proc *proc, struct mcpx_err *err);

/* The limits a run of sb gets for lim (what spawn applies): RLIMIT_CORE,
 * MSGQUEUE and MEMLOCK always 0; NPROC as the current task count of the
 * run uid (sb->run_uid) plus the budget; none above the server's own hard
 * limits. Returns the count. */
size_t mcpx_sandbox_rlimits(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
                            struct mcpx_rlimit out[MCPX_MAX_RLIMITS]);

/* True when a run's files are confined to what Landlock's ruleset grants:
 * by Landlock itself or by the filesystem view that replaces it. */
bool mcpx_sandbox_files_confined(const struct mcpx_sandbox *sb);

/* True when a run could read path (taken as written: resolve symlinks and
 * ask again for the target). With Landlock: path lies beneath one of the
 * run's read rules (the runtime's directories, /dev, /proc, ...) or beneath
 * the workdir base, where every run's workdir is (the filesystem view
 * holds less: those rules are its read-only mounts). With neither a run
 * reads whatever the server's uid reads, so always true. */
bool mcpx_sandbox_run_may_read(const struct mcpx_sandbox *sb, const char *path);

/* Decides sb->runtime: configured (not AUTO) as given; AUTO: gVisor when
 * the server sees it (runtime.c says how), else the host. init calls it
 * with AUTO; call it again with the configured value. */
void mcpx_sandbox_set_runtime(struct mcpx_sandbox *sb, enum mcpx_runtime_class configured);

/* True when the runtime replaces the kernel beneath the server (gVisor, a
 * VM): a missing Landlock is then accepted even where it is required. */
bool mcpx_sandbox_landlock_replaced(const struct mcpx_sandbox *sb);

/* Writes, one line each, which layers hold, which are absent and what the
 * runtime replaces (--check-config). */
void mcpx_sandbox_report(const struct mcpx_sandbox *sb, FILE *out);

/* Human-readable list of active layers, e.g. "seccomp landlock(abi=7,net,scope) ...". */
void mcpx_sandbox_describe(const struct mcpx_sandbox *sb, char *buf, size_t len);

#endif
