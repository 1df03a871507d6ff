/*
 * test_listen_addr.c - the listener's host is resolved, and "loopback" is
 * decided on the resolved address, never on how the name is spelled.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "listen_addr.h"

static void expect(const char *host, const char *numeric, bool ipv6, bool loopback)
{
	struct mcpx_listen_addr a;
	struct mcpx_err err = {{0}};

	CHECK_INT(mcpx_listen_addr_resolve(host, &a, &err), 0);
	CHECK_STR(a.numeric, numeric);
	CHECK(a.ipv6 == ipv6);
	CHECK(a.loopback == loopback);
}

int main(void)
{
	struct mcpx_listen_addr a;
	struct mcpx_err err = {{0}};

	expect("0.0.0.0", "", false, false);
	expect("127.0.0.1", "127.0.0.1", false, true);
	expect("127.8.9.10", "127.8.9.10", false, true);
	expect("10.1.2.3", "10.1.2.3", false, false);
	expect("::1", "::1", true, true);
	expect("::", "::", true, false);
	expect("::ffff:127.0.0.1", "::ffff:127.0.0.1", true, true);
	/* A name is resolved (IPv4 preferred): /etc/hosts maps localhost. */
	expect("localhost", "127.0.0.1", false, true);

	CHECK_INT(mcpx_listen_addr_resolve("no-such-host.invalid", &a, &err), -EINVAL);
	CHECK(strstr(err.msg, "MCP_EXEC_ADDR: cannot resolve host \"no-such-host.invalid\"") ==
	      err.msg);
	CHECK_DONE();
}
