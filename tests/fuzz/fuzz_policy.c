/*
 * fuzz_policy.c - the policy file parser (mcpx_policy_parse) on arbitrary
 * bytes, with the function schemas it compiles and the url_prefix and CIDR
 * parsers it calls.
 *
 * Beyond the sanitizers it checks what a loaded policy must never hold: a
 * failure without a message; a policy accepted from bytes that are not
 * UTF-8, hold a NUL byte or a \u0000 escape (issue 21: cJSON would cut a
 * string there); a rule whose url_prefix does not parse again to the same
 * prefix; a title, description or name that is not valid UTF-8.
 *
 * Files: a policy names secret and source files. Every path outside the
 * harness's own directory is refused through run_may_read (as a path a run
 * could read), so the fuzzer never reads the host's files; inside it lie
 * "key" (a secret) and "f.py" (a function's source), which the seeds name.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "egress_check.h"
#include "policy.h"
#include "utf8.h"

#define DIR "/tmp/mcpx-fuzz-policy"

static bool outside(void *ctx, const char *path)
{
	(void)ctx;
	return strncmp(path, DIR "/", sizeof(DIR)) != 0 || strstr(path, "/..") != NULL;
}

static void init_once(void)
{
	static bool done;
	FILE *f;

	if (done)
		return;
	done = true;
	(void)mkdir(DIR, 0700);
	if ((f = fopen(DIR "/key", "w"))) {
		fputs("secret-value\n", f);
		fclose(f);
	}
	if ((f = fopen(DIR "/f.py", "w"))) {
		fputs("def handler(args, ctx):\n    return {}\n", f);
		fclose(f);
	}
}

static bool has_nul_escape(const uint8_t *d, size_t n)
{
	bool in_str = false;

	for (size_t i = 0; i < n; i++) {
		if (!in_str)
			in_str = d[i] == '"';
		else if (d[i] == '"')
			in_str = false;
		else if (d[i] == '\\' && i + 5 < n && memcmp(d + i + 1, "u0000", 5) == 0)
			return true;
		else if (d[i] == '\\')
			i++;
	}
	return false;
}

static void check_text(const char *s)
{
	if (s && !mcpx_utf8_valid(s, strlen(s)))
		abort();
}

static void check_loaded(const struct mcpx_policy *p)
{
	char why[256], summary[256];

	for (size_t i = 0; i < p->n_rules; i++) {
		const struct mcpx_egress_rule *r = &p->rules[i];
		struct mcpx_url_prefix again;

		check_text(r->name);
		check_text(r->url_prefix);
		if (mcpx_url_prefix_parse(r->url_prefix, &again, why, sizeof(why)) < 0 ||
		    memcmp(&again, &r->prefix, sizeof(again)) != 0)
			abort();
		if (!r->prefix.path[0] || r->prefix.port == 0 || r->prefix.port > 65535)
			abort();
	}
	for (size_t i = 0; i < p->n_functions; i++) {
		check_text(p->functions[i].name);
		check_text(p->functions[i].title);
		check_text(p->functions[i].description);
		if (!p->functions[i].input)
			abort();
	}
	mcpx_policy_summary(p, summary, sizeof(summary));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mcpx_policy_opts o = {.run_may_read = outside, .credentials_allowed = true};
	struct mcpx_policy *p = NULL;
	struct mcpx_err err = {{0}};
	int rc;

	init_once();
	if (size > 64 * 1024)
		return 0;
	rc = mcpx_policy_parse((const char *)data, size, &o, &p, NULL, 0, NULL, &err);
	if (rc < 0 && (!err.msg[0] || p))
		abort();
	if (rc == 0) {
		if (!p || memchr(data, '\0', size) || !mcpx_utf8_valid((const char *)data, size) ||
		    has_nul_escape(data, size))
			abort();
		check_loaded(p);
	}
	mcpx_policy_unref(p);
	return 0;
}
