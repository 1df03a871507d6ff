/*
 * test_store_spec.c - MCP_EXEC_WORKSPACES parsed (store_spec.h): the three
 * forms, the defaults of the redis:// form, every refusal (a password in
 * the URL, TLS, queries, bad ports, relative or dotted paths) with a message
 * that never repeats the value, the default directory by user, and the
 * form --check-config prints.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "store_spec.h"

static void test_accepted(void)
{
	struct mcpx_store_spec s;
	struct mcpx_err err = {{0}};
	char out[600];

	memset(&s, 0, sizeof(s));
	CHECK_INT(mcpx_store_spec_parse("off", &s, &err), 0);
	CHECK_INT(s.type, MCPX_STORE_OFF);
	CHECK_INT(mcpx_store_spec_parse("dir:/var/lib/x/", &s, &err), 0);
	CHECK_INT(s.type, MCPX_STORE_DIR);
	CHECK_STR(s.dir, "/var/lib/x");
	CHECK_INT(mcpx_store_spec_parse("redis://cache.ns.svc:6380/2", &s, &err), 0);
	CHECK_INT(s.type, MCPX_STORE_REDIS);
	CHECK_STR(s.host, "cache.ns.svc");
	CHECK_INT(s.port, 6380);
	CHECK_INT(s.db, 2);
	CHECK_STR(s.user, "");
	CHECK_INT(mcpx_store_spec_parse("redis://mcp@10.0.0.5", &s, &err), 0);
	CHECK_STR(s.user, "mcp");
	CHECK_STR(s.host, "10.0.0.5");
	CHECK_INT(s.port, 6379);
	CHECK_INT(s.db, 0);
	CHECK_INT(mcpx_store_spec_parse("redis://[::1]:7000/", &s, &err), 0);
	CHECK_STR(s.host, "::1");
	CHECK_INT(s.port, 7000);
	snprintf(s.password_file, sizeof(s.password_file), "/run/secrets/redis");
	mcpx_store_spec_format(&s, out, sizeof(out));
	CHECK_STR(out, "redis://[::1]:7000/0 (password from /run/secrets/redis)");
	CHECK_INT(mcpx_store_spec_parse("redis://u@h:1/3", &s, &err), 0);
	s.password_file[0] = '\0';
	mcpx_store_spec_format(&s, out, sizeof(out));
	CHECK_STR(out, "redis://u@h:1/3");
}

static void test_refused(void)
{
	static const struct {
		const char *value, *says;
	} cases[] = {
	    {"", "must be"},
	    {"on", "must be"},
	    {"dir:relative/path", "absolute"},
	    {"dir:/a/../b", "\"..\""},
	    {"dir:/a/./b", "\"..\""},
	    {"dir:/a//b", "empty"},
	    {"dir:/a\nb", "control"},
	    {"redis://user:secretpw@host:6379", "PASSWORD_FILE"},
	    {"redis://:secretpw@host", "PASSWORD_FILE"},
	    {"rediss://host:6379", "TLS"},
	    {"redis://host:0", "port"},
	    {"redis://host:65536", "port"},
	    {"redis://host:6379x", "port"},
	    {"redis://host:6379/x", "database"},
	    {"redis://host:6379/1?timeout=5", "query"},
	    {"redis://", "host"},
	    {"redis://ho_st", "host"},
	    {"redis://[::1", "']'"},
	    {"redis://h@", "host"},
	    {"redis://us er@h", "user"},
	};
	struct mcpx_store_spec s;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mcpx_err err = {{0}};

		CHECK_INT(mcpx_store_spec_parse(cases[i].value, &s, &err), -EINVAL);
		if (!strstr(err.msg, cases[i].says))
			fprintf(stderr, "%s: %s\n", cases[i].value, err.msg);
		CHECK(strstr(err.msg, cases[i].says) != NULL);
		/* The value (an address, maybe a password) is never echoed. */
		CHECK(!strstr(err.msg, "secretpw"));
		CHECK(strlen(cases[i].value) <= 8 || !strstr(err.msg, cases[i].value));
	}
}

static void test_default(void)
{
	struct mcpx_store_spec s;
	struct mcpx_err err = {{0}};

	memset(&s, 0, sizeof(s));
	CHECK_INT(mcpx_store_spec_default(&s, &err), 0);
	CHECK_INT(s.type, MCPX_STORE_DIR);
	CHECK(s.is_default);
	if (geteuid() == 0)
		CHECK_STR(s.dir, "/var/lib/mcp-exec/workspaces");
	else
		CHECK(strstr(s.dir, "/mcp-exec/workspaces") != NULL);
}

int main(void)
{
	test_accepted();
	test_refused();
	test_default();
	CHECK_DONE();
}
