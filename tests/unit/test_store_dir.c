/*
 * test_store_dir.c - what only the directory store has: its files on disk.
 *
 * A writer killed mid-put leaves the old blob or the new one, never a mix;
 * a lock held elsewhere makes operations fail at their deadline instead of
 * hanging, and the store works again once it is released; the sweep takes
 * expired files off the disk; the layout keeps callers' identities out of
 * paths and its modes private; opening refuses a v1/ others may enter.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_fixture.h"

#define BIG (24u << 20)

static void fill(char *p, size_t n, char seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(seed + (char)(i % 251));
}

static bool is_fill(const char *p, size_t n, char seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (char)(seed + (char)(i % 251)))
			return false;
	return true;
}

/* A child puts "new" over "old" again and again; it is killed at a
 * different moment each round; the blob read afterwards is one or the
 * other, whole. */
static void test_killed_mid_put(void)
{
	struct store_fx fx;
	struct mcpx_store *s;
	struct mcpx_store_put_opts o = {.ttl_ms = 600000};
	struct waitres w;
	char *old = malloc(BIG);
	int saw_new = 0, saw_old = 0;
	char cur = 'a';

	REQUIRE(old != NULL);
	REQUIRE(store_fx_init(&fx, FX_DIR) == 0);
	s = store_fx_open(&fx, NULL);
	REQUIRE(s != NULL);
	fill(old, BIG, 'a');
	REQUIRE_INT(fx_put_opts(&fx, s, "olga", "ws", old, BIG, &o, &w), 0);
	waitres_free(&w);
	static const unsigned delays[] = {30, 150, 400, 800, 1200, 2000};

	for (int round = 0; round < 6; round++) {
		pid_t pid = fork();

		if (pid == 0) {
			struct store_fx child = fx;
			struct mcpx_store *cs;

			child.loop = mcpx_loop_new();
			cs = store_fx_open(&child, NULL);
			for (;;) {
				char *n = malloc(BIG);

				fill(n, BIG, (char)('b' + round));
				if (!cs ||
				    fx_put_opts(&child, cs, "olga", "ws", n, BIG, &o, &w) != 0)
					_exit(1);
				free(n);
				waitres_free(&w);
			}
		}
		REQUIRE(pid > 0);
		fx_sleep_ms(delays[round]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		REQUIRE_INT(fx_get(&fx, s, "olga", "ws", false, &w), 0);
		REQUIRE_INT(w.len, BIG);
		if (is_fill(w.data, BIG, (char)('b' + round))) {
			saw_new++;
			cur = (char)('b' + round);
		} else if (is_fill(w.data, BIG, cur)) {
			saw_old++;
		} else {
			CHECK(!"the blob is the old one or the new one, whole");
		}
		waitres_free(&w);
	}
	printf("killed mid-put: %d rounds saw the new blob, %d the old one\n", saw_new, saw_old);
	free(old);
	mcpx_store_free(s);
	store_fx_close(&fx);
}

/* A caller's lock held by another process: operations under it fail with
 * -ETIMEDOUT at their deadline; reads that need no lock still work; after
 * the lock goes, everything does. */
static void test_stuck_lock_times_out(void)
{
	struct store_fx fx;
	struct mcpx_store_config cfg;
	struct mcpx_store *s;
	struct waitres w;
	char path[512], hash_dir[300] = "";
	struct dirent *e;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	DIR *d;
	int fd;

	REQUIRE(store_fx_init(&fx, FX_DIR) == 0);
	store_fx_config(&fx, &cfg);
	cfg.op_timeout_ms = 400;
	s = store_fx_open(&fx, &cfg);
	REQUIRE(s != NULL);
	REQUIRE_INT(fx_put(&fx, s, "paul", "ws", "before", &w), 0);
	waitres_free(&w);
	snprintf(path, sizeof(path), "%s/v1/workspace", fx.store_dir);
	d = opendir(path);
	REQUIRE(d != NULL);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			snprintf(hash_dir, sizeof(hash_dir), "%s", e->d_name);
	closedir(d);
	snprintf(path, sizeof(path), "%s/v1/workspace/%s/.lock", fx.store_dir, hash_dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	REQUIRE(fd >= 0);
	REQUIRE(fcntl(fd, F_OFD_SETLK, &fl) == 0);
	CHECK_INT(fx_put(&fx, s, "paul", "ws", "during", &w), -ETIMEDOUT);
	CHECK(w.error[0] != '\0');
	waitres_free(&w);
	CHECK_INT(fx_get(&fx, s, "paul", "ws", false, &w), 0);
	CHECK(w.len == 6 && memcmp(w.data, "before", 6) == 0);
	waitres_free(&w);
	close(fd);
	/* The put that timed out may still have committed once the lock
	 * went: the store promises only that the caller was told. */
	CHECK_INT(fx_put(&fx, s, "paul", "ws", "after", &w), 0);
	waitres_free(&w);
	CHECK_INT(fx_get(&fx, s, "paul", "ws", false, &w), 0);
	CHECK(w.len == 5 && memcmp(w.data, "after", 5) == 0);
	waitres_free(&w);
	mcpx_store_free(s);
	store_fx_close(&fx);
}

static int count_files(const char *dir)
{
	char cmd[400];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "find '%s' -type f | wc -l", dir);
	p = popen(cmd, "r");
	if (p) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n;
}

static void test_sweep_and_layout(void)
{
	struct store_fx fx;
	struct mcpx_store_config cfg;
	struct mcpx_store_put_opts o = {.ttl_ms = 300};
	struct mcpx_store *s;
	struct waitres w;
	char cmd[1200];
	int n = -1;

	REQUIRE(store_fx_init(&fx, FX_DIR) == 0);
	store_fx_config(&fx, &cfg);
	cfg.sweep_interval_ms = 200;
	s = store_fx_open(&fx, &cfg);
	REQUIRE(s != NULL);
	CHECK_INT(fx_put_opts(&fx, s, "../../etc/quinn", "gone", "x", 1, &o, &w), 0);
	waitres_free(&w);
	o.ttl_ms = 600000;
	CHECK_INT(fx_put_opts(&fx, s, "../../etc/quinn", "kept", "y", 1, &o, &w), 0);
	waitres_free(&w);
	/* Every directory 0700, every file 0600, and beneath v1/<kind>/ only
	 * 32 lower-case hex digits name a caller. */
	snprintf(
	    cmd, sizeof(cmd),
	    "test -z \"$(find '%s/v1' -type d ! -perm 700; find '%s/v1' -type f ! -perm 600)\" "
	    "&& ls '%s/v1/workspace' | grep -qxE '[0-9a-f]{32}' && "
	    "test \"$(ls '%s/v1/workspace' | wc -l)\" = 1",
	    fx.store_dir, fx.store_dir, fx.store_dir, fx.store_dir);
	CHECK(system(cmd) == 0);
	for (int i = 0; i < 50 && (n = count_files(fx.store_dir)) > 2; i++)
		fx_turn_for(fx.loop, 100);
	/* Left: the lock and the kept blob. */
	CHECK_INT(n, 2);
	CHECK_INT(fx_get(&fx, s, "../../etc/quinn", "kept", false, &w), 0);
	waitres_free(&w);
	mcpx_store_free(s);
	store_fx_close(&fx);
}

static void test_open_refusals(void)
{
	struct store_fx fx;
	struct mcpx_store_config cfg;
	struct mcpx_store *s = NULL;
	struct mcpx_err err = {{0}};
	char path[300];
	FILE *f;

	REQUIRE(store_fx_init(&fx, FX_DIR) == 0);
	store_fx_config(&fx, &cfg);
	/* Made with its parents when missing. */
	snprintf(cfg.spec.dir, sizeof(cfg.spec.dir), "%s/a/b/c", fx.tmp);
	CHECK_INT(mcpx_store_open(fx.loop, &cfg, &s, &err), 0);
	mcpx_store_free(s);
	/* A v1/ others may enter. */
	snprintf(path, sizeof(path), "%s/a/b/c/v1", fx.tmp);
	CHECK(chmod(path, 0755) == 0);
	CHECK(mcpx_store_open(fx.loop, &cfg, &s, &err) < 0);
	CHECK(strstr(err.msg, "chmod 700") != NULL);
	CHECK(strstr(err.msg, fx.tmp) == NULL);
	/* A file where the directory should be. */
	snprintf(path, sizeof(path), "%s/file", fx.tmp);
	f = fopen(path, "w");
	if (f)
		fclose(f);
	snprintf(cfg.spec.dir, sizeof(cfg.spec.dir), "%s", path);
	CHECK(mcpx_store_open(fx.loop, &cfg, &s, &err) < 0);
	store_fx_close(&fx);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_killed_mid_put();
	test_stuck_lock_times_out();
	test_sweep_and_layout();
	test_open_refusals();
	CHECK_DONE();
}
