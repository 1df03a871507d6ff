/*
 * language.h - the runtimes a run's code may use (Python, bash, Node.js):
 * found once at start-up, proven inside the sandbox, and how each one
 * starts a run.
 *
 * Every language runs through the same sandboxed child (sandbox.h): the
 * same workdir, rlimits, seccomp filter, Landlock ruleset, uid and process
 * group; only the file the code is written to and the argv differ. What
 * differs per language is in one table in language.c. Nothing here is
 * warm: only Python has a warm interpreter (warm_pool.h).
 */
#ifndef MCPX_LANGUAGE_H
#define MCPX_LANGUAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "langset.h"

struct mcpx_sandbox;
struct mcpx_limits;
struct mcpx_rlimit;

/* Address space V8 reserves but never backs: its code range (a 512 MiB
 * PROT_NONE, MAP_NORESERVE mapping, measured with strace on Node 20.20:
 * "Fatal process OOM in Failed to reserve virtual memory for CodeRange"
 * below it) plus alignment slack. A JavaScript run's RLIMIT_AS is
 * MCP_EXEC_MEMORY_MB plus this; its heap is held to MCP_EXEC_MEMORY_MB by
 * --max-old-space-size and the run's resident memory by the run budget,
 * exactly as every other language's (docs/security.md). */
#define MCPX_NODE_AS_HEADROOM_MB 640

/* One runtime, as found at start-up. */
struct mcpx_runtime {
	bool available;
	char path[4096];  /* absolute, canonical: what the child execs */
	char root[4096];  /* its prefix when outside /usr, /bin, /lib*, else "" */
	char version[64]; /* as the runtime reports it inside the sandbox */
	char why[256];    /* when not available: why not */
};

struct mcpx_languages {
	struct mcpx_runtime rt[MCPX_LANG_COUNT];
	unsigned mask; /* bit (1u << lang) per available language */
};

/* The file a run's code is written to in its workdir: main.py, main.sh,
 * main.mjs (a module: import and top-level await work). */
const char *mcpx_lang_main_file(enum mcpx_lang l);

/* Finds the runtimes setting (MCP_EXEC_LANGUAGES) allows, each by its
 * absolute path (Python: the configured interpreter; bash: /usr/bin/bash
 * or /bin/bash; JavaScript: /usr/bin/node, Debian's, before any other node
 * on PATH), and proves each one inside the sandbox by running a program
 * that prints its version under lim (memory, processes, ...), as a run
 * would. With "auto" a runtime that is missing or fails the proof is left
 * out (why says so); one listed by name makes this fail with err set.
 * Python is never left out (the start-up self-test decides whether it
 * runs); a failed proof only leaves its version at "3".
 * Fills sb->langs. Call after mcpx_sandbox_init. Returns 0 or -errno.
 * (language_find.c, which sits above spawn.c.) */
int mcpx_sandbox_find_languages(struct mcpx_sandbox *sb, const char *setting,
                                const struct mcpx_limits *lim, struct mcpx_err *err);

/* "python 3.11.2, bash 5.2.15(1)-release, javascript (Node.js 18.19.0)":
 * the available languages with their versions, for --check-config, the log
 * and exec's description. */
void mcpx_languages_describe(const struct mcpx_languages *langs, char *buf, size_t len);

/* --- for spawn.c ----------------------------------------------------------- */

/* The argv of a run of lang (NULL-terminated, at most 8 entries), whose
 * strings live in sb, in static storage or in scratch (at least 64 bytes,
 * the caller's). Returns the path to exec. */
const char *mcpx_lang_argv(const struct mcpx_sandbox *sb, enum mcpx_lang l,
                           const struct mcpx_limits *lim, char *argv[8], char *scratch,
                           size_t scratch_len);

/* Raises a JavaScript run's RLIMIT_AS by MCPX_NODE_AS_HEADROOM_MB (see
 * above); every other language's limits stay as they are. */
void mcpx_lang_adjust_rlimits(enum mcpx_lang l, struct mcpx_rlimit *rl, int n);

#endif
