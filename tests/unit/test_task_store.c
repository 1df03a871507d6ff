/*
 * test_task_store.c - tasks in the shared store (task_store.h), against the
 * directory store and, when redis-server is installed, the Redis store:
 * a record created once (-EEXIST again) and replaced only at the version it
 * was read at (-ESTALE otherwise); another owner's lookup is -ENOENT;
 * listing per owner; the outcome blob written only under the task's lease
 * (-ENOLCK once it is given back) and read back; the cancel mark; the lease
 * held or not; a drop removes record, outcome and mark; callbacks never come
 * from inside the call, and a cancelled operation never calls back.
 */
#include <errno.h>
#include <string.h>

#include "store_fixture.h"
#include "task_store.h"

struct got {
	bool done;
	int rc;
	struct mcpx_task_rec rec;
	size_t n;
	char ids[8][MCPX_TASK_ID_LEN + 1];
	char data[256];
	size_t len;
	struct mcpx_store_lease *lease;
	bool lost;
};

static void rec_cb(void *arg, int rc, const struct mcpx_task_rec *rec)
{
	struct got *g = arg;

	g->done = true;
	g->rc = rc;
	if (rec)
		g->rec = *rec;
}

static void done_cb(void *arg, int rc)
{
	struct got *g = arg;

	g->done = true;
	g->rc = rc;
}

static void list_cb(void *arg, int rc, const struct mcpx_task_rec *recs, size_t n)
{
	struct got *g = arg;

	g->done = true;
	g->rc = rc;
	g->n = n;
	for (size_t i = 0; i < n && i < 8; i++)
		memcpy(g->ids[i], recs[i].id, sizeof(g->ids[i]));
}

static void blob_cb(void *arg, int rc, const char *data, size_t len)
{
	struct got *g = arg;

	g->done = true;
	g->rc = rc;
	g->len = len;
	if (data && len < sizeof(g->data))
		memcpy(g->data, data, len);
}

static void lease_cb(void *arg, int rc, struct mcpx_store_lease *lease)
{
	struct got *g = arg;

	g->done = true;
	g->rc = rc;
	g->lease = lease;
}

static void lost_cb(void *arg, struct mcpx_store_lease *l, int reason)
{
	struct got *g = arg;

	(void)l;
	(void)reason;
	g->lost = true;
}

/* Waits for g's callback: it must not have come from inside the call. */
#define WAIT(fx, op, g)                                                                            \
	do {                                                                                       \
		CHECK((op) != NULL);                                                               \
		CHECK(!(g).done);                                                                  \
		CHECK(fx_spin((fx)->loop, &(g).done, 30000));                                      \
	} while (0)

static struct mcpx_task_rec rec_for(const char *owner)
{
	struct mcpx_task_rec r;

	memset(&r, 0, sizeof(r));
	CHECK_INT(mcpx_task_id_new(r.id), 0);
	snprintf(r.owner, sizeof(r.owner), "%s", owner);
	snprintf(r.tool, sizeof(r.tool), "exec");
	r.status = MCPX_TASK_WORKING;
	r.created_ms = r.updated_ms = mcpx_task_now_ms();
	r.ttl_ms = 60000;
	r.poll_ms = 1000;
	return r;
}

static void test_records(struct store_fx *fx, struct mcpx_task_store *ts)
{
	struct mcpx_task_rec r = rec_for("alice"), stale;
	struct got g = {0};

	WAIT(fx, mcpx_task_create(ts, &r, 60000, rec_cb, &g), g);
	CHECK_INT(g.rc, 0);
	REQUIRE(g.rec.version != 0);
	r.version = g.rec.version;
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_create(ts, &r, 60000, rec_cb, &g), g);
	CHECK_INT(g.rc, -EEXIST);

	/* Read back under its owner; another owner does not find it. */
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_load(ts, "alice", r.id, rec_cb, &g), g);
	CHECK_INT(g.rc, 0);
	CHECK_STR(g.rec.owner, "alice");
	CHECK_INT(g.rec.status, MCPX_TASK_WORKING);
	CHECK_INT(g.rec.version, r.version);
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_load(ts, "bob", r.id, rec_cb, &g), g);
	CHECK_INT(g.rc, -ENOENT);

	/* Compare-and-set: a save at the version read wins once; a writer
	 * that read the older version loses (-ESTALE). */
	stale = r;
	r.status = MCPX_TASK_COMPLETED;
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_save(ts, &r, 60000, rec_cb, &g), g);
	CHECK_INT(g.rc, 0);
	CHECK(g.rec.version > r.version);
	stale.status = MCPX_TASK_FAILED;
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_save(ts, &stale, 60000, rec_cb, &g), g);
	CHECK_INT(g.rc, -ESTALE);
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_load(ts, "alice", r.id, rec_cb, &g), g);
	CHECK_INT(g.rec.status, MCPX_TASK_COMPLETED);
}

static void test_list_and_drop(struct store_fx *fx, struct mcpx_task_store *ts)
{
	struct mcpx_task_rec a = rec_for("carol"), b = rec_for("carol"), other = rec_for("dave");
	struct got g = {0};

	WAIT(fx, mcpx_task_create(ts, &a, 60000, rec_cb, &g), g);
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_create(ts, &b, 60000, rec_cb, &g), g);
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_create(ts, &other, 60000, rec_cb, &g), g);
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_put_outcome(ts, &a, "{\"result\":{}}", 13, 60000, NULL, done_cb, &g), g);
	CHECK_INT(g.rc, 0);
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_mark_cancel(ts, &a, done_cb, &g), g);
	CHECK_INT(g.rc, 0);

	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_list(ts, "carol", list_cb, &g), g);
	CHECK_INT(g.rc, 0);
	CHECK_INT(g.n, 2);
	CHECK((!strcmp(g.ids[0], a.id) && !strcmp(g.ids[1], b.id)) ||
	      (!strcmp(g.ids[0], b.id) && !strcmp(g.ids[1], a.id)));

	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_drop(ts, "carol", a.id, done_cb, &g), g);
	CHECK_INT(g.rc, 0);
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_load(ts, "carol", a.id, rec_cb, &g), g);
	CHECK_INT(g.rc, -ENOENT);
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_get_outcome(ts, &a, blob_cb, &g), g);
	CHECK_INT(g.rc, -ENOENT);
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_cancel_marked(ts, &a, done_cb, &g), g);
	CHECK_INT(g.rc, -ENOENT);
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_list(ts, "carol", list_cb, &g), g);
	CHECK_INT(g.n, 1);
	CHECK_STR(g.ids[0], b.id);
}

static void test_lease_and_outcome(struct store_fx *fx, struct mcpx_task_store *ts)
{
	struct mcpx_task_rec r = rec_for("erin");
	struct got g = {0}, held = {0}, other = {0};
	const char *owner;

	/* Nobody holds it yet. */
	WAIT(fx, mcpx_task_lease_held(ts, &r, done_cb, &g), g);
	CHECK_INT(g.rc, -ENOENT);
	WAIT(fx, mcpx_task_lease_take(ts, &r, 3000, lost_cb, &held, lease_cb, &held), held);
	CHECK_INT(held.rc, 0);
	REQUIRE(held.lease != NULL);
	owner = mcpx_task_lease_owner(held.lease);
	/* Another taker is refused while it is held; the peek sees it. */
	WAIT(fx, mcpx_task_lease_take(ts, &r, 3000, NULL, NULL, lease_cb, &other), other);
	CHECK_INT(other.rc, -EBUSY);
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_lease_held(ts, &r, done_cb, &g), g);
	CHECK_INT(g.rc, 0);
	/* The outcome is written under the lease, and read back. */
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_put_outcome(ts, &r, "{\"result\":1}", 12, 60000, owner, done_cb, &g), g);
	CHECK_INT(g.rc, 0);
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_get_outcome(ts, &r, blob_cb, &g), g);
	CHECK_INT(g.rc, 0);
	CHECK(g.len == 12 && memcmp(g.data, "{\"result\":1}", 12) == 0);
	/* Renewed by the store past its 3 s. */
	fx_turn_for(fx->loop, 4000);
	CHECK(!held.lost);
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_lease_held(ts, &r, done_cb, &g), g);
	CHECK_INT(g.rc, 0);
	/* Given back: a writer fenced by it is refused (its successor's
	 * result is never overwritten), and nobody holds it. */
	{
		char fence[MCPX_STORE_OWNER_MAX + 1];

		snprintf(fence, sizeof(fence), "%s", owner);
		mcpx_task_lease_end(held.lease);
		fx_turn_for(fx->loop, 200);
		memset(&g, 0, sizeof(g));
		WAIT(fx,
		     mcpx_task_put_outcome(ts, &r, "{\"result\":2}", 12, 60000, fence, done_cb, &g),
		     g);
		CHECK_INT(g.rc, -ENOLCK);
	}
	memset(&g, 0, sizeof(g));
	WAIT(fx, mcpx_task_lease_held(ts, &r, done_cb, &g), g);
	CHECK_INT(g.rc, -ENOENT);
}

static void test_cancel_op(struct store_fx *fx, struct mcpx_task_store *ts)
{
	struct mcpx_task_rec r = rec_for("frank");
	struct got g = {0};
	struct mcpx_task_op *op = mcpx_task_load(ts, "frank", r.id, rec_cb, &g);

	CHECK(op != NULL);
	mcpx_task_op_cancel(op);
	fx_turn_for(fx->loop, 300);
	CHECK(!g.done);
}

static void run_suite(enum fx_backend backend)
{
	struct store_fx fx;
	struct mcpx_store *s;
	struct mcpx_task_store *ts;

	if (store_fx_init(&fx, backend) < 0) {
		store_fx_close(&fx);
		return;
	}
	s = store_fx_open(&fx, NULL);
	ts = s ? mcpx_task_store_new(fx.loop, s) : NULL;
	if (ts) {
		test_records(&fx, ts);
		test_list_and_drop(&fx, ts);
		test_lease_and_outcome(&fx, ts);
		test_cancel_op(&fx, ts);
	}
	mcpx_task_store_free(ts);
	mcpx_store_free(s);
	store_fx_close(&fx);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	run_suite(FX_DIR);
	if (fx_have_redis())
		run_suite(FX_REDIS);
	else
		printf("redis-server is not installed: the Redis half is skipped\n");
	CHECK_DONE();
}
