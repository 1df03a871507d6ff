/*
 * test_run_disk_watch.c - the write watch that wakes a run's disk reading:
 * a file created, written or closed in the workdir, in a directory made
 * inside it later, or written after it was unlinked wakes it; so does a
 * joined run's workdir; in /dev/shm only the run's own entries do; nothing
 * does once it is closed.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "loop.h"
#include "run_disk_watch.h"

static int woken;

static void wake(void *arg)
{
	(void)arg;
	woken++;
}

/* Turns the loop until the watch woke (or a second passed). */
static int turned_awake(struct mcpx_loop *loop)
{
	woken = 0;
	for (int i = 0; i < 100 && !woken; i++) {
		(void)mcpx_loop_turn(loop);
		if (!woken)
			usleep(10000);
	}
	return woken;
}

static void write_file(const char *path, bool unlink_first)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	if (unlink_first)
		unlink(path);
	CHECK(write(fd, "data", 4) == 4);
	close(fd);
}

int main(void)
{
	char dir[] = "/tmp/mcpx-disk-watch-XXXXXX", other[] = "/tmp/mcpx-disk-watch-XXXXXX";
	char path[256];
	struct mcpx_loop *loop = mcpx_loop_new();
	struct mcpx_disk_watch *dw = NULL;

	if (!loop || !mkdtemp(dir) || !mkdtemp(other)) {
		fprintf(stderr, "no loop or no temporary directory\n");
		return 1;
	}
	CHECK_INT(mcpx_disk_watch_open(loop, dir, false, getuid(), getgid(), wake, NULL, &dw), 0);
	if (!dw)
		return 1;
	CHECK_INT(turned_awake(loop), 0); /* nothing written yet */

	snprintf(path, sizeof(path), "%s/a", dir);
	write_file(path, false);
	CHECK(turned_awake(loop) > 0);

	/* A directory made later is watched too. */
	snprintf(path, sizeof(path), "%s/sub", dir);
	CHECK_INT(mkdir(path, 0700), 0);
	CHECK(turned_awake(loop) > 0);
	snprintf(path, sizeof(path), "%s/sub/b", dir);
	write_file(path, false);
	CHECK(turned_awake(loop) > 0);

	/* Written after it was unlinked: no name leads to it, it still wakes. */
	snprintf(path, sizeof(path), "%s/sub/c", dir);
	write_file(path, true);
	CHECK(turned_awake(loop) > 0);

	/* A joined run's workdir. */
	mcpx_disk_watch_add(dw, other);
	snprintf(path, sizeof(path), "%s/d", other);
	write_file(path, false);
	CHECK(turned_awake(loop) > 0);

	/* Closed: nothing more. */
	mcpx_disk_watch_close(dw);
	snprintf(path, sizeof(path), "%s/e", dir);
	write_file(path, false);
	CHECK_INT(turned_awake(loop), 0);

	/* /dev/shm: only the run's own entries (by owner and group) wake it. */
	{
		char shm[64];

		snprintf(shm, sizeof(shm), "/dev/shm/mcpx-disk-watch-%d", (int)getpid());
		CHECK_INT(
		    mcpx_disk_watch_open(loop, dir, true, getuid() + 1, getgid(), wake, NULL, &dw),
		    0);
		write_file(shm, false);
		CHECK_INT(turned_awake(loop), 0); /* another uid's entry */
		mcpx_disk_watch_close(dw);
		CHECK_INT(
		    mcpx_disk_watch_open(loop, dir, true, getuid(), getgid(), wake, NULL, &dw), 0);
		write_file(shm, false);
		CHECK(turned_awake(loop) > 0);
		mcpx_disk_watch_close(dw);
		unlink(shm);
	}

	snprintf(path, sizeof(path), "rm -rf %s %s", dir, other);
	CHECK_INT(system(path), 0);
	mcpx_loop_free(loop);
	CHECK_DONE();
}
