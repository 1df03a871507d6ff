/*
 * test_seccomp_policy.c - the foreign-ABI action of the compiled policy is
 * the one asked for (the strongest seccomp_probe.c saw act): a process
 * kill, a thread kill or a trap each appear as the program's return for a
 * foreign architecture, and the others do not; no action is refused. A
 * process kill compiles even where libseccomp could not ask the kernel
 * for it (its API level forced down to 2, as without
 * SECCOMP_GET_ACTION_AVAIL).
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "seccomp_policy.h"

static bool returns(const struct sock_fprog *p, uint32_t action)
{
	for (unsigned i = 0; i < p->len; i++)
		if (p->filter[i].code == (BPF_RET | BPF_K) && p->filter[i].k == action)
			return true;
	return false;
}

static void test_action(enum mcpx_seccomp_kill kill, uint32_t want)
{
	static const uint32_t all[] = {SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD,
	                               SECCOMP_RET_TRAP};
	struct sock_fprog prog = {0};
	struct mcpx_err err = {{0}};

	printf("foreign ABIs: %s\n", mcpx_seccomp_kill_name(kill));
	REQUIRE_INT(mcpx_seccomp_policy_build(getpid(), MCPX_SECCOMP_RUN, kill, &prog, &err), 0);
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		CHECK(returns(&prog, all[i]) == (all[i] == want));
	/* The deny-list itself is there whatever the action. */
	CHECK(returns(&prog, SECCOMP_RET_ERRNO | EPERM));
	mcpx_seccomp_policy_free(&prog);
}

int main(void)
{
	struct sock_fprog prog = {0};
	struct mcpx_err err = {{0}};

	test_action(MCPX_SECCOMP_KILL_THREAD, SECCOMP_RET_KILL_THREAD);
	test_action(MCPX_SECCOMP_KILL_TRAP, SECCOMP_RET_TRAP);
	CHECK(mcpx_seccomp_policy_build(getpid(), MCPX_SECCOMP_RUN, MCPX_SECCOMP_KILL_NONE, &prog,
	                                &err) == -EINVAL);
	printf("no action: %s\n", err.msg);
	/* As on a kernel without the query: libseccomp at API level 2 refuses
	 * a process kill unless the level is raised to what was seen. */
	CHECK(seccomp_api_set(2) == 0);
	test_action(MCPX_SECCOMP_KILL_PROCESS, SECCOMP_RET_KILL_PROCESS);
	CHECK(seccomp_api_get() >= 3);
	if (check_failures)
		fprintf(stderr, "%d check(s) failed\n", check_failures);
	return check_failures ? 1 : 0;
}
