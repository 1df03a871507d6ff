/*
 * language_find.c - the runtimes of exec's languages, found and proven at
 * start-up: each runtime MCP_EXEC_LANGUAGES allows resolved to one absolute
 * path (never a PATH lookup at run time: what a run execs is decided once),
 * then a tiny program run through the real sandbox with a run's limits,
 * which both proves the runtime starts there (rlimits, seccomp, Landlock)
 * and gives its version.
 *
 * It sits above the spawn path it proves with (spawn.c) and the per-run
 * side of a language (language.c); it starts nothing after start-up.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fdutil.h"
#include "language.h"
#include "sandbox.h"

/* How long a runtime may take to print its version at start-up (a cold
 * Node start is ~40 ms; a loaded machine is far slower). */
#define PROVE_TIMEOUT_MS 20000

/* Per language: where its runtime may be, and the program that proves it
 * (it prints the version and nothing else). */
static const struct {
	const char *const candidates[3]; /* tried in order; then PATH for path_name */
	const char *path_name;           /* looked up on the server's PATH, or NULL */
	const char *prove;
} table[MCPX_LANG_COUNT] = {
    [MCPX_LANG_PYTHON] = {{NULL},
                          NULL,
                          "import platform; print(platform.python_version(), end='')"},
    [MCPX_LANG_BASH] = {{"/usr/bin/bash", "/bin/bash", NULL}, NULL, "printf %s \"$BASH_VERSION\""},
    /* Debian's nodejs package installs /usr/bin/node (and the nodejs
     * name on older releases); any other node (a toolchain's, nvm's) only
     * when neither exists. */
    [MCPX_LANG_JAVASCRIPT] = {{"/usr/bin/node", "/usr/bin/nodejs", NULL},
                              "node",
                              "process.stdout.write(process.versions.node)"},
};

static bool executable_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The first candidate that is an executable file, else the first `name` on
 * the server's PATH (absolute entries only), canonical. */
static int locate(enum mcpx_lang l, char *out, size_t len)
{
	char real[PATH_MAX], dir[PATH_MAX];
	const char *path, *p, *end;

	for (size_t i = 0; table[l].candidates[i]; i++) {
		if (executable_file(table[l].candidates[i]) &&
		    realpath(table[l].candidates[i], real) && strlen(real) < len) {
			strcpy(out, real);
			return 0;
		}
	}
	path = table[l].path_name ? getenv("PATH") : NULL;
	for (p = path; p && *p; p = *end ? end + 1 : end) {
		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		if (*p != '/' || (size_t)snprintf(dir, sizeof(dir), "%.*s/%s", (int)(end - p), p,
		                                  table[l].path_name) >= sizeof(dir))
			continue;
		if (executable_file(dir) && realpath(dir, real) && strlen(real) < len) {
			strcpy(out, real);
			return 0;
		}
	}
	return -ENOENT;
}

/* Landlock lets runs read and execute only the standard roots; a runtime
 * elsewhere (/opt/node/bin/node) brings its prefix, the parent of its bin
 * directory, for its own runs only (as the interpreter's, sandbox.c). */
static void set_root(struct mcpx_runtime *rt)
{
	static const char *const std_roots[] = {"/usr/", "/bin/", "/sbin/", "/lib"};
	char tmp[PATH_MAX], *slash;

	rt->root[0] = '\0';
	for (size_t i = 0; i < sizeof(std_roots) / sizeof(std_roots[0]); i++)
		if (strncmp(rt->path, std_roots[i], strlen(std_roots[i])) == 0)
			return;
	snprintf(tmp, sizeof(tmp), "%s", rt->path);
	for (int up = 0; up < 2; up++) {
		slash = strrchr(tmp, '/');
		if (!slash || slash == tmp)
			return;
		*slash = '\0';
	}
	snprintf(rt->root, sizeof(rt->root), "%s", tmp);
}

/* Runs lang's proof through the sandbox under lim: 0 with the version in
 * rt->version, or -errno with the reason in rt->why. */
static int prove(const struct mcpx_sandbox *sb, enum mcpx_lang l, const struct mcpx_limits *lim,
                 int timeout_ms, struct mcpx_runtime *rt)
{
	struct mcpx_sandbox_proc proc;
	struct mcpx_err err = {{0}};
	char out[sizeof(rt->version)], errbuf[200];
	int status = 0, rc;

	rc = mcpx_sandbox_spawn_lang(sb, lim, l, table[l].prove, strlen(table[l].prove), NULL,
	                             &proc, &err);
	if (rc < 0) {
		snprintf(rt->why, sizeof(rt->why), "%s", err.msg);
		return rc;
	}
	mcpx_close_fd(&proc.stdin_fd);
	mcpx_sandbox_drain(&proc, out, sizeof(out), errbuf, sizeof(errbuf), timeout_ms);
	mcpx_sandbox_kill(&proc);
	rc = mcpx_sandbox_reap(&proc, &status, NULL);
	mcpx_sandbox_cleanup(&proc);
	if (rc < 0) {
		snprintf(rt->why, sizeof(rt->why), "reaping its first run failed: %s",
		         strerror(-rc));
		return rc;
	}
	if (status != 0 || !out[0]) {
		for (char *c = errbuf; *c; c++)
			if (*c == '\n' || *c == '\r')
				*c = ' ';
		snprintf(rt->why, sizeof(rt->why),
		         "%.100s does not run in the sandbox (wait status 0x%x): %.80s", rt->path,
		         (unsigned)status, errbuf[0] ? errbuf : "no output");
		return -ENOEXEC;
	}
	snprintf(rt->version, sizeof(rt->version), "%s", out);
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A runtime's proof, tried up to three times within PROVE_TIMEOUT_MS in all.
 * RLIMIT_NPROC is the uid's, shared with every other server's runs of uid
 * 65532 on a host without user namespaces: Node's dozen threads can find it
 * full for a moment (another server's fork bomb), and a runtime left out at
 * start-up stays out for the server's life. A runtime that hangs uses the
 * whole time once; one that fails fast costs two more quick tries. */
static int prove_again(const struct mcpx_sandbox *sb, enum mcpx_lang l,
                       const struct mcpx_limits *lim, struct mcpx_runtime *rt)
{
	static const long pause_ms[] = {200, 1000};
	long long end = now_ms() + PROVE_TIMEOUT_MS;
	int rc = prove(sb, l, lim, PROVE_TIMEOUT_MS, rt);

	for (size_t i = 0; rc < 0 && i < 2; i++) {
		struct timespec ts = {pause_ms[i] / 1000, (pause_ms[i] % 1000) * 1000000L};
		long long left;

		nanosleep(&ts, NULL);
		left = end - now_ms();
		if (left < 1000)
			break;
		rc = prove(sb, l, lim, (int)left, rt);
	}
	return rc;
}

int mcpx_sandbox_find_languages(struct mcpx_sandbox *sb, const char *setting,
                                const struct mcpx_limits *lim, struct mcpx_err *err)
{
	struct mcpx_languages *langs = &sb->langs;
	unsigned allowed;
	bool listed;
	int rc;

	memset(langs, 0, sizeof(*langs));
	rc = mcpx_langset_parse(setting, &allowed, &listed, err);
	if (rc < 0)
		return rc;
	for (int l = 0; l < MCPX_LANG_COUNT; l++) {
		struct mcpx_runtime *rt = &langs->rt[l];

		if (!(allowed & (1u << l))) {
			snprintf(rt->why, sizeof(rt->why), "not in MCP_EXEC_LANGUAGES");
			continue;
		}
		if (l == MCPX_LANG_PYTHON) {
			snprintf(rt->path, sizeof(rt->path), "%s", sb->python);
			snprintf(rt->root, sizeof(rt->root), "%s", sb->runtime_root);
		} else if (locate((enum mcpx_lang)l, rt->path, sizeof(rt->path)) < 0) {
			snprintf(rt->why, sizeof(rt->why), "no runtime found (%s%s%s)",
			         table[l].candidates[0], table[l].path_name ? ", PATH: " : "",
			         table[l].path_name ? table[l].path_name : "");
		} else {
			set_root(rt);
		}
		/* available is set only for prove's own spawn to find the
		 * runtime, and kept only if it passes. */
		rt->available = rt->path[0] != '\0';
		if (rt->available && prove_again(sb, (enum mcpx_lang)l, lim, rt) < 0) {
			/* Whether Python runs is the self-test's verdict, as
			 * before languages existed; only its version is unknown. */
			if (l == MCPX_LANG_PYTHON)
				snprintf(rt->version, sizeof(rt->version), "3");
			else
				rt->available = false;
		}
		if (rt->available) {
			langs->mask |= 1u << l;
			continue;
		}
		if (listed)
			return mcpx_err_set(err, ENOENT, "language %s: %s", mcpx_lang_name(l),
			                    rt->why);
	}
	return 0;
}
