/*
 * app_store.c - the workspace and task store of this server (store.h):
 * which one MCP_EXEC_WORKSPACES names, whether runs could reach it, and
 * opening it on the loop. Start-up and --check-config share the judgement.
 *
 * A run must never read the store: it holds every caller's workspaces. A
 * directory store is out of reach when Landlock keeps runs to their
 * runtime and workdir (and the directory is neither), or when runs drop to
 * another uid (the store's v1/ is 0700 and the server's). Without either, a
 * run shares the server's uid and reads what it reads: a configured
 * directory is then refused, and the default one is off (with a warning)
 * rather than stopping a server that worked before workspaces existed. A
 * Redis store is out of reach by construction (runs cannot open a network
 * socket); its password file is held to the same rule as a directory.
 * The store's address and password are never logged: messages name the
 * setting, not its value.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app_start.h"
#include "config.h"
#include "log.h"
#include "metrics.h"
#include "sandbox.h"
#include "store.h"

/* The store's hard cap is the workspace cap plus room for what a
 * workspace's archive adds around its files and variables (paths, record
 * heads, the names; about 4.3 MiB at the most files a workspace may
 * hold): a workspace at its cap still fits. */
#define BLOB_SLACK (8u << 20)

/* A runs' uid and gid when they drop from root. */
static bool mode_lets_runs_read(const struct stat *st, const struct mcpx_sandbox *sb)
{
	if (st->st_uid == sb->run_uid)
		return st->st_mode & S_IRUSR;
	if (st->st_gid == (gid_t)sb->run_uid)
		return st->st_mode & S_IRGRP;
	return st->st_mode & S_IROTH;
}

/* Whether a run could read path (as named or where its links lead). */
static bool runs_may_read(const struct mcpx_sandbox *sb, const char *path, bool is_store_dir)
{
	char real[PATH_MAX];
	struct stat st;

	if (mcpx_sandbox_files_confined(sb) && !mcpx_sandbox_run_may_read(sb, path) &&
	    !(realpath(path, real) && mcpx_sandbox_run_may_read(sb, real)))
		return false;
	if (!sb->layers.uid_drop)
		return true;
	/* Runs are another uid: the store's own directory is 0700 (it
	 * refuses any other); a file is as its mode says. */
	if (is_store_dir)
		return false;
	return stat(path, &st) < 0 || mode_lets_runs_read(&st, sb);
}

int mcpx_app_judge_store(const struct mcpx_config *cfg, const struct mcpx_sandbox *sb,
                         struct mcpx_store_config *out, char *desc, size_t n, struct mcpx_err *err)
{
	const struct mcpx_store_spec *spec = &cfg->workspaces;
	char where[MCPX_STORE_DIR_MAX + 400];

	memset(out, 0, sizeof(*out));
	out->spec = *spec;
	out->max_blob_bytes = ((size_t)cfg->workspace_max_mb << 20) + BLOB_SLACK;
	mcpx_store_spec_format(spec, where, sizeof(where));
	if (spec->type == MCPX_STORE_OFF) {
		snprintf(desc, n, "off%s",
		         spec->is_default ? " (no state directory for the default: "
		                            "set MCP_EXEC_WORKSPACES)"
		                          : "");
		return 0;
	}
	if (spec->type == MCPX_STORE_REDIS) {
		if (spec->password_file[0] && runs_may_read(sb, spec->password_file, false))
			return mcpx_err_set(
			    err, EPERM,
			    "MCP_EXEC_WORKSPACES_PASSWORD_FILE lies where runs can read "
			    "it; mount it outside the system directories and the "
			    "workdir base (runs are kept away from those only with "
			    "Landlock or the filesystem view, or as another uid)");
		snprintf(desc, n, "%s (runs cannot open network sockets)", where);
		return 0;
	}
	if (runs_may_read(sb, spec->dir, true)) {
		if (!spec->is_default)
			return mcpx_err_set(
			    err, EPERM,
			    "MCP_EXEC_WORKSPACES: runs could read this directory (%s); "
			    "choose one outside the system directories and the workdir "
			    "base, or use a redis:// store",
			    mcpx_sandbox_files_confined(sb) ? "it is within their reach"
			                                    : "no Landlock, and runs share the "
			                                      "server's uid");
		out->spec.type = MCPX_STORE_OFF;
		snprintf(desc, n,
		         "off (the default directory would be readable by runs: no Landlock, and "
		         "runs share the server's uid; set MCP_EXEC_WORKSPACES=redis://...)");
		return 0;
	}
	snprintf(desc, n, "%s%s (out of runs' reach: %s)", where,
	         spec->is_default ? " (default)" : "",
	         sb->layers.landlock  ? "Landlock"
	         : sb->layers.fs_view ? "the filesystem view"
	                              : "runs are another uid");
	return 0;
}

int mcpx_app_open_store(const struct mcpx_config *cfg, const struct mcpx_sandbox *sb,
                        struct mcpx_loop *loop, struct mcpx_store **out)
{
	struct mcpx_store_config sc;
	struct mcpx_err err = {{0}};
	char desc[MCPX_STORE_DIR_MAX + 600];
	int rc;

	*out = NULL;
	if (mcpx_app_judge_store(cfg, sb, &sc, desc, sizeof(desc), &err) < 0) {
		mcpx_error("%s", err.msg);
		return -1;
	}
	if (sc.spec.type == MCPX_STORE_OFF) {
		if (cfg->workspaces.type != MCPX_STORE_OFF)
			mcpx_warn("workspaces: %s", desc);
		mcpx_metrics_set_info("workspaces", "off");
		return 0;
	}
	rc = mcpx_store_open(loop, &sc, out, &err);
	if (rc < 0 && sc.spec.is_default) {
		/* The default is a convenience: a server without a usable state
		 * directory runs on, without workspaces. */
		mcpx_warn("workspaces: off (the default store could not be opened: %s)", err.msg);
		mcpx_metrics_set_info("workspaces", "off");
		return 0;
	}
	if (rc < 0) {
		mcpx_error("MCP_EXEC_WORKSPACES: %s", err.msg);
		return -1;
	}
	mcpx_metrics_set_info("workspaces", mcpx_store_type(*out));
	/* The type only: the address stays out of the logs. */
	mcpx_info("workspaces: a %s store%s", mcpx_store_type(*out),
	          sc.spec.is_default ? " (the default directory)" : "");
	return 0;
}
