/*
 * language.c - the runtimes of Python, bash and JavaScript runs: how a run
 * of each starts.
 *
 * What it does: per run it names the file the code goes to and builds the
 * argv; all three are started by the same child setup (sandbox_child.c), so
 * there is no second sandbox. Finding each runtime at start-up and proving
 * it inside the sandbox is language_find.c's.
 *
 * What it does not do: weaken any layer for a language. The one difference
 * is JavaScript's RLIMIT_AS: V8 reserves a 512 MiB code range it never
 * backs, so that reservation is added to the limit (MCPX_NODE_AS_HEADROOM_MB)
 * while V8's heap limit and the run budget keep what Node really uses at
 * MCP_EXEC_MEMORY_MB.
 */
#include "language.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "sandbox.h"

/* Per language: the code's file, and what is put before the version in
 * descriptions. Where a runtime is found and how it is proven is
 * language_find.c's. */
static const struct {
	const char *main_file;
	const char *version_prefix;
} table[MCPX_LANG_COUNT] = {
    [MCPX_LANG_PYTHON] = {"main.py", ""},
    [MCPX_LANG_BASH] = {"main.sh", ""},
    [MCPX_LANG_JAVASCRIPT] = {"main.mjs", "Node.js "},
};

const char *mcpx_lang_main_file(enum mcpx_lang l)
{
	return (unsigned)l < MCPX_LANG_COUNT ? table[l].main_file : "main.py";
}

void mcpx_languages_describe(const struct mcpx_languages *langs, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int l = 0; l < MCPX_LANG_COUNT && o < len; l++) {
		int n;

		if (!langs->rt[l].available)
			continue;
		n = snprintf(buf + o, len - o, "%s%s %s%s%s", o ? ", " : "", mcpx_lang_name(l),
		             table[l].version_prefix[0] ? "(" : "", table[l].version_prefix,
		             langs->rt[l].version);
		if (n < 0)
			break;
		o += (size_t)n;
		if (o < len && table[l].version_prefix[0])
			o += (size_t)snprintf(buf + o, len - o, ")");
	}
}

const char *mcpx_lang_argv(const struct mcpx_sandbox *sb, enum mcpx_lang l,
                           const struct mcpx_limits *lim, char *argv[8], char *scratch,
                           size_t scratch_len)
{
	const char *exe = sb->langs.rt[l].path;
	size_t i = 0;

	switch (l) {
	case MCPX_LANG_BASH:
		/* No -e: as in a terminal, a failed command does not end the
		 * script. No profile or rc file: nothing runs before the code. */
		argv[i++] = (char *)exe;
		argv[i++] = (char *)"--noprofile";
		argv[i++] = (char *)"--norc";
		argv[i++] = (char *)"main.sh";
		break;
	case MCPX_LANG_JAVASCRIPT:
		/* V8's heap gets the run's memory, so a growing heap ends with
		 * V8's own "JavaScript heap out of memory" (limit "memory")
		 * before the address-space limit turns it into an abort at a
		 * random allocation. */
		argv[i++] = (char *)exe;
		if (lim && lim->memory_mb) {
			snprintf(scratch, scratch_len, "--max-old-space-size=%lu", lim->memory_mb);
			argv[i++] = scratch;
		}
		argv[i++] = (char *)"main.mjs";
		break;
	case MCPX_LANG_PYTHON:
	case MCPX_LANG_COUNT:
	default:
		/* -I ignores PYTHON* variables, no user site, no cwd on
		 * sys.path; -u: unbuffered output, so it streams; -B: no .pyc
		 * writes. The runner (runner.h) runs main.py as __main__, as a
		 * warm interpreter does. */
		exe = sb->python;
		argv[i++] = (char *)exe;
		argv[i++] = (char *)"-I";
		argv[i++] = (char *)"-u";
		argv[i++] = (char *)"-B";
		argv[i++] = (char *)"-c";
		argv[i++] = (char *)sb->runner;
		break;
	}
	argv[i] = NULL;
	return exe;
}

void mcpx_lang_adjust_rlimits(enum mcpx_lang l, struct mcpx_rlimit *rl, int n)
{
	if (l != MCPX_LANG_JAVASCRIPT)
		return;
	for (int i = 0; i < n; i++) {
		struct rlimit cur;
		rlim_t add = (rlim_t)MCPX_NODE_AS_HEADROOM_MB << 20;

		if (rl[i].resource != RLIMIT_AS || rl[i].lim.rlim_max == RLIM_INFINITY)
			continue;
		/* Never above the server's own hard limit (the child can only
		 * lower its limits once it dropped privileges). */
		if (getrlimit(RLIMIT_AS, &cur) == 0 && cur.rlim_max != RLIM_INFINITY &&
		    rl[i].lim.rlim_max + add > cur.rlim_max)
			add = cur.rlim_max > rl[i].lim.rlim_max ? cur.rlim_max - rl[i].lim.rlim_max
			                                        : 0;
		rl[i].lim.rlim_cur += add;
		rl[i].lim.rlim_max += add;
	}
}
