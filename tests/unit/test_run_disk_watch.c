/*
 * test_run_disk_watch.c - the write watch that wakes a run's disk reading:
 * a file created, written or closed in the workdir, in a directory made
 * inside it later, or written after it was unlinked wakes it; so does a
 * joined run's workdir; in /dev/shm only the run's own entries do (by
 * owner and group); a second run's watch on the same instance hears only
 * its own tree; nothing does once a watch is closed.
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

static int woken[2];

static void wake(void *arg)
{
	woken[(long)arg]++;
}

/* Turns the loop until run `who` woke (or half a second passed); the
 * other run's count is left for the caller to read. */
static int turned_awake(struct mcpx_loop *loop, int who)
{
	woken[0] = woken[1] = 0;
	for (int i = 0; i < 50 && !woken[who]; i++) {
		(void)mcpx_loop_turn(loop);
		if (!woken[who])
			usleep(10000);
	}
	return woken[who];
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
	char second[] = "/tmp/mcpx-disk-watch-XXXXXX", path[256], shm[64];
	struct mcpx_loop *loop = mcpx_loop_new();
	struct mcpx_disk_watcher *wr = NULL;
	struct mcpx_disk_watch *dw = NULL, *dw2 = NULL;

	if (!loop || !mkdtemp(dir) || !mkdtemp(other) || !mkdtemp(second)) {
		fprintf(stderr, "no loop or no temporary directory\n");
		return 1;
	}
	CHECK_INT(mcpx_disk_watcher_new(loop, &wr), 0);
	if (!wr)
		return 1;
	CHECK_INT(mcpx_disk_watch_open(wr, dir, false, getuid(), getgid(), wake, (void *)0L, &dw),
	          0);
	CHECK_INT(
	    mcpx_disk_watch_open(wr, second, false, getuid(), getgid(), wake, (void *)1L, &dw2), 0);
	CHECK_INT(turned_awake(loop, 0), 0); /* nothing written yet */

	snprintf(path, sizeof(path), "%s/a", dir);
	write_file(path, false);
	CHECK(turned_awake(loop, 0) > 0);
	CHECK_INT(woken[1], 0); /* the other run heard nothing */

	/* A directory made later is watched too. */
	snprintf(path, sizeof(path), "%s/sub", dir);
	CHECK_INT(mkdir(path, 0700), 0);
	CHECK(turned_awake(loop, 0) > 0);
	snprintf(path, sizeof(path), "%s/sub/b", dir);
	write_file(path, false);
	CHECK(turned_awake(loop, 0) > 0);

	/* Written after it was unlinked: no name leads to it, it still wakes. */
	snprintf(path, sizeof(path), "%s/sub/c", dir);
	write_file(path, true);
	CHECK(turned_awake(loop, 0) > 0);

	/* A joined run's workdir. */
	mcpx_disk_watch_add(dw, other);
	snprintf(path, sizeof(path), "%s/d", other);
	write_file(path, false);
	CHECK(turned_awake(loop, 0) > 0);

	/* The second run's own tree wakes it alone. */
	snprintf(path, sizeof(path), "%s/e", second);
	write_file(path, false);
	CHECK(turned_awake(loop, 1) > 0);
	CHECK_INT(woken[0], 0);

	/* Closed: nothing more for it; the other run still hears its own. */
	mcpx_disk_watch_close(dw);
	snprintf(path, sizeof(path), "%s/f", dir);
	write_file(path, false);
	CHECK_INT(turned_awake(loop, 0), 0);
	snprintf(path, sizeof(path), "%s/g", second);
	write_file(path, false);
	CHECK(turned_awake(loop, 1) > 0);
	mcpx_disk_watch_close(dw2);

	/* /dev/shm: only the run's own entries (by owner and group) wake it. */
	snprintf(shm, sizeof(shm), "/dev/shm/mcpx-disk-watch-%d", (int)getpid());
	CHECK_INT(
	    mcpx_disk_watch_open(wr, dir, true, getuid() + 1, getgid(), wake, (void *)0L, &dw), 0);
	write_file(shm, false);
	CHECK_INT(turned_awake(loop, 0), 0); /* another uid's entry */
	mcpx_disk_watch_close(dw);
	CHECK_INT(mcpx_disk_watch_open(wr, dir, true, getuid(), getgid(), wake, (void *)0L, &dw),
	          0);
	write_file(shm, false);
	CHECK(turned_awake(loop, 0) > 0);
	mcpx_disk_watch_close(dw);
	unlink(shm);

	mcpx_disk_watcher_free(wr);
	snprintf(path, sizeof(path), "rm -rf %s %s %s", dir, other, second);
	CHECK_INT(system(path), 0);
	mcpx_loop_free(loop);
	CHECK_DONE();
}
