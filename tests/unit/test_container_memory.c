/*
 * test_container_memory.c - the container's memory against its limit
 * (container_memory.h), and the run budget ending a run near it
 * (run_budget.h, mcpx_budget_watch_container).
 *
 * Everything runs against fake cgroup directories of the shapes a pod (a
 * cgroup namespace: the container's cgroup at the root), a host's v2
 * hierarchy (the limit on an ancestor of the process's own cgroup) and a
 * cgroup v1 host produce, so it needs no cgroup of its own. The budget test
 * runs a real process group on a real loop: a container far from its limit
 * leaves it alone; the same container near its limit ends it with
 * "memory", though the run itself holds next to nothing.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "container_memory.h"
#include "loop.h"
#include "run_budget.h"

#define MIB (1ull << 20)

static void put(const char *dir, const char *name, const char *text)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void putu(const char *dir, const char *name, unsigned long long v)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%llu\n", v);
	put(dir, name, buf);
}

static void stat_text(const char *dir, const char *key, unsigned long long inactive)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "anon 1000\nfile 2000\nactive_file 5\n%s %llu\nslab 7\n", key,
	         inactive);
	put(dir, "memory.stat", buf);
}

static void rm_rf(const char *dir)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

/* A pod: cgroup v2 in a cgroup namespace, the container's limit at the
 * root. Near the limit only the working set counts: inactive page cache
 * is what the kernel reclaims before it OOM-kills. */
static void test_v2_pod(void)
{
	char root[] = "/tmp/mcpx-cgmem-XXXXXX";
	struct mcpx_container_memory cm;
	struct mcpx_container_reading r;

	CHECK(mkdtemp(root) != NULL);
	put(root, "cgroup.controllers", "cpu memory pids\n");
	putu(root, "memory.max", 1024 * MIB);
	putu(root, "memory.current", 500 * MIB);
	stat_text(root, "inactive_file", 0);
	CHECK_INT(mcpx_container_memory_open(root, NULL, &cm), 0);
	CHECK_INT(cm.version, 2);
	CHECK_STR(cm.dir, root);
	CHECK_INT(mcpx_container_memory_read(&cm, &r), 0);
	CHECK(r.limit == 1024 * MIB && r.usage == 500 * MIB && r.headroom == 128 * MIB);
	CHECK(!r.near);
	/* 1000 MiB of 1024: within the 128 MiB headroom. */
	putu(root, "memory.current", 1000 * MIB);
	CHECK_INT(mcpx_container_memory_read(&cm, &r), 0);
	CHECK(r.near && r.working_set == 1000 * MIB);
	/* The same usage, 200 MiB of it inactive page cache: 800 MiB. */
	stat_text(root, "inactive_file", 200 * MIB);
	CHECK_INT(mcpx_container_memory_read(&cm, &r), 0);
	CHECK(!r.near && r.working_set == 800 * MIB);
	/* The limit is read each time: a pod resized in place. */
	putu(root, "memory.max", 2048 * MIB);
	stat_text(root, "inactive_file", 0);
	CHECK_INT(mcpx_container_memory_read(&cm, &r), 0);
	CHECK(!r.near && r.limit == 2048 * MIB && r.headroom == 256 * MIB);
	/* A small limit still keeps the minimum headroom. */
	putu(root, "memory.max", 256 * MIB);
	putu(root, "memory.current", 200 * MIB);
	CHECK_INT(mcpx_container_memory_read(&cm, &r), 0);
	CHECK(r.headroom == MCPX_CONTAINER_HEADROOM_MIN && r.near);
	mcpx_container_memory_close(&cm);
	/* No limit: nothing to watch, and a reading says so. */
	put(root, "memory.max", "max\n");
	CHECK_INT(mcpx_container_memory_open(root, NULL, &cm), 0);
	CHECK_INT(cm.version, 0);
	CHECK(strstr(cm.why, "no memory limit") != NULL);
	CHECK_INT(mcpx_container_memory_read(&cm, &r), -ENODEV);
	mcpx_container_memory_close(&cm);
	rm_rf(root);
}

/* A v2 host: the root has no limit file; the process sits in a leaf
 * without a limit below the container's cgroup, which has one. */
static void test_v2_nested(void)
{
	char root[] = "/tmp/mcpx-cgmem-XXXXXX", dir[1024], proc[1100];
	struct mcpx_container_memory cm;
	struct mcpx_container_reading r;

	CHECK(mkdtemp(root) != NULL);
	put(root, "cgroup.controllers", "cpu memory pids\n");
	snprintf(dir, sizeof(dir), "%s/kubepods", root);
	CHECK(mkdir(dir, 0700) == 0);
	put(dir, "memory.max", "max\n");
	put(dir, "memory.current", "1\n");
	snprintf(dir, sizeof(dir), "%s/kubepods/pod1", root);
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(dir, sizeof(dir), "%s/kubepods/pod1/ctr", root);
	CHECK(mkdir(dir, 0700) == 0);
	putu(dir, "memory.max", 512 * MIB);
	putu(dir, "memory.current", 300 * MIB);
	snprintf(dir, sizeof(dir), "%s/kubepods/pod1/ctr/server", root);
	CHECK(mkdir(dir, 0700) == 0);
	put(dir, "memory.max", "max\n");
	put(dir, "memory.current", "2\n");
	snprintf(proc, sizeof(proc), "%s/self-cgroup", root);
	{
		FILE *f = fopen(proc, "w");

		CHECK(f != NULL);
		fputs("0::/kubepods/pod1/ctr/server\n", f);
		fclose(f);
	}
	CHECK_INT(mcpx_container_memory_open(root, proc, &cm), 0);
	CHECK_INT(cm.version, 2);
	CHECK(strstr(cm.dir, "/kubepods/pod1/ctr") != NULL && strstr(cm.dir, "server") == NULL);
	CHECK_INT(mcpx_container_memory_read(&cm, &r), 0);
	CHECK(r.limit == 512 * MIB && r.usage == 300 * MIB && !r.near);
	mcpx_container_memory_close(&cm);
	rm_rf(root);
}

/* cgroup v1: memory/memory.{usage,limit}_in_bytes; "no limit" is a huge
 * number; total_inactive_file is the reclaimable cache. */
static void test_v1(void)
{
	char root[] = "/tmp/mcpx-cgmem-XXXXXX", mem[1024];
	struct mcpx_container_memory cm;
	struct mcpx_container_reading r;

	CHECK(mkdtemp(root) != NULL);
	snprintf(mem, sizeof(mem), "%s/memory", root);
	CHECK(mkdir(mem, 0700) == 0);
	put(mem, "memory.limit_in_bytes", "9223372036854771712\n");
	putu(mem, "memory.usage_in_bytes", 100 * MIB);
	CHECK_INT(mcpx_container_memory_open(root, NULL, &cm), 0);
	CHECK_INT(cm.version, 0);
	mcpx_container_memory_close(&cm);
	putu(mem, "memory.limit_in_bytes", 1024 * MIB);
	putu(mem, "memory.usage_in_bytes", 990 * MIB);
	stat_text(mem, "total_inactive_file", 50 * MIB);
	CHECK_INT(mcpx_container_memory_open(root, NULL, &cm), 0);
	CHECK_INT(cm.version, 1);
	CHECK_INT(mcpx_container_memory_read(&cm, &r), 0);
	CHECK(r.near && r.working_set == 940 * MIB);
	/* v2's key is not v1's: inactive_file alone is not subtracted. */
	stat_text(mem, "inactive_file", 500 * MIB);
	CHECK_INT(mcpx_container_memory_read(&cm, &r), 0);
	CHECK(r.near && r.working_set == 990 * MIB);
	mcpx_container_memory_close(&cm);
	rm_rf(root);
}

/* ---- the run budget ending a run near the container's limit ---------- */

struct ended {
	struct mcpx_loop *loop;
	pid_t pgid;
	const char *limit;
};

static void on_exceeded(void *arg, const char *limit)
{
	struct ended *e = arg;

	e->limit = limit;
	kill(-e->pgid, SIGKILL);
	mcpx_loop_stop(e->loop);
}

struct raise_usage {
	struct ended *e;
	const char *root;
	bool ended_before;
};

/* Once the budget has read the container far from its limit for a while,
 * the container fills up. */
static void raise_cb(struct mcpx_timer *t)
{
	struct raise_usage *ru = t->arg;

	ru->ended_before = ru->e->limit != NULL;
	putu(ru->root, "memory.current", 1000 * MIB);
}

static void test_budget_ends_run(void)
{
	char root[] = "/tmp/mcpx-cgmem-XXXXXX", wd[] = "/tmp/mcpx-cgmem-wd-XXXXXX";
	struct mcpx_budget_limits lim = {.memory_kb = 512 << 10};
	struct mcpx_sandbox_proc proc;
	struct mcpx_run_budget *rb = NULL;
	struct mcpx_run_usage u;
	struct ended e = {0};
	struct raise_usage ru = {.e = &e};
	struct mcpx_timer t = {.fn = raise_cb, .arg = &ru};
	struct mcpx_budget *b = mcpx_budget_new();
	struct mcpx_loop *loop = mcpx_loop_new();
	pid_t pid;

	CHECK(b && loop && mkdtemp(root) && mkdtemp(wd));
	put(root, "cgroup.controllers", "memory\n");
	putu(root, "memory.max", 1024 * MIB);
	putu(root, "memory.current", 400 * MIB);
	stat_text(root, "inactive_file", 0);
	CHECK_INT(mcpx_budget_watch_container(b, root, NULL), 0);
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	setpgid(pid, pid);
	e.loop = loop;
	e.pgid = pid;
	memset(&proc, 0, sizeof(proc));
	proc.pid = pid;
	proc.run_uid = getuid();
	clock_gettime(CLOCK_REALTIME_COARSE, &proc.started);
	snprintf(proc.workdir, sizeof(proc.workdir), "%s", wd);
	ru.root = root;
	CHECK_INT(mcpx_run_budget_start(b, loop, &lim, &proc, 0, NULL, on_exceeded, &e, &rb), 0);
	/* Several readings (20 ms apart at most) see 400 of 1024 MiB first. */
	mcpx_timer_start(loop, &t, 300000);
	CHECK(mcpx_loop_run(loop) == 0);
	CHECK(!ru.ended_before);
	CHECK_STR(e.limit, "memory");
	CHECK(waitpid(pid, NULL, 0) == pid);
	mcpx_run_budget_finish(rb, &u);
	CHECK_STR(u.limit, "memory");
	mcpx_loop_free(loop);
	mcpx_budget_free(b);
	CHECK(rmdir(wd) == 0);
	rm_rf(root);
}

int main(void)
{
	test_v2_pod();
	test_v2_nested();
	test_v1();
	test_budget_ends_run();
	CHECK_DONE();
}
