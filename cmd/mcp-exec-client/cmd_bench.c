/*
 * cmd_bench.c - `mcp-exec-client bench`: a closed-loop load generator.
 *
 * N threads each open their own connection and session, make their warm-up
 * calls, wait until all are ready, then make M tool calls back to back. Each
 * call's latency is the time from sending tools/call to having the whole
 * reply; initialize, warm-up and DELETE are not measured. A call succeeds
 * when the result is not an error and its first text block contains the
 * expected text (for exec, "exit_code":0: the text block is the structured
 * result as compact JSON). The report is one line of key=value pairs for
 * scripts (bench/run.sh greps the line that starts with p50_ms=) followed by
 * a table for people.
 *
 * It measures what a client sees, queueing included; it does not pace
 * requests (open loop). Any MCP server with a tool can be measured, so the
 * same numbers come out for a peer implementation.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "http_client.h"
#include "mcp_session.h"

#define DEFAULT_CODE "pass"
#define EXEC_EXPECT "\"exit_code\":0"

struct bench {
	const struct cli_opts *o;
	const char *token;
	const char *tool;
	const cJSON *args;  /* the tool's arguments, shared read-only */
	const char *expect; /* "" accepts any non-error result */

	/* Start line: every worker has a session (or gave up) and has warmed
	 * up before the first measured call, so set-up does not skew the
	 * first latencies. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned ready;
	bool go;
};

struct worker {
	struct bench *b;
	pthread_t thread;
	double *lat_ms; /* latencies of successful calls, calls entries */
	unsigned ok, errors, busy;
	bool opened;
	int first_rc; /* first failure, for the summary */
	char first_err[sizeof(((struct mcpx_err *)0)->msg)];
	struct timespec end; /* when the last reply arrived */
};

static double ms_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

static void fail(struct worker *w, int rc, const char *msg)
{
	w->errors++;
	if (rc == -EBUSY)
		w->busy++;
	if (!w->first_rc) {
		w->first_rc = rc;
		snprintf(w->first_err, sizeof(w->first_err), "%s", msg);
	}
}

static void wait_for_start(struct bench *b)
{
	pthread_mutex_lock(&b->lock);
	b->ready++;
	pthread_cond_broadcast(&b->cond);
	while (!b->go)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
}

/* One call; 0 when it succeeded, else the failure is recorded in w unless
 * quiet (warm-up). */
static int one_call(struct worker *w, struct mcp_session *session, bool quiet)
{
	const struct bench *b = w->b;
	struct mcpx_err err = {{0}};
	char *text = NULL;
	size_t len;
	int rc;

	rc = mcp_session_call_tool(session, b->tool, b->args, cmd_http_timeout(b->o->timeout_s),
	                           &text, &len, &err);
	if (rc == 0 && b->expect[0] && !memmem(text, len, b->expect, strlen(b->expect))) {
		rc = -EREMOTEIO;
		snprintf(err.msg, sizeof(err.msg), "the result does not contain %s", b->expect);
	}
	free(text);
	if (rc < 0 && !quiet)
		fail(w, rc, err.msg);
	return rc;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct bench *b = w->b;
	struct mcp_session session = {0};
	struct mcpx_err err = {{0}};
	struct hc *http = NULL;
	int rc;

	rc = hc_new(&http, b->token, &err);
	if (rc == 0)
		rc = mcp_session_open(&session, http, b->o->url, &err);
	w->opened = rc == 0;
	for (unsigned i = 0; w->opened && i < b->o->warmup; i++)
		one_call(w, &session, true);
	wait_for_start(b);
	if (rc < 0) {
		/* Every call this client would have made is lost. */
		for (unsigned i = 0; i < b->o->calls; i++)
			fail(w, rc, err.msg);
		goto out;
	}
	for (unsigned i = 0; i < b->o->calls; i++) {
		struct timespec t0, t1;

		if (i && b->o->think_ms) {
			struct timespec pause = {b->o->think_ms / 1000,
			                         (long)(b->o->think_ms % 1000) * 1000000L};
			nanosleep(&pause, NULL);
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = one_call(w, &session, false);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (rc == 0)
			w->lat_ms[w->ok++] = ms_between(&t0, &t1);
	}
out:
	clock_gettime(CLOCK_MONOTONIC, &w->end);
	mcp_session_close(&session);
	hc_free(http);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *v, size_t n, double p)
{
	size_t rank;

	if (n == 0)
		return 0;
	rank = (size_t)ceil(p / 100.0 * (double)n);
	return v[rank ? rank - 1 : 0];
}

static void report(const struct bench *b, const struct worker *ws, unsigned nw, double wall_s)
{
	const struct cli_opts *o = b->o;
	unsigned ok = 0, errors = 0, busy = 0;
	size_t n = 0;
	double *all, p50, p90, p99, max, cps;

	for (unsigned i = 0; i < nw; i++) {
		ok += ws[i].ok;
		errors += ws[i].errors;
		busy += ws[i].busy;
	}
	all = malloc(sizeof(double) * (ok ? ok : 1));
	for (unsigned i = 0; all && i < nw; i++) {
		memcpy(all + n, ws[i].lat_ms, sizeof(double) * ws[i].ok);
		n += ws[i].ok;
	}
	if (all)
		qsort(all, n, sizeof(double), cmp_double);
	p50 = all ? percentile(all, n, 50) : 0;
	p90 = all ? percentile(all, n, 90) : 0;
	p99 = all ? percentile(all, n, 99) : 0;
	max = all && n ? all[n - 1] : 0;
	cps = wall_s > 0 ? (double)ok / wall_s : 0;
	free(all);

	printf("p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f calls_per_s=%.2f ok=%u errors=%u "
	       "busy=%u clients=%u calls=%u wall_s=%.3f\n",
	       p50, p90, p99, max, cps, ok, errors, busy, o->clients, o->clients * o->calls,
	       wall_s);
	printf("\n");
	printf("  clients             %u x %u calls\n", o->clients, o->calls);
	printf("  calls               %u ok, %u errors (%u busy)\n", ok, errors, busy);
	printf("  latency (ms)        p50 %.2f   p90 %.2f   p99 %.2f   max %.2f\n", p50, p90, p99,
	       max);
	printf("  throughput          %.2f calls/s over %.3f s\n", cps, wall_s);
}

/* The arguments every call sends: --args as given, or exec's {code,
 * timeout_s?}. */
static int bench_args(const struct cli_opts *o, cJSON **out, struct mcpx_err *err)
{
	const char *code = o->code ? o->code : DEFAULT_CODE;
	cJSON *args;
	int rc;

	*out = NULL;
	if (o->args) {
		args = cJSON_Parse(o->args);
		if (!cJSON_IsObject(args)) {
			cJSON_Delete(args);
			return mcpx_err_set(err, EINVAL, "--args must be a JSON object");
		}
		*out = args;
		return 0;
	}
	rc = cmd_check_text("the code", code, strlen(code), err);
	if (rc < 0)
		return rc;
	args = cJSON_CreateObject();
	if (!args || !cJSON_AddStringToObject(args, "code", code) ||
	    (o->timeout_s && !cJSON_AddNumberToObject(args, "timeout_s", o->timeout_s))) {
		cJSON_Delete(args);
		return mcpx_err_set(err, ENOMEM, "out of memory");
	}
	*out = args;
	return 0;
}

/* What the workers did, summed once they are joined. */
struct outcome {
	unsigned opened, errors;
	int first_rc;          /* of the first worker that failed, or 0 */
	const char *first_err; /* its message */
	struct timespec start, end;
};

/* Starts a worker per client, each with its row of lat; returns how many
 * started. run_workers destroys the lock and condition made here. */
static unsigned start_workers(struct bench *b, struct worker *ws, double *lat)
{
	const struct cli_opts *o = b->o;
	unsigned started = 0;

	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	for (unsigned i = 0; i < o->clients; i++) {
		int rc;

		ws[i].b = b;
		ws[i].lat_ms = lat + (size_t)i * o->calls;
		rc = pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]);
		if (rc != 0) {
			fprintf(stderr, "mcp-exec-client: cannot start client %u: %s\n", i + 1,
			        strerror(rc));
			break;
		}
		started++;
	}
	return started;
}

/* Releases the started workers at once, once all sessions are open, and
 * joins them: the clock runs from the release to the last one's end. */
static void run_workers(struct bench *b, struct worker *ws, unsigned started, struct outcome *out)
{
	pthread_mutex_lock(&b->lock);
	while (b->ready < started)
		pthread_cond_wait(&b->cond, &b->lock);
	clock_gettime(CLOCK_MONOTONIC, &out->start);
	b->go = true;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);

	out->end = out->start;
	for (unsigned i = 0; i < started; i++) {
		pthread_join(ws[i].thread, NULL);
		if (ms_between(&out->end, &ws[i].end) > 0)
			out->end = ws[i].end;
		out->opened += ws[i].opened;
		out->errors += ws[i].errors;
		if (!out->first_rc && ws[i].first_rc) {
			out->first_rc = ws[i].first_rc;
			out->first_err = ws[i].first_err;
		}
	}
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
}

int cmd_bench(const struct cli_opts *o)
{
	struct bench b = {.o = o, .tool = o->tool ? o->tool : "exec"};
	struct mcpx_err err = {{0}};
	struct worker *ws = NULL;
	struct outcome res = {0};
	double *lat = NULL;
	char *token = NULL;
	cJSON *args = NULL;
	unsigned started;
	int rc, status = 0;

	rc = bench_args(o, &args, &err);
	if (rc == 0)
		rc = cli_token(o, &token, &err);
	if (rc < 0) {
		fprintf(stderr, "mcp-exec-client: %s\n", err.msg);
		cJSON_Delete(args);
		return cli_exit_code(rc);
	}
	b.token = token;
	b.args = args;
	b.expect = o->expect ? o->expect : !strcmp(b.tool, "exec") ? EXEC_EXPECT : "";
	ws = calloc(o->clients, sizeof(*ws));
	lat = calloc((size_t)o->clients * o->calls, sizeof(double));
	if (!ws || !lat) {
		fprintf(stderr, "mcp-exec-client: out of memory\n");
		status = cli_exit_code(-ENOMEM);
		goto out;
	}
	started = start_workers(&b, ws, lat);
	run_workers(&b, ws, started, &res);

	if (started < o->clients) {
		status = cli_exit_code(-ENOMEM);
		goto out;
	}
	if (res.opened == 0) {
		/* Nothing was measured: say why, like call would. */
		fprintf(stderr, "mcp-exec-client: %s\n",
		        res.first_err ? res.first_err : "no session");
		status = cli_exit_code(res.first_rc);
		goto out;
	}
	report(&b, ws, started, ms_between(&res.start, &res.end) / 1e3);
	if (res.errors) {
		fprintf(stderr, "mcp-exec-client: bench: %u calls failed; the first: %s\n",
		        res.errors, res.first_err);
		status = 1;
	}
out:
	cli_token_free(token);
	cJSON_Delete(args);
	free(lat);
	free(ws);
	return status;
}
