/*
 * app_start.c - what the server's start and --check-config judge alike, so
 * they never disagree: the sandbox (layers probed, the self-test, what is
 * refused), the warm interpreter's binary, the languages proven in the
 * sandbox, and the policy file checked against what runs can read.
 *
 * It wires nothing and starts no loop (app.c does); --check-config prints
 * what these find (app_check.c).
 */
#include "app_start.h"

#include <errno.h>
#include <stdio.h>
#include <sysexits.h>

#include "config.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "sandbox.h"
#include "warm_pool.h"

static void publish_layers(const struct mcpx_sandbox *sb)
{
	mcpx_metrics_set_layer("seccomp", sb->layers.seccomp);
	mcpx_metrics_set_layer("landlock", sb->layers.landlock);
	mcpx_metrics_set_layer("landlock_net", sb->layers.landlock_net);
	mcpx_metrics_set_layer("landlock_scope", sb->layers.landlock_scope);
	mcpx_metrics_set_layer("fs_view", sb->layers.fs_view);
	mcpx_metrics_set_layer("uid_drop", sb->layers.uid_drop);
	mcpx_metrics_set_layer("no_new_privs", sb->layers.no_new_privs);
	mcpx_metrics_set_layer("rlimits", sb->layers.rlimits);
	mcpx_metrics_set_layer("subreaper", sb->layers.subreaper);
	mcpx_metrics_set_layer("dumpable_off", sb->layers.dumpable_off);
}

/* The warm interpreter's binary (mcp-exec-zygote), resolved once, next to
 * this one. Without it no warm mode can run; the reason goes to why. */
void mcpx_app_find_zygote(const struct mcpx_config *cfg, struct mcpx_sandbox *sb,
                          struct mcpx_err *why)
{
	if (cfg->warm != MCPX_WARM_OFF && mcpx_sandbox_use_zygote(sb, NULL, why) < 0)
		mcpx_warn("warm interpreters off, every run starts cold: %s", why->msg);
}

/* Whether the server may serve with the sandbox sb offers: the one
 * judgement both the server's start and --check-config make, so they never
 * disagree. 0, or the exit code with the reason in err. Logs (as a warning)
 * what is lost when Landlock is missing and not required. */
int mcpx_app_judge_sandbox(const struct mcpx_config *cfg, const struct mcpx_sandbox *sb,
                           struct mcpx_err *err)
{
	/* seccomp is the layer that holds everywhere (Landlock depends on the
	 * kernel): without it the network promise is gone, so no start. */
	if (!sb->layers.seccomp) {
		mcpx_err_set(err, ENOSYS,
		             "seccomp is unavailable (kernel or runtime profile), "
		             "refusing to start");
		return EX_UNAVAILABLE;
	}
	/* Under gVisor or in a VM of the pod's own (MCP_EXEC_RUNTIME, or
	 * gVisor seen), the kernel beneath is not the node's: a missing
	 * Landlock is that runtime's, and accepted even where required. */
	if (!sb->layers.landlock && cfg->require_landlock && !mcpx_sandbox_landlock_replaced(sb)) {
		mcpx_err_set(err, ENOSYS,
		             "MCP_EXEC_REQUIRE_LANDLOCK is set but this kernel has no "
		             "Landlock, refusing to start (under gVisor or a VM of the pod's "
		             "own, say so with MCP_EXEC_RUNTIME)");
		return EX_UNAVAILABLE;
	}
	if (mcpx_sandbox_selftest(sb, err) < 0) {
		char why[sizeof(err->msg)];

		snprintf(why, sizeof(why), "%s", err->msg);
		mcpx_err_set(err, EPERM, "sandbox self-test failed, refusing to start: %s", why);
		return EX_SOFTWARE;
	}
	if (!sb->layers.landlock && sb->layers.fs_view)
		mcpx_warn(
		    "Landlock is unavailable%s%s%s: each run gets a filesystem view of its own "
		    "instead (Landlock's paths only: the token file, other runs' files and /tmp "
		    "are out of its reach); signals and abstract sockets are not scoped, so "
		    "warm interpreters are prepared only after the previous run is reaped "
		    "(mcp_exec_sandbox_layer{layer=\"fs_view\"} is 1)",
		    mcpx_sandbox_landlock_replaced(sb) ? " under " : "",
		    mcpx_sandbox_landlock_replaced(sb) ? mcpx_runtime_name(sb->runtime) : "",
		    mcpx_sandbox_landlock_replaced(sb) ? "" : " on this kernel");
	else if (!sb->layers.landlock && mcpx_sandbox_landlock_replaced(sb))
		mcpx_warn(
		    "Landlock is unavailable under %s (%s): accepted there, the node's kernel "
		    "is not beneath the runs; still, runs can write outside their workdir "
		    "where their uid may and read every file the server's uid can read, the "
		    "token file and other mounted secrets included (the policy accepts no "
		    "credential); warm interpreters are prepared only after the previous run "
		    "is reaped (mcp_exec_sandbox_layer{layer=\"landlock\"} is 0)",
		    mcpx_runtime_name(sb->runtime), sb->runtime_why);
	else if (!sb->layers.landlock)
		mcpx_warn(
		    "Landlock is unavailable on this kernel, so runs lose it: they can write "
		    "outside their workdir (files in /tmp and /dev/shm that later runs see) and "
		    "read every file the server's uid can read, the token file and other "
		    "mounted secrets included; warm interpreters are prepared only after the "
		    "previous run is reaped. Set MCP_EXEC_REQUIRE_LANDLOCK=1 to refuse to start "
		    "instead (mcp_exec_sandbox_layer{layer=\"landlock\"} is 0)");
	return 0;
}

/* The languages MCP_EXEC_LANGUAGES allows, each proven in the sandbox with
 * a run's own limits (language.h). 0, or the exit code with the reason in
 * err: a language listed by name that cannot run, or Python. */
int mcpx_app_find_languages(const struct mcpx_config *cfg, struct mcpx_sandbox *sb,
                            struct mcpx_err *err)
{
	struct mcpx_limits lim = {.cpu_s = 10,
	                          .memory_mb = cfg->memory_mb,
	                          .max_procs = cfg->max_procs,
	                          .file_mb = cfg->max_file_mb,
	                          .open_files = 256};

	if (mcpx_sandbox_find_languages(sb, cfg->languages, &lim, err) < 0)
		return EX_UNAVAILABLE;
	for (int l = 0; l < MCPX_LANG_COUNT; l++)
		if (!sb->langs.rt[l].available)
			mcpx_info("language %s off: %s", mcpx_lang_name(l), sb->langs.rt[l].why);
	return 0;
}

int mcpx_app_start_sandbox(const struct mcpx_config *cfg, struct mcpx_sandbox *sb)
{
	struct mcpx_err err = {{0}};
	int rc;

	rc = mcpx_sandbox_init(sb, cfg->python, cfg->workdir_base, &err);
	if (rc < 0) {
		mcpx_error("sandbox: %s", err.msg);
		return EX_OSERR;
	}
	mcpx_sandbox_set_runtime(sb, cfg->runtime);
	mcpx_app_find_zygote(cfg, sb, &err);
	rc = mcpx_app_judge_sandbox(cfg, sb, &err);
	if (!rc)
		rc = mcpx_app_find_languages(cfg, sb, &err);
	if (rc) {
		mcpx_error("%s", err.msg);
		return rc;
	}
	publish_layers(sb);
	mcpx_metrics_set_info("warm_mode", mcpx_warm_mode_name(mcpx_warm_mode_for(cfg, sb)));
	mcpx_metrics_set_info("runtime", mcpx_runtime_name(sb->runtime));
	return 0;
}

bool mcpx_app_run_may_read(void *ctx, const char *path)
{
	return mcpx_sandbox_run_may_read(ctx, path);
}

/* The policy file, checked against what runs can read. Without Landlock or
 * the filesystem view a run reads whatever the server's uid reads: no file
 * is hidden from it, so no credential is accepted (policy_egress.c says so,
 * naming the rule). */
int mcpx_app_open_policy(struct mcpx_config *cfg, const struct mcpx_sandbox *sb,
                         struct mcpx_policy_store **out)
{
	struct mcpx_policy_opts o = {.credentials_allowed = mcpx_sandbox_files_confined(sb)};
	struct mcpx_err err = {{0}};
	const struct mcpx_policy *p;

	*out = NULL;
	if (!cfg->policy[0])
		return 0;
	if (mcpx_sandbox_files_confined(sb)) {
		o.run_may_read = mcpx_app_run_may_read;
		o.ctx = (void *)sb;
	}
	if (mcpx_policy_store_open(cfg->policy, &o, out, &err) < 0) {
		mcpx_error("%s", err.msg);
		return -1;
	}
	p = mcpx_policy_store_current(*out);
	{
		char what[160];

		mcpx_policy_summary(p, what, sizeof(what));
		mcpx_info("policy %s: %s", cfg->policy, what);
	}
	return 0;
}
