/*
 * test_store.c - the store's contract (store.h), one suite run against
 * every backend in a table: the directory store and the Redis store (on a
 * redis-server this test starts on loopback with a password).
 *
 * Blobs round-trip byte for byte and are replaced whole; callers never see
 * each other's; names and kinds outside their alphabets are refused at
 * once; the count and byte caps and the hard size cap hold; TTLs expire
 * and gets refresh them; records change only at the version expected;
 * leases exclude other owners (in one store instance and across two, as two
 * replicas), are waited for, renewed, released, fence puts, lapse when
 * their holder is killed, and tell a holder that lost one; a cancelled
 * operation never calls back; a 64 MiB blob goes through while the loop
 * keeps turning.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_fixture.h"

static void test_blob_roundtrip(struct store_fx *fx, struct mcpx_store *s)
{
	static const char bin[] = "a\0b\r\n\xff\x00z";
	struct mcpx_store_put_opts o = {.ttl_ms = 60000};
	struct waitres w;
	int64_t before = fx_now_ms();

	CHECK_INT(fx_put_opts(fx, s, "alice", "ws1", bin, sizeof(bin), &o, &w), 0);
	CHECK(w.expires_ms >= before + 60000 - 5);
	waitres_free(&w);
	REQUIRE_INT(fx_get(fx, s, "alice", "ws1", false, &w), 0);
	CHECK_INT(w.len, sizeof(bin));
	CHECK(w.data && memcmp(w.data, bin, sizeof(bin)) == 0);
	waitres_free(&w);
	/* Replaced whole. */
	CHECK_INT(fx_put(fx, s, "alice", "ws1", "second", &w), 0);
	waitres_free(&w);
	CHECK_INT(fx_get(fx, s, "alice", "ws1", true, &w), 0);
	CHECK(w.len == 6 && memcmp(w.data, "second", 6) == 0);
	waitres_free(&w);
	/* Empty blobs are blobs. */
	CHECK_INT(fx_put(fx, s, "alice", "empty", "", &w), 0);
	waitres_free(&w);
	CHECK_INT(fx_get(fx, s, "alice", "empty", false, &w), 0);
	CHECK_INT(w.len, 0);
	waitres_free(&w);
	CHECK_INT(fx_get(fx, s, "alice", "missing", false, &w), -ENOENT);
	CHECK(w.error[0] != '\0');
	waitres_free(&w);
}

static void test_list_delete(struct store_fx *fx, struct mcpx_store *s)
{
	struct mcpx_store_key k = fx_key("lister", "workspace", "b");
	struct waitres w;

	CHECK_INT(fx_put(fx, s, "lister", "b", "22", &w), 0);
	waitres_free(&w);
	CHECK_INT(fx_put(fx, s, "lister", "a", "1", &w), 0);
	waitres_free(&w);
	CHECK_INT(fx_put(fx, s, "lister", "c.d-e_f", "333", &w), 0);
	waitres_free(&w);
	REQUIRE_INT(fx_list(fx, s, "lister", "workspace", MCPX_STORE_LIST_BLOBS, &w), 0);
	REQUIRE_INT(w.n_entries, 3);
	CHECK_STR(w.entries[0].name, "a");
	CHECK_INT(w.entries[0].bytes, 1);
	CHECK_STR(w.entries[1].name, "b");
	CHECK_INT(w.entries[1].bytes, 2);
	CHECK_STR(w.entries[2].name, "c.d-e_f");
	CHECK(w.entries[2].expires_ms > w.entries[2].last_used_ms);
	waitres_free(&w);
	/* Another kind of the same caller is another namespace. */
	CHECK_INT(fx_list(fx, s, "lister", "task", MCPX_STORE_LIST_BLOBS, &w), 0);
	CHECK_INT(w.n_entries, 0);
	waitres_free(&w);
	CHECK_INT(mcpx_store_delete(s, &k, NULL, waitres_cb, &w, NULL), 0);
	CHECK_INT(fx_wait(fx, &w), 0);
	waitres_free(&w);
	CHECK_INT(mcpx_store_delete(s, &k, NULL, waitres_cb, &w, NULL), 0);
	CHECK_INT(fx_wait(fx, &w), -ENOENT);
	waitres_free(&w);
	CHECK_INT(fx_get(fx, s, "lister", "b", false, &w), -ENOENT);
	waitres_free(&w);
	CHECK_INT(fx_list(fx, s, "lister", "workspace", MCPX_STORE_LIST_BLOBS, &w), 0);
	CHECK_INT(w.n_entries, 2);
	waitres_free(&w);
	/* A caller that never stored anything has an empty list. */
	CHECK_INT(fx_list(fx, s, "nobody", "workspace", MCPX_STORE_LIST_BLOBS, &w), 0);
	CHECK_INT(w.n_entries, 0);
	waitres_free(&w);
}

/* One caller can neither read, list, overwrite nor delete another's; the
 * caller's bytes never matter (slashes, dots, long names). */
static void test_callers_apart(struct store_fx *fx, struct mcpx_store *s)
{
	static const char *const callers[] = {"bob", "../bob", "bob/..",
	                                      "system:serviceaccount:a:b", "bob\n"};
	struct mcpx_store_key k;
	struct waitres w;
	char long_caller[400];

	memset(long_caller, 'x', sizeof(long_caller) - 1);
	long_caller[sizeof(long_caller) - 1] = '\0';
	CHECK_INT(fx_put(fx, s, "bob", "shared-name", "bob's", &w), 0);
	waitres_free(&w);
	for (size_t i = 1; i < sizeof(callers) / sizeof(callers[0]); i++) {
		CHECK_INT(fx_get(fx, s, callers[i], "shared-name", false, &w), -ENOENT);
		waitres_free(&w);
		CHECK_INT(fx_list(fx, s, callers[i], "workspace", MCPX_STORE_LIST_BLOBS, &w), 0);
		CHECK_INT(w.n_entries, 0);
		waitres_free(&w);
		k = fx_key(callers[i], "workspace", "shared-name");
		CHECK_INT(mcpx_store_delete(s, &k, NULL, waitres_cb, &w, NULL), 0);
		CHECK_INT(fx_wait(fx, &w), -ENOENT);
		waitres_free(&w);
		CHECK_INT(fx_put(fx, s, callers[i], "shared-name", callers[i], &w), 0);
		waitres_free(&w);
	}
	CHECK_INT(fx_put(fx, s, long_caller, "shared-name", "long", &w), 0);
	waitres_free(&w);
	REQUIRE_INT(fx_get(fx, s, "bob", "shared-name", false, &w), 0);
	CHECK(w.len == 5 && memcmp(w.data, "bob's", 5) == 0);
	waitres_free(&w);
	REQUIRE_INT(fx_get(fx, s, "../bob", "shared-name", false, &w), 0);
	CHECK(w.len == 6 && memcmp(w.data, "../bob", 6) == 0);
	waitres_free(&w);
}

static void test_refused_at_once(struct store_fx *fx, struct mcpx_store *s)
{
	static const char *const bad_names[] = {"",    ".", "..",    ".hidden", "a/b",
	                                        "a b", "ä", "-lead", "a\nb",    "_x"};
	static const char *const bad_kinds[] = {"", "Workspace", "1ws", "ws-x",
	                                        "kind_that_is_too_long"};
	struct mcpx_store_put_opts o = {.ttl_ms = 1000};
	struct mcpx_store_key k;
	struct waitres w;
	char long_name[MCPX_STORE_NAME_MAX + 2];
	char *big;

	memset(&w, 0, sizeof(w));
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		k = fx_key("carol", "workspace", bad_names[i]);
		CHECK_INT(mcpx_store_get(s, &k, false, waitres_cb, &w, NULL), -EINVAL);
	}
	for (size_t i = 0; i < sizeof(bad_kinds) / sizeof(bad_kinds[0]); i++) {
		k = fx_key("carol", bad_kinds[i], "ok");
		CHECK_INT(mcpx_store_get(s, &k, false, waitres_cb, &w, NULL), -EINVAL);
	}
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	k = fx_key("carol", "workspace", long_name);
	CHECK_INT(mcpx_store_get(s, &k, false, waitres_cb, &w, NULL), -EINVAL);
	long_name[MCPX_STORE_NAME_MAX] = '\0';
	CHECK_INT(fx_put(fx, s, "carol", long_name, "max", &w), 0);
	waitres_free(&w);
	k = fx_key("", "workspace", "ok");
	CHECK_INT(mcpx_store_get(s, &k, false, waitres_cb, &w, NULL), -EINVAL);
	k = fx_key("carol", "workspace", "ok");
	CHECK_INT(mcpx_store_list(s, &k, MCPX_STORE_LIST_BLOBS, waitres_cb, &w, NULL), -EINVAL);
	/* The hard cap: refused before anything is written (and the data
	 * is freed: the sanitizer build checks). */
	big = malloc((64u << 20) + 1);
	REQUIRE(big != NULL);
	CHECK_INT(mcpx_store_put(s, &k, big, (64u << 20) + 1, &o, waitres_cb, &w, NULL), -EFBIG);
	o.ttl_ms = 0;
	CHECK_INT(mcpx_store_put(s, &k, strdup("x"), 1, &o, waitres_cb, &w, NULL), -EINVAL);
	o.ttl_ms = 1000;
	o.lease_owner = "bad owner";
	CHECK_INT(mcpx_store_put(s, &k, strdup("x"), 1, &o, waitres_cb, &w, NULL), -EINVAL);
	CHECK_INT(w.calls, 0);
}

static void test_caps(struct store_fx *fx, struct mcpx_store *s)
{
	struct mcpx_store_put_opts o = {.ttl_ms = 60000, .max_count = 2};
	struct waitres w;

	CHECK_INT(fx_put_opts(fx, s, "dave", "one", "1", 1, &o, &w), 0);
	waitres_free(&w);
	CHECK_INT(fx_put_opts(fx, s, "dave", "two", "22", 2, &o, &w), 0);
	waitres_free(&w);
	CHECK_INT(fx_put_opts(fx, s, "dave", "three", "333", 3, &o, &w), -EDQUOT);
	CHECK(strstr(w.error, "2") != NULL);
	waitres_free(&w);
	/* Replacing one of the two is not a third. */
	CHECK_INT(fx_put_opts(fx, s, "dave", "two", "2222", 4, &o, &w), 0);
	waitres_free(&w);
	CHECK_INT(fx_get(fx, s, "dave", "three", false, &w), -ENOENT);
	waitres_free(&w);
	/* Bytes: 1 + 4 stored; replacing "two" with 6 bytes makes 7. */
	o.max_count = 0;
	o.max_total_bytes = 6;
	CHECK_INT(fx_put_opts(fx, s, "dave", "two", "222222", 6, &o, &w), -EDQUOT);
	waitres_free(&w);
	CHECK_INT(fx_put_opts(fx, s, "dave", "two", "22222", 5, &o, &w), 0);
	waitres_free(&w);
	/* Another caller has its own count. */
	o.max_count = 1;
	o.max_total_bytes = 0;
	CHECK_INT(fx_put_opts(fx, s, "erin", "one", "1", 1, &o, &w), 0);
	waitres_free(&w);
}

static void test_expiry(struct store_fx *fx, struct mcpx_store *s)
{
	struct mcpx_store_put_opts o = {.ttl_ms = 1000};
	struct waitres w;
	int64_t before;

	CHECK_INT(fx_put_opts(fx, s, "frank", "short", "x", 1, &o, &w), 0);
	waitres_free(&w);
	o.ttl_ms = 600000;
	CHECK_INT(fx_put_opts(fx, s, "frank", "long", "y", 1, &o, &w), 0);
	waitres_free(&w);
	/* A refreshing get starts the idle TTL again; a plain one does not. */
	before = fx_now_ms();
	CHECK_INT(fx_get(fx, s, "frank", "long", true, &w), 0);
	CHECK(w.expires_ms >= before + 600000 - 5);
	waitres_free(&w);
	fx_turn_for(fx->loop, 1300);
	CHECK_INT(fx_get(fx, s, "frank", "short", false, &w), -ENOENT);
	waitres_free(&w);
	CHECK_INT(fx_list(fx, s, "frank", "workspace", MCPX_STORE_LIST_BLOBS, &w), 0);
	REQUIRE_INT(w.n_entries, 1);
	CHECK_STR(w.entries[0].name, "long");
	waitres_free(&w);
	/* The expired name counts for nothing against a cap. */
	o.max_count = 2;
	CHECK_INT(fx_put_opts(fx, s, "frank", "again", "z", 1, &o, &w), 0);
	waitres_free(&w);
}

static int fx_record_put(struct store_fx *fx, struct mcpx_store *s, const char *name,
                         const char *value, uint64_t expect, unsigned max_count, struct waitres *w)
{
	struct mcpx_store_record_opts o = {
	    .expect_version = expect, .ttl_ms = 60000, .max_count = max_count};
	struct mcpx_store_key k = fx_key("gina", "task", name);
	int rc;

	memset(w, 0, sizeof(*w));
	rc = mcpx_store_record_put(s, &k, value, strlen(value), &o, waitres_cb, w, NULL);
	return rc < 0 ? rc : fx_wait(fx, w);
}

static void test_records(struct store_fx *fx, struct mcpx_store *s)
{
	struct mcpx_store_key k = fx_key("gina", "task", "t1");
	struct waitres w;
	uint64_t v1, v2;

	REQUIRE_INT(fx_record_put(fx, s, "t1", "{\"status\":\"working\"}", 0, 0, &w), 0);
	v1 = w.version;
	CHECK(v1 != 0);
	waitres_free(&w);
	CHECK_INT(fx_record_put(fx, s, "t1", "again", 0, 0, &w), -EEXIST);
	CHECK(w.version == v1);
	waitres_free(&w);
	REQUIRE_INT(fx_record_put(fx, s, "t1", "{\"status\":\"completed\"}", v1, 0, &w), 0);
	v2 = w.version;
	CHECK(v2 != v1);
	waitres_free(&w);
	/* A writer holding the old version loses, and learns the new one. */
	CHECK_INT(fx_record_put(fx, s, "t1", "{\"status\":\"cancelled\"}", v1, 0, &w), -ESTALE);
	CHECK(w.version == v2);
	waitres_free(&w);
	CHECK_INT(mcpx_store_record_get(s, &k, waitres_cb, &w, NULL), 0);
	REQUIRE_INT(fx_wait(fx, &w), 0);
	CHECK(w.version == v2 && w.len == 22 &&
	      memcmp(w.data, "{\"status\":\"completed\"}", 22) == 0);
	waitres_free(&w);
	CHECK_INT(fx_record_put(fx, s, "nope", "x", 5, 0, &w), -ENOENT);
	waitres_free(&w);
	/* Blobs and records of one name are apart. */
	CHECK_INT(fx_list(fx, s, "gina", "task", MCPX_STORE_LIST_BLOBS, &w), 0);
	CHECK_INT(w.n_entries, 0);
	waitres_free(&w);
	CHECK_INT(fx_list(fx, s, "gina", "task", MCPX_STORE_LIST_RECORDS, &w), 0);
	REQUIRE_INT(w.n_entries, 1);
	CHECK(w.entries[0].version == v2);
	waitres_free(&w);
	/* A count cap on new records. */
	CHECK_INT(fx_record_put(fx, s, "t2", "x", 0, 2, &w), 0);
	waitres_free(&w);
	CHECK_INT(fx_record_put(fx, s, "t3", "x", 0, 2, &w), -EDQUOT);
	waitres_free(&w);
	CHECK_INT(fx_record_put(fx, s, "t2", "y", MCPX_STORE_ANY_VERSION, 2, &w), 0);
	waitres_free(&w);
	/* Deleting checks the version too. */
	CHECK_INT(mcpx_store_record_delete(s, &k, v1, waitres_cb, &w, NULL), 0);
	CHECK_INT(fx_wait(fx, &w), -ESTALE);
	waitres_free(&w);
	CHECK_INT(mcpx_store_record_delete(s, &k, v2, waitres_cb, &w, NULL), 0);
	CHECK_INT(fx_wait(fx, &w), 0);
	waitres_free(&w);
	CHECK_INT(mcpx_store_record_get(s, &k, waitres_cb, &w, NULL), 0);
	CHECK_INT(fx_wait(fx, &w), -ENOENT);
	waitres_free(&w);
	/* Made again, it does not take up an old version. */
	REQUIRE_INT(fx_record_put(fx, s, "t1", "new", 0, 0, &w), 0);
	CHECK(w.version != v1 && w.version != v2);
	waitres_free(&w);
}

static void lost_cb(void *arg, struct mcpx_store_lease *l, int reason)
{
	int *got = arg;

	(void)l;
	*got = reason;
}

static void test_leases_one_instance(struct store_fx *fx, struct mcpx_store *s)
{
	struct mcpx_store_put_opts o = {.ttl_ms = 60000};
	struct waitres a, b, w;
	int lost = 0;

	REQUIRE_INT(fx_hold(fx, s, "hank", "ws", 5000, 0, lost_cb, &lost, &a), 0);
	REQUIRE(a.lease != NULL);
	CHECK_INT(fx_hold(fx, s, "hank", "ws", 5000, 0, NULL, NULL, &b), -EBUSY);
	CHECK_STR(b.holder, mcpx_store_lease_owner(a.lease));
	CHECK(b.holder_ms_left > 0 && b.holder_ms_left <= 5000);
	waitres_free(&b);
	/* Another caller's lease of the same name is another lease. */
	CHECK_INT(fx_hold(fx, s, "ivy", "ws", 5000, 0, NULL, NULL, &b), 0);
	mcpx_store_lease_end(b.lease);
	waitres_free(&b);
	CHECK_INT(fx_peek(fx, s, "hank", "ws", &w), 0);
	CHECK_STR(w.holder, mcpx_store_lease_owner(a.lease));
	waitres_free(&w);
	/* Fencing: only the holder's put commits. */
	o.lease_owner = mcpx_store_lease_owner(a.lease);
	CHECK_INT(fx_put_opts(fx, s, "hank", "ws", "v1", 2, &o, &w), 0);
	waitres_free(&w);
	o.lease_owner = "someone:else";
	CHECK_INT(fx_put_opts(fx, s, "hank", "ws", "v2", 2, &o, &w), -ENOLCK);
	waitres_free(&w);
	/* A waiter in this instance gets it as soon as it is ended. */
	memset(&b, 0, sizeof(b));
	{
		struct mcpx_store_key k = fx_key("hank", "workspace", "ws");

		REQUIRE_INT(mcpx_store_lease_hold(s, &k, "waiter:1", 5000, 10000, NULL, NULL,
		                                  waitres_cb, &b, NULL),
		            0);
	}
	fx_turn_for(fx->loop, 100);
	CHECK(!b.done);
	mcpx_store_lease_end(a.lease);
	CHECK_INT(fx_wait(fx, &b), 0);
	CHECK(b.lease != NULL);
	CHECK_INT(lost, 0);
	CHECK_INT(fx_peek(fx, s, "hank", "ws", &w), 0);
	CHECK_STR(w.holder, "waiter:1");
	waitres_free(&w);
	mcpx_store_lease_end(b.lease);
	fx_turn_for(fx->loop, 100);
	CHECK_INT(fx_peek(fx, s, "hank", "ws", &w), -ENOENT);
	waitres_free(&w);
}

/* A lease outlives its TTL while its holder renews it. */
static void test_lease_renewed(struct store_fx *fx, struct mcpx_store *s)
{
	struct waitres a, w;
	int lost = 0;

	REQUIRE_INT(fx_hold(fx, s, "jack", "ws", 1000, 0, lost_cb, &lost, &a), 0);
	fx_turn_for(fx->loop, 2500);
	CHECK_INT(lost, 0);
	CHECK_INT(fx_peek(fx, s, "jack", "ws", &w), 0);
	CHECK_STR(w.holder, mcpx_store_lease_owner(a.lease));
	waitres_free(&w);
	mcpx_store_lease_end(a.lease);
}

/* Two instances as two replicas: they exclude each other, a waiter on one
 * gets the lease the other ends (by polling), and a holder that stopped
 * renewing (its loop stalled) is told it lost the lease and cannot commit. */
static void test_leases_two_instances(struct store_fx *fx, struct mcpx_store *s)
{
	struct mcpx_store *s2 = store_fx_open(fx, NULL);
	struct mcpx_store_put_opts o = {.ttl_ms = 60000};
	struct waitres a, b, w;
	int lost = 0;

	REQUIRE(s2 != NULL);
	REQUIRE_INT(fx_hold(fx, s, "kate", "ws", 1000, 0, lost_cb, &lost, &a), 0);
	CHECK_INT(fx_hold(fx, s2, "kate", "ws", 1000, 0, NULL, NULL, &b), -EBUSY);
	waitres_free(&b);
	CHECK_INT(fx_hold(fx, s2, "kate", "ws", 1000, 300, NULL, NULL, &b), -ETIMEDOUT);
	CHECK_STR(b.holder, mcpx_store_lease_owner(a.lease));
	waitres_free(&b);
	mcpx_store_lease_end(a.lease);
	REQUIRE_INT(fx_hold(fx, s2, "kate", "ws", 1000, 5000, NULL, NULL, &b), 0);
	mcpx_store_lease_end(b.lease);

	/* The first takes it again, then its loop stalls past the TTL. */
	REQUIRE_INT(fx_hold(fx, s, "kate", "ws", 1000, 5000, lost_cb, &lost, &a), 0);
	fx_sleep_ms(1300);
	REQUIRE_INT(fx_hold(fx, s2, "kate", "ws", 5000, 0, NULL, NULL, &b), 0);
	fx_turn_for(fx->loop, 500);
	CHECK(lost == -ENOLCK || lost == -ETIMEDOUT);
	o.lease_owner = mcpx_store_lease_owner(a.lease);
	CHECK_INT(fx_put_opts(fx, s, "kate", "ws", "late", 4, &o, &w), -ENOLCK);
	waitres_free(&w);
	mcpx_store_lease_end(a.lease);
	o.lease_owner = mcpx_store_lease_owner(b.lease);
	CHECK_INT(fx_put_opts(fx, s2, "kate", "ws", "new", 3, &o, &w), 0);
	waitres_free(&w);
	mcpx_store_lease_end(b.lease);
	mcpx_store_free(s2);
}

/* A holder killed with SIGKILL stops renewing; its lease lapses within
 * its TTL and a waiter gets it. */
static void test_killed_holder(struct store_fx *fx, struct mcpx_store *s)
{
	int p[2];
	pid_t pid;
	char c = 0;
	struct waitres w;

	REQUIRE(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		struct store_fx child = *fx;
		struct mcpx_store *cs;
		struct waitres h;

		close(p[0]);
		child.redis_pid = 0;
		child.loop = mcpx_loop_new();
		cs = store_fx_open(&child, NULL);
		if (!cs || fx_hold(&child, cs, "liam", "ws", 1500, 0, NULL, NULL, &h) != 0)
			_exit(1);
		(void)!write(p[1], "h", 1);
		for (;;)
			fx_turn_for(child.loop, 1000);
	}
	close(p[1]);
	REQUIRE(pid > 0);
	CHECK(read(p[0], &c, 1) == 1 && c == 'h');
	close(p[0]);
	CHECK_INT(fx_peek(fx, s, "liam", "ws", &w), 0);
	CHECK(w.holder[0] != '\0');
	waitres_free(&w);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	CHECK_INT(fx_hold(fx, s, "liam", "ws", 1500, 10000, NULL, NULL, &w), 0);
	if (w.lease)
		mcpx_store_lease_end(w.lease);
	waitres_free(&w);
}

static void never_cb(void *arg, struct mcpx_store_result *r)
{
	(void)r;
	(*(int *)arg)++;
}

static void test_cancel(struct store_fx *fx, struct mcpx_store *s)
{
	struct mcpx_store_key k = fx_key("mia", "workspace", "ws");
	struct mcpx_store_op *op = NULL;
	struct waitres a, w;
	int calls = 0;

	CHECK_INT(fx_put(fx, s, "mia", "ws", "x", &w), 0);
	waitres_free(&w);
	CHECK_INT(mcpx_store_get(s, &k, false, never_cb, &calls, &op), 0);
	REQUIRE(op != NULL);
	mcpx_store_cancel(op);
	fx_turn_for(fx->loop, 300);
	CHECK_INT(calls, 0);
	/* A cancelled wait for a lease never takes it. */
	REQUIRE_INT(fx_hold(fx, s, "mia", "ws", 5000, 0, NULL, NULL, &a), 0);
	CHECK_INT(mcpx_store_lease_hold(s, &k, "cancelled:1", 5000, 10000, NULL, NULL, never_cb,
	                                &calls, &op),
	          0);
	fx_turn_for(fx->loop, 100);
	mcpx_store_cancel(op);
	mcpx_store_lease_end(a.lease);
	fx_turn_for(fx->loop, 500);
	CHECK_INT(calls, 0);
	CHECK_INT(fx_peek(fx, s, "mia", "ws", &w), -ENOENT);
	waitres_free(&w);
}

struct ticker {
	struct mcpx_timer t;
	struct mcpx_loop *loop;
	int ticks;
};

static void tick_cb(struct mcpx_timer *t)
{
	struct ticker *k = t->arg;

	k->ticks++;
	mcpx_timer_start(k->loop, &k->t, 1000);
}

/* 64 MiB each way, byte for byte, while a 1 ms timer keeps firing. */
static void test_big_blob(struct store_fx *fx, struct mcpx_store *s)
{
	struct mcpx_store_put_opts o = {.ttl_ms = 60000};
	struct mcpx_store_key k = fx_key("nina", "workspace", "big");
	struct ticker tk = {.loop = fx->loop};
	size_t len = 64u << 20;
	char *big = malloc(len);
	struct waitres w;
	int rc;

	REQUIRE(big != NULL);
	for (size_t i = 0; i < len; i++)
		big[i] = (char)(i * 7 + (i >> 20));
	memset(&w, 0, sizeof(w));
	tk.t.fn = tick_cb;
	tk.t.arg = &tk;
	mcpx_timer_start(fx->loop, &tk.t, 1000);
	rc = mcpx_store_put(s, &k, big, len, &o, waitres_cb, &w, NULL);
	CHECK_INT(rc, 0);
	CHECK_INT(fx_wait(fx, &w), 0);
	CHECK(tk.ticks > 0);
	waitres_free(&w);
	tk.ticks = 0;
	CHECK_INT(mcpx_store_get(s, &k, true, waitres_cb, &w, NULL), 0);
	REQUIRE_INT(fx_wait(fx, &w), 0);
	CHECK(tk.ticks > 0);
	mcpx_timer_cancel(&tk.t);
	REQUIRE_INT(w.len, len);
	for (size_t i = 0; i < len; i++)
		if (w.data[i] != (char)(i * 7 + (i >> 20))) {
			CHECK(!"the 64 MiB blob read back byte for byte");
			break;
		}
	waitres_free(&w);
}

struct backend_row {
	const char *name;
	enum fx_backend backend;
	bool (*available)(void);
};

static bool always(void)
{
	return true;
}

static const struct backend_row backends[] = {
    {"dir", FX_DIR, always},
    {"redis", FX_REDIS, fx_have_redis},
};

typedef void (*store_test)(struct store_fx *fx, struct mcpx_store *s);

static const struct {
	const char *name;
	store_test fn;
} tests[] = {
    {"blob_roundtrip", test_blob_roundtrip},
    {"list_delete", test_list_delete},
    {"callers_apart", test_callers_apart},
    {"refused_at_once", test_refused_at_once},
    {"caps", test_caps},
    {"expiry", test_expiry},
    {"records", test_records},
    {"leases_one_instance", test_leases_one_instance},
    {"lease_renewed", test_lease_renewed},
    {"leases_two_instances", test_leases_two_instances},
    {"killed_holder", test_killed_holder},
    {"cancel", test_cancel},
    {"big_blob", test_big_blob},
};

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	for (size_t b = 0; b < sizeof(backends) / sizeof(backends[0]); b++) {
		struct store_fx fx;
		struct mcpx_store *s;

		if (!backends[b].available()) {
			printf("skip: the %s store (not installed)\n", backends[b].name);
			continue;
		}
		if (store_fx_init(&fx, backends[b].backend) < 0) {
			store_fx_close(&fx);
			continue;
		}
		s = store_fx_open(&fx, NULL);
		for (size_t t = 0; s && t < sizeof(tests) / sizeof(tests[0]); t++) {
			int before = check_failures;

			tests[t].fn(&fx, s);
			printf("%s %s: %s\n", backends[b].name, tests[t].name,
			       check_failures == before ? "ok" : "FAILED");
			fflush(stdout);
		}
		mcpx_store_free(s);
		store_fx_close(&fx);
	}
	CHECK_DONE();
}
