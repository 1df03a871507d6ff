/*
 * test_store_redis_read.c - the Redis store reads a blob in pieces (so no
 * loop turn parses or copies more than one), and a read never returns a
 * mix of two versions: a put that renames a new blob over the key between
 * two pieces makes the read start again (redis_get.c).
 *
 * Pieces are made small here (redis_piece_bytes, 1 KiB and 4 KiB) so that
 * a read of a few hundred KiB is many round trips a writer can land
 * between. Writers are this test's own hiredis connection, which replaces
 * the blob at chosen points of a read, and another process putting
 * through a store of its own, as another replica would. Each scenario
 * starts Debian's redis-server itself (store_fixture.h); without it the
 * test is skipped (77).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_fixture.h"
#include "store_redis_raw.h"

static struct mcpx_store *open_pieces(struct store_fx *fx, uint32_t piece)
{
	struct mcpx_store_config cfg;

	store_fx_config(fx, &cfg);
	cfg.redis_piece_bytes = piece;
	return store_fx_open(fx, &cfg);
}

static bool all_eq(const char *p, size_t n, char c)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != c)
			return false;
	return true;
}

static char pattern(size_t i)
{
	return (char)(i * 31 + (i >> 10));
}

/* Each of lens, put then got (refreshed or not) on s: byte for byte, with
 * its TTL. */
static void roundtrip_lens(struct store_fx *fx, struct mcpx_store *s, const size_t *lens, size_t n)
{
	struct mcpx_store_put_opts o = {.ttl_ms = 60000};
	struct waitres w;

	for (size_t i = 0; i < n; i++) {
		char *b = malloc(lens[i] + 1);
		int64_t t0 = fx_now_ms();
		bool same = true;

		REQUIRE(b != NULL);
		for (size_t j = 0; j < lens[i]; j++)
			b[j] = pattern(j);
		CHECK_INT(fx_put_opts(fx, s, "ida", "ws", b, lens[i], &o, &w), 0);
		waitres_free(&w);
		CHECK_INT(fx_get(fx, s, "ida", "ws", i % 2 == 0, &w), 0);
		CHECK_INT(w.len, lens[i]);
		for (size_t j = 0; w.data && j < lens[i] && j < w.len; j++)
			same = same && w.data[j] == b[j];
		CHECK(w.data && same);
		CHECK(w.expires_ms > t0 + 50000 && w.expires_ms <= fx_now_ms() + 60000);
		CHECK(w.last_used_ms >= t0 - 1000 && w.last_used_ms <= fx_now_ms() + 1000);
		waitres_free(&w);
		free(b);
	}
}

/* Lengths around the piece's edges (1 KiB pieces; then the default 1 MiB,
 * with a put of one piece inline in its script up to 64 KiB, a SET and the
 * script above) come back byte for byte; the piece's bounds are checked
 * when opening; a key that does not end in a trailer is a damaged blob. */
static void test_pieces_roundtrip(void)
{
	static const size_t small[] = {0, 1, 1023, 1024, 1025, 4096, (64u << 10) + 17};
	static const size_t large[] = {64u << 10, (64u << 10) + 1, 1u << 20, (1u << 20) + 1};
	struct mcpx_store_config cfg;
	struct mcpx_err err = {{0}};
	struct store_fx fx;
	struct mcpx_store *s;
	struct waitres w;
	redisContext *c;
	char key[320];

	REQUIRE(store_fx_init(&fx, FX_REDIS) == 0);
	store_fx_config(&fx, &cfg);
	cfg.redis_piece_bytes = 1000;
	CHECK_INT(mcpx_store_open(fx.loop, &cfg, &s, &err), -EINVAL);
	CHECK(strstr(err.msg, "piece") != NULL);
	s = open_pieces(&fx, 1024);
	REQUIRE(s != NULL);
	roundtrip_lens(&fx, s, small, sizeof(small) / sizeof(small[0]));
	CHECK_INT(fx_get(&fx, s, "ida", "none", false, &w), -ENOENT);
	waitres_free(&w);
	mcpx_store_free(s);
	s = store_fx_open(&fx, NULL);
	REQUIRE(s != NULL);
	roundtrip_lens(&fx, s, large, sizeof(large) / sizeof(large[0]));
	c = raw(&fx, 0);
	REQUIRE(c && !c->err);
	REQUIRE(raw_key(c, "*:b:ws", key, sizeof(key)));
	freeReplyObject(
	    redisCommand(c, "SET %s %s", key, "not a blob of this store, 40 bytes or more"));
	CHECK_INT(fx_get(&fx, s, "ida", "ws", false, &w), -EIO);
	CHECK(strstr(w.error, "damaged") != NULL);
	CHECK(w.data == NULL);
	waitres_free(&w);
	redisFree(c);
	mcpx_store_free(s);
	store_fx_close(&fx);
}

/* Starts a get of caller's "ws" on s, turns the loop until the server has
 * run `execs` more transactions (the head and some pieces: redis_get.c),
 * then returns with the read under way; w gets its result. */
static void start_get_until(struct store_fx *fx, struct mcpx_store *s, redisContext *c,
                            const char *caller, long long execs, struct waitres *w)
{
	struct mcpx_store_key k = fx_key(caller, "workspace", "ws");
	long long n0 = raw_calls(c, "exec");

	memset(w, 0, sizeof(*w));
	CHECK_INT(mcpx_store_get(s, &k, false, waitres_cb, w, NULL), 0);
	for (int i = 0; i < 200000 && !w->done && raw_calls(c, "exec") < n0 + execs; i++)
		(void)mcpx_loop_turn(fx->loop);
}

/* A new version renamed over the key after the read took the old one's
 * head and first pieces: the read starts again and returns the new one
 * whole, of its own length, never the old one's first part with the new
 * one's rest. */
static void test_replaced_mid_read(void)
{
	static const size_t news[] = {64u << 10, 48u << 10, 80u << 10};
	size_t len = 64u << 10;
	struct store_fx fx;
	struct mcpx_store *s;
	struct waitres w;
	redisContext *c;
	char key[320], *a = malloc(len);

	REQUIRE(a != NULL);
	REQUIRE(store_fx_init(&fx, FX_REDIS) == 0);
	s = open_pieces(&fx, 1024);
	REQUIRE(s != NULL);
	c = raw(&fx, 0);
	REQUIRE(c && !c->err);
	for (size_t i = 0; i < sizeof(news) / sizeof(news[0]); i++) {
		struct mcpx_store_put_opts o = {.ttl_ms = 60000};
		char fill = (char)('p' + i);

		memset(a, 'a', len);
		REQUIRE_INT(fx_put_opts(&fx, s, "jo", "ws", a, len, &o, &w), 0);
		waitres_free(&w);
		REQUIRE(raw_key(c, "*:b:ws", key, sizeof(key)));
		/* The head and at least one piece of 64 were served. */
		start_get_until(&fx, s, c, "jo", 2, &w);
		CHECK(!w.done);
		REQUIRE(raw_put_blob(c, key, fill, news[i], 1000 + i));
		REQUIRE_INT(fx_wait(&fx, &w), 0);
		CHECK_INT(w.len, news[i]);
		CHECK(w.data && all_eq(w.data, w.len, fill));
		waitres_free(&w);
	}
	/* Gone mid-read (expired, deleted): the read says so. */
	memset(a, 'a', len);
	{
		struct mcpx_store_put_opts o = {.ttl_ms = 60000};

		REQUIRE_INT(fx_put_opts(&fx, s, "jo", "ws", a, len, &o, &w), 0);
		waitres_free(&w);
	}
	start_get_until(&fx, s, c, "jo", 2, &w);
	{
		redisReply *r = redisCommand(c, "DEL %s", key);

		CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
		freeReplyObject(r);
	}
	CHECK_INT(fx_wait(&fx, &w), -ENOENT);
	CHECK(w.data == NULL);
	waitres_free(&w);
	redisFree(c);
	free(a);
	mcpx_store_free(s);
	store_fx_close(&fx);
}

/* Replaced on every loop turn, the read gives up after a few attempts
 * with -EAGAIN and no bytes; left alone, the next read is whole. */
static void test_replaced_every_turn(void)
{
	struct mcpx_store_put_opts o = {.ttl_ms = 60000};
	struct mcpx_store_key k = fx_key("kim", "workspace", "ws");
	size_t len = 64u << 10;
	unsigned long long version = 1;
	struct store_fx fx;
	struct mcpx_store *s;
	struct waitres w;
	redisContext *c;
	char key[320], *a = malloc(len);

	REQUIRE(a != NULL);
	REQUIRE(store_fx_init(&fx, FX_REDIS) == 0);
	s = open_pieces(&fx, 1024);
	REQUIRE(s != NULL);
	c = raw(&fx, 0);
	REQUIRE(c && !c->err);
	memset(a, 'a', len);
	REQUIRE_INT(fx_put_opts(&fx, s, "kim", "ws", a, len, &o, &w), 0);
	waitres_free(&w);
	REQUIRE(raw_key(c, "*:b:ws", key, sizeof(key)));
	memset(&w, 0, sizeof(w));
	REQUIRE_INT(mcpx_store_get(s, &k, false, waitres_cb, &w, NULL), 0);
	for (int i = 0; i < 100000 && !w.done; i++) {
		(void)mcpx_loop_turn(fx.loop);
		CHECK(raw_put_blob(c, key, (char)('b' + version % 20), len, version));
		version++;
	}
	CHECK(w.done);
	CHECK_INT(w.rc, -EAGAIN);
	CHECK(strstr(w.error, "replaced") != NULL);
	CHECK(w.data == NULL);
	waitres_free(&w);
	CHECK_INT(fx_get(&fx, s, "kim", "ws", false, &w), 0);
	CHECK_INT(w.len, len);
	CHECK(w.data && all_eq(w.data, len, (char)('b' + (version - 1) % 20)));
	waitres_free(&w);
	redisFree(c);
	free(a);
	mcpx_store_free(s);
	store_fx_close(&fx);
}

/* Version v of the racing writer: its length and its byte go together, so
 * a mix shows as a wrong byte or a wrong length. */
static size_t race_len(unsigned v)
{
	return v % 2 ? (120u << 10) + 7 : 200u << 10;
}

static char race_fill(unsigned v)
{
	return (char)('A' + v % 26);
}

/* Another replica putting version after version through a store of its
 * own (4 KiB pieces: uploads of 30 to 50 chunks, each renamed into place
 * whole), until killed. */
static void race_writer(struct store_fx *fx)
{
	struct mcpx_store_put_opts o = {.ttl_ms = 60000};
	struct store_fx child = *fx;
	struct mcpx_store *cs;
	struct waitres w;

	child.redis_pid = 0;
	child.loop = mcpx_loop_new();
	cs = child.loop ? open_pieces(&child, 4096) : NULL;
	for (unsigned v = 1; cs; v++) {
		size_t n = race_len(v);
		char *b = malloc(n);

		if (!b)
			break;
		memset(b, race_fill(v), n);
		if (fx_put_opts(&child, cs, "lee", "ws", b, n, &o, &w) != 0)
			break;
		free(b);
		waitres_free(&w);
		fx_sleep_ms(v % 3); /* now and then, a read fits between two puts */
	}
	_exit(1);
}

/* A reader racing that writer: every read is one version, whole (its
 * length and its byte agree), or -EAGAIN; never a mix. */
static void test_reader_racing_writer(void)
{
	struct mcpx_store_put_opts o = {.ttl_ms = 60000};
	int whole = 0, gave_up = 0, versions = 0;
	char last = 0;
	struct store_fx fx;
	struct mcpx_store *s;
	struct waitres w;
	pid_t pid;
	char *b = malloc(race_len(0));

	REQUIRE(b != NULL);
	REQUIRE(store_fx_init(&fx, FX_REDIS) == 0);
	s = open_pieces(&fx, 4096);
	REQUIRE(s != NULL);
	memset(b, race_fill(0), race_len(0));
	REQUIRE_INT(fx_put_opts(&fx, s, "lee", "ws", b, race_len(0), &o, &w), 0);
	waitres_free(&w);
	pid = fork();
	if (pid == 0)
		race_writer(&fx);
	REQUIRE(pid > 0);
	/* 60 reads, or more until the writer was seen to write. */
	for (int i = 0; i < 600 && (i < 60 || versions < 3); i++) {
		int rc = fx_get(&fx, s, "lee", "ws", i % 2 == 0, &w);

		if (rc == -EAGAIN) {
			gave_up++;
			CHECK(w.data == NULL);
		} else if (rc == 0 && w.len > 0) {
			char c = w.data[0];
			unsigned v = (unsigned)(c - 'A');

			CHECK(all_eq(w.data, w.len, c));
			CHECK_INT(w.len, race_len(v));
			whole++;
			versions += c != last;
			last = c;
		} else {
			CHECK_INT(rc, 0);
		}
		waitres_free(&w);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	printf("racing a writer: %d reads whole (%d versions), %d gave up\n", whole, versions,
	       gave_up);
	CHECK(whole > 0);
	CHECK(versions >= 3); /* the writer did write during the reads */
	free(b);
	mcpx_store_free(s);
	store_fx_close(&fx);
}

/* A reply larger than any the store asks for (a record's value of 3 MiB,
 * written behind its back) is not parsed on the loop: the connection is
 * dropped, the read fails, and the store works again after. */
static void test_oversized_reply(void)
{
	struct mcpx_store_record_opts ro = {.expect_version = 0, .ttl_ms = 60000};
	struct mcpx_store_key k = fx_key("max", "task", "t1");
	size_t big = 3u << 20;
	struct store_fx fx;
	struct mcpx_store *s;
	struct waitres w;
	redisContext *c;
	redisReply *r;
	char key[320], *d = malloc(big);

	REQUIRE(d != NULL);
	memset(d, 'x', big);
	REQUIRE(store_fx_init(&fx, FX_REDIS) == 0);
	s = store_fx_open(&fx, NULL);
	REQUIRE(s != NULL);
	memset(&w, 0, sizeof(w));
	REQUIRE_INT(mcpx_store_record_put(s, &k, "{}", 2, &ro, waitres_cb, &w, NULL), 0);
	REQUIRE_INT(fx_wait(&fx, &w), 0);
	waitres_free(&w);
	c = raw(&fx, 0);
	REQUIRE(c && !c->err);
	REQUIRE(raw_key(c, "*:r:t1", key, sizeof(key)));
	r = redisCommand(c, "HSET %s d %b", key, d, big);
	CHECK(r && r->type == REDIS_REPLY_INTEGER);
	freeReplyObject(r);
	memset(&w, 0, sizeof(w));
	REQUIRE_INT(mcpx_store_record_get(s, &k, waitres_cb, &w, NULL), 0);
	CHECK_INT(fx_wait(&fx, &w), -ENOTCONN);
	CHECK(strstr(w.error, "lost") != NULL);
	CHECK(w.data == NULL);
	waitres_free(&w);
	CHECK_INT(fx_put(&fx, s, "max", "ws", "after", &w), 0);
	waitres_free(&w);
	CHECK_INT(fx_get(&fx, s, "max", "ws", false, &w), 0);
	CHECK(w.len == 5 && memcmp(w.data, "after", 5) == 0);
	waitres_free(&w);
	redisFree(c);
	free(d);
	mcpx_store_free(s);
	store_fx_close(&fx);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (!fx_have_redis()) {
		printf("skip: redis-server is not installed (scripts/deps.sh --test)\n");
		return 77;
	}
	test_pieces_roundtrip();
	test_replaced_mid_read();
	test_replaced_every_turn();
	test_reader_racing_writer();
	test_oversized_reply();
	CHECK_DONE();
}
