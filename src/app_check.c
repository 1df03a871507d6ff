/*
 * app_check.c - --check-config: the configuration printed, then one check
 * after another, each printing what it found as the server's start would
 * judge it (the same functions, app_start.c): the sandbox's layers, the
 * warm interpreter's binary, the self-test, the languages, the warm mode,
 * the policy file, the listener's address, the run budget, the auth files.
 * The exit status says whether the server would start.
 *
 * It starts nothing that stays: no loop, no listener, no request.
 */
#include "app.h"

#include <stdio.h>
#include <sysexits.h>

#include "app_start.h"
#include "config.h"
#include "http_front.h"
#include "listen_addr.h"
#include "log.h"
#include "policy.h"
#include "run_budget.h"
#include "sandbox.h"
#include "store.h"
#include "warm_pool.h"

/* What --check-config has found so far. */
struct check {
	struct mcpx_config *cfg;
	struct mcpx_sandbox sb;
	struct mcpx_listen_addr addr;
	int verdict; /* the sandbox judgement: 0, or the exit code start-up would give */
};

static int check_layers(struct check *c)
{
	char layers[512];

	mcpx_sandbox_describe(&c->sb, layers, sizeof(layers));
	printf("sandbox layers: %s\n", layers);
	/* Which layer holds, which is absent, what the runtime replaces. */
	mcpx_sandbox_report(&c->sb, stdout);
	return 0;
}

static int check_zygote(struct check *c)
{
	struct mcpx_err why = {{0}};

	mcpx_app_find_zygote(c->cfg, &c->sb, &why);
	printf("warm interpreter binary: %s%s\n", c->sb.zygote[0] ? c->sb.zygote : "none: ",
	       c->sb.zygote[0] ? ""
	       : why.msg[0]    ? why.msg
	                       : "MCP_EXEC_WARM=0");
	return 0;
}

/* The server's own judgement: what it would refuse, this refuses. */
static int check_selftest(struct check *c)
{
	struct mcpx_err err = {{0}};

	c->verdict = mcpx_app_judge_sandbox(c->cfg, &c->sb, &err);
	if (c->verdict == EX_SOFTWARE)
		printf("self-test: FAILED: %s\n", err.msg);
	else if (c->verdict)
		printf("sandbox: REFUSED: %s (the server would exit %d)\n", err.msg, c->verdict);
	else
		printf("self-test: passed\n");
	return c->verdict ? -1 : 0;
}

/* The languages, proven in the sandbox when it holds. */
static int check_languages(struct check *c)
{
	struct mcpx_err err = {{0}};
	char langs[400];
	int rc = 0;

	if (c->verdict)
		return 0;
	if (mcpx_app_find_languages(c->cfg, &c->sb, &err)) {
		printf("languages: FAILED: %s\n", err.msg);
		rc = -1;
	}
	mcpx_languages_describe(&c->sb.langs, langs, sizeof(langs));
	printf("languages: %s\n", langs);
	for (int l = 0; l < MCPX_LANG_COUNT; l++) {
		const struct mcpx_runtime *rt = &c->sb.langs.rt[l];

		if (rt->available)
			printf("language %s: %s%s%s\n", mcpx_lang_name(l), rt->path,
			       rt->root[0] ? ", readable prefix " : "", rt->root);
		else
			printf("language %s: off (%s)\n", mcpx_lang_name(l), rt->why);
	}
	return rc;
}

static int check_warm(struct check *c)
{
	enum mcpx_warm_mode m = mcpx_warm_mode_for(c->cfg, &c->sb);

	printf("warm interpreters: %s%s\n", mcpx_warm_mode_name(m),
	       m == MCPX_WARM_MODE_FORK
	           ? " (each run forked from a preloaded zygote that never runs user "
	             "code; Landlock scoping keeps runs away from it)"
	       : m == MCPX_WARM_MODE_AFTER_REAP
	           ? " (a fresh interpreter per run, prepared only after the previous run "
	             "is reaped)"
	           : "");
	return 0;
}

static int check_policy(struct check *c)
{
	struct mcpx_policy_store *ps = NULL;
	char what[160];
	int rc = 0;

	if (!c->cfg->policy[0])
		return 0;
	if (mcpx_app_open_policy(c->cfg, &c->sb, &ps) < 0) {
		printf("policy: FAILED (see the error above)\n");
		rc = -1;
	} else {
		mcpx_policy_summary(mcpx_policy_store_current(ps), what, sizeof(what));
		printf("policy: %s\n", what);
	}
	mcpx_policy_store_free(ps);
	return rc;
}

static int check_listen(struct check *c)
{
	struct mcpx_err err = {{0}};

	if (c->cfg->transport == MCPX_TRANSPORT_STDIO)
		return 0;
	if (mcpx_listen_addr_resolve(c->cfg->listen_host, &c->addr, &err) < 0) {
		printf("listen: FAILED: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int check_budget(struct check *c)
{
	char how[400];

	mcpx_budget_describe(how, sizeof(how));
	printf("run budget: memory %u MiB, disk %u MiB and CPU for all of a run's processes "
	       "together; method: %s\n",
	       c->cfg->memory_mb, c->cfg->max_disk_mb, how);
	return 0;
}

/* The token file, as the HTTP side's start reads it (then forgotten). */
static int check_auth(struct check *c)
{
	if (c->cfg->transport == MCPX_TRANSPORT_STDIO)
		return 0;
	return mcpx_http_front_check_auth(
	    c->cfg, mcpx_sandbox_files_confined(&c->sb) ? mcpx_app_run_may_read : NULL, &c->sb,
	    c->addr.loopback);
}

/* The workspace store, judged as the start judges it; not opened (a Redis
 * store is not contacted). */
static int check_store(struct check *c)
{
	struct mcpx_store_config sc;
	struct mcpx_err err = {{0}};
	char desc[MCPX_STORE_DIR_MAX + 600];

	if (mcpx_app_judge_store(c->cfg, &c->sb, &sc, desc, sizeof(desc), &err) < 0) {
		printf("workspaces: REFUSED: %s\n", err.msg);
		return -1;
	}
	printf("workspaces: %s\n", desc);
	return 0;
}

/* --check-config's checks, in the order their lines are printed; each
 * prints what it found and returns -1 when the server would not start. */
static int (*const checks[])(struct check *c) = {
    check_layers, check_zygote, check_selftest, check_languages, check_warm,
    check_policy, check_listen, check_budget,   check_auth,      check_store,
};

int mcpx_app_check_config(struct mcpx_config *cfg)
{
	struct check c = {.cfg = cfg, .addr = {.loopback = false}};
	struct mcpx_err err = {{0}};
	int rc = 0;

	mcpx_log_setup(cfg->log_format, MCPX_LOG_WARN);
	mcpx_config_print(cfg, stdout);
	if (mcpx_sandbox_init(&c.sb, cfg->python, cfg->workdir_base, &err) < 0) {
		printf("sandbox: FAILED: %s\n", err.msg);
		return EX_OSERR;
	}
	mcpx_sandbox_set_runtime(&c.sb, cfg->runtime);
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if (checks[i](&c) < 0)
			rc = -1;
	mcpx_sandbox_free(&c.sb);
	return rc == 0 ? 0 : EX_CONFIG;
}
