/*
 * test_store_redis.c - what only the Redis store has: a server that goes
 * away and comes back, one that hangs, a wrong password, a name to resolve,
 * a database number, an upload cut short, and logs that never name the
 * address or the password.
 *
 * Each scenario starts Debian's redis-server itself (store_fixture.h) on a
 * free loopback port with a password and stops it by pid; without
 * redis-server the test is skipped (77).
 */
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_fixture.h"
#include "store_redis_raw.h"

/* Stopped mid-run: operations fail at once with -ENOTCONN (not at their
 * deadline), an operation in flight fails too, and once the server is back
 * the same store works without being reopened. */
static void test_stop_and_restart(void)
{
	struct store_fx fx;
	struct mcpx_store *s;
	struct waitres w;
	uint64_t t0;

	REQUIRE(store_fx_init(&fx, FX_REDIS) == 0);
	s = store_fx_open(&fx, NULL);
	REQUIRE(s != NULL);
	CHECK_INT(fx_put(&fx, s, "ann", "ws", "v1", &w), 0);
	waitres_free(&w);
	fx_redis_stop(&fx);
	t0 = mcpx_now_us();
	CHECK_INT(fx_get(&fx, s, "ann", "ws", false, &w), -ENOTCONN);
	CHECK(strstr(w.error, "unreachable") || strstr(w.error, "lost"));
	/* Well before the 10 s deadline: one connect attempt at most. */
	CHECK(mcpx_now_us() - t0 < 5000000u);
	waitres_free(&w);
	CHECK_INT(fx_put(&fx, s, "ann", "ws", "v2", &w), -ENOTCONN);
	waitres_free(&w);
	/* Back on the same port (its data is gone: nothing was saved). */
	REQUIRE(fx_redis_start(&fx) == 0);
	CHECK_INT(fx_put(&fx, s, "ann", "ws", "v3", &w), 0);
	waitres_free(&w);
	CHECK_INT(fx_get(&fx, s, "ann", "ws", false, &w), 0);
	CHECK(w.len == 2 && memcmp(w.data, "v3", 2) == 0);
	waitres_free(&w);
	mcpx_store_free(s);
	store_fx_close(&fx);
}

/* A server that stops answering (SIGSTOP): the operation fails at its
 * deadline; after SIGCONT the store reconnects and works. */
static void test_hung_server(void)
{
	struct store_fx fx;
	struct mcpx_store_config cfg;
	struct mcpx_store *s;
	struct waitres w;

	REQUIRE(store_fx_init(&fx, FX_REDIS) == 0);
	store_fx_config(&fx, &cfg);
	cfg.op_timeout_ms = 600;
	s = store_fx_open(&fx, &cfg);
	REQUIRE(s != NULL);
	CHECK_INT(fx_put(&fx, s, "ben", "ws", "v1", &w), 0);
	waitres_free(&w);
	kill(fx.redis_pid, SIGSTOP);
	CHECK_INT(fx_get(&fx, s, "ben", "ws", false, &w), -ETIMEDOUT);
	waitres_free(&w);
	kill(fx.redis_pid, SIGCONT);
	fx_turn_for(fx.loop, 300);
	CHECK_INT(fx_get(&fx, s, "ben", "ws", false, &w), 0);
	CHECK(w.len == 2 && memcmp(w.data, "v1", 2) == 0);
	waitres_free(&w);
	mcpx_store_free(s);
	store_fx_close(&fx);
}

static void test_wrong_password_and_names(void)
{
	struct store_fx fx;
	struct mcpx_store_config cfg;
	struct mcpx_store *s;
	struct waitres w;
	redisContext *c;
	FILE *f;

	REQUIRE(store_fx_init(&fx, FX_REDIS) == 0);
	/* A wrong password: refused, and said so. */
	store_fx_config(&fx, &cfg);
	snprintf(cfg.spec.password_file, sizeof(cfg.spec.password_file), "%s/wrong", fx.tmp);
	f = fopen(cfg.spec.password_file, "w");
	REQUIRE(f != NULL);
	fputs("not-the-password\n", f);
	fclose(f);
	s = store_fx_open(&fx, &cfg);
	REQUIRE(s != NULL);
	CHECK_INT(fx_get(&fx, s, "cy", "ws", false, &w), -ENOTCONN);
	CHECK(strstr(w.error, "refused the login") != NULL);
	CHECK(strstr(w.error, "not-the-password") == NULL);
	waitres_free(&w);
	mcpx_store_free(s);
	/* A host name, resolved off the loop; database 3. */
	store_fx_config(&fx, &cfg);
	snprintf(cfg.spec.host, sizeof(cfg.spec.host), "localhost");
	cfg.spec.db = 3;
	s = store_fx_open(&fx, &cfg);
	REQUIRE(s != NULL);
	CHECK_INT(fx_put(&fx, s, "cy", "ws", "in db 3", &w), 0);
	waitres_free(&w);
	mcpx_store_free(s);
	c = raw(&fx, 3);
	REQUIRE(c && !c->err);
	CHECK(raw_int(c, "DBSIZE") >= 2); /* the blob and its name set */
	redisFree(c);
	c = raw(&fx, 0);
	REQUIRE(c && !c->err);
	CHECK_INT(raw_int(c, "DBSIZE"), 0);
	redisFree(c);
	/* No password file: the server asks for one. */
	store_fx_config(&fx, &cfg);
	cfg.spec.password_file[0] = '\0';
	s = store_fx_open(&fx, &cfg);
	REQUIRE(s != NULL);
	CHECK_INT(fx_get(&fx, s, "cy", "ws", false, &w), -ENOTCONN);
	waitres_free(&w);
	mcpx_store_free(s);
	store_fx_close(&fx);
}

#define BIG (24u << 20)

static bool all_eq(const char *p, size_t n, char c)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != c)
			return false;
	return true;
}

/* A writer killed mid-upload: the blob is the old one, whole, or the new
 * one, whole; the upload key it left has a TTL and is not listed. */
static void test_killed_mid_upload(void)
{
	static const unsigned delays[] = {40, 120, 300, 700};
	struct store_fx fx;
	struct mcpx_store_put_opts o = {.ttl_ms = 600000};
	struct mcpx_store *s;
	struct waitres w;
	redisContext *c;
	char *old = malloc(BIG);
	char cur = 'a';
	int saw_new = 0, saw_old = 0;

	REQUIRE(old != NULL);
	REQUIRE(store_fx_init(&fx, FX_REDIS) == 0);
	s = store_fx_open(&fx, NULL);
	REQUIRE(s != NULL);
	memset(old, 'a', BIG);
	REQUIRE_INT(fx_put_opts(&fx, s, "dee", "ws", old, BIG, &o, &w), 0);
	waitres_free(&w);
	for (unsigned round = 0; round < 4; round++) {
		char seed = (char)('b' + round);
		pid_t pid = fork();

		if (pid == 0) {
			struct store_fx child = fx;
			struct mcpx_store *cs;

			child.redis_pid = 0;
			child.loop = mcpx_loop_new();
			cs = store_fx_open(&child, NULL);
			for (;;) {
				char *n = malloc(BIG);

				memset(n, seed, BIG);
				if (!cs ||
				    fx_put_opts(&child, cs, "dee", "ws", n, BIG, &o, &w) != 0)
					_exit(1);
				free(n);
				waitres_free(&w);
			}
		}
		REQUIRE(pid > 0);
		fx_sleep_ms(delays[round]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		REQUIRE_INT(fx_get(&fx, s, "dee", "ws", false, &w), 0);
		REQUIRE_INT(w.len, BIG);
		if (all_eq(w.data, BIG, seed)) {
			saw_new++;
			cur = seed;
		} else if (all_eq(w.data, BIG, cur)) {
			saw_old++;
		} else {
			CHECK(!"the blob is the old one or the new one, whole");
		}
		waitres_free(&w);
	}
	printf("killed mid-upload: %d rounds saw the new blob, %d the old one\n", saw_new, saw_old);
	CHECK_INT(fx_list(&fx, s, "dee", "workspace", MCPX_STORE_LIST_BLOBS, &w), 0);
	CHECK_INT(w.n_entries, 1);
	waitres_free(&w);
	c = raw(&fx, 0);
	REQUIRE(c && !c->err);
	{
		redisReply *keys = redisCommand(c, "KEYS *:t:*");

		for (size_t i = 0; keys && i < keys->elements; i++) {
			redisReply *ttl = redisCommand(c, "PTTL %s", keys->element[i]->str);

			CHECK(ttl && ttl->type == REDIS_REPLY_INTEGER && ttl->integer > 0);
			freeReplyObject(ttl);
		}
		freeReplyObject(keys);
	}
	redisFree(c);
	free(old);
	mcpx_store_free(s);
	store_fx_close(&fx);
}

/* What the store logged while all of the above can happen (down, up,
 * refused) never holds the password, the address or the port. */
static void test_logs_hold_no_address(void)
{
	struct store_fx fx;
	struct mcpx_store *s;
	struct waitres w;
	char log_path[128], port[16], buf[8192];
	int saved = dup(2), fd;
	ssize_t n;

	REQUIRE(store_fx_init(&fx, FX_REDIS) == 0);
	snprintf(log_path, sizeof(log_path), "%s/stderr", fx.tmp);
	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	REQUIRE(fd >= 0);
	dup2(fd, 2);
	s = store_fx_open(&fx, NULL);
	if (s) {
		(void)fx_put(&fx, s, "eve", "ws", "x", &w);
		waitres_free(&w);
		fx_redis_stop(&fx);
		(void)fx_get(&fx, s, "eve", "ws", false, &w);
		waitres_free(&w);
		(void)fx_redis_start(&fx);
		(void)fx_get(&fx, s, "eve", "ws", false, &w);
		waitres_free(&w);
		mcpx_store_free(s);
	}
	dup2(saved, 2);
	close(saved);
	close(fd);
	fd = open(log_path, O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	snprintf(port, sizeof(port), "%d", fx.redis_port);
	CHECK(n > 0); /* it did log: the connection, the loss */
	CHECK(strstr(buf, FX_PASSWORD) == NULL);
	CHECK(strstr(buf, "127.0.0.1") == NULL);
	CHECK(strstr(buf, port) == NULL);
	store_fx_close(&fx);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (!fx_have_redis()) {
		printf("skip: redis-server is not installed (scripts/deps.sh --test)\n");
		return 77;
	}
	test_stop_and_restart();
	test_hung_server();
	test_wrong_password_and_names();
	test_killed_mid_upload();
	test_logs_hold_no_address();
	CHECK_DONE();
}
