/*
 * curl_loop.h - a libcurl multi handle driven by the server's event loop.
 *
 * The egress transfers (a run's fetches and the upstream MCP client's
 * requests, on one shared loop that app.c makes with mcpx_curl_loop_new)
 * and the Kubernetes TokenReview client (its own) run their HTTP transfers
 * on the server's one loop through this glue: curl says which sockets to
 * watch and when to wake it (its socket and timer callbacks); the loop
 * watches a dup() of each socket (loop.h) and calls curl back; each
 * transfer that ends is handed to the owner's done function, or, on a
 * shared loop, to the transfer's own (struct mcpx_curl_xfer).
 *
 * What it does not do: make, configure or free easy handles (the owner's),
 * or load libcurl before a transfer needs it (the multi handle is made by
 * the first mcpx_curl_loop_multi(), curl_lib.h).
 *
 * Ownership: struct mcpx_curl_loop lives in its owner's memory, set up by
 * mcpx_curl_loop_init() and ended by mcpx_curl_loop_fini(), which cleans up
 * the multi handle and frees the socket watches. Easy handles stay the
 * owner's: it adds them to mcpx_curl_loop_multi(), removes them from
 * .multi and cleans them up, all before mcpx_curl_loop_fini().
 */
#ifndef MCPX_CURL_LOOP_H
#define MCPX_CURL_LOOP_H

#include <stdbool.h>

#include "curl_lib.h"
#include "loop.h"

struct mcpx_curl_lost;

/* A transfer on the multi handle ended with result: called on the loop,
 * once for each, after curl was driven. The transfer is still on the multi
 * handle; the owner removes it (from here, if it likes). */
typedef void (*mcpx_curl_done_fn)(void *arg, CURL *easy, CURLcode result);

/* Fields are this module's, except multi, which the owner may read (to
 * remove or find its handles): NULL until mcpx_curl_loop_multi made it. */
struct mcpx_curl_loop {
	CURLM *multi;
	struct mcpx_loop *loop;
	const char *who; /* names the owner in log lines; not copied */
	mcpx_curl_done_fn done;
	void *arg;
	struct mcpx_timer timer;      /* curl's own timeout */
	struct mcpx_curl_lost *lost;  /* hung-up sockets curl is still to hear of */
	struct mcpx_timer lost_timer; /* tells curl of them on the next iteration */
};

/* Sets cl up on loop, without loading libcurl. who (static, e.g. "egress
 * broker") names the owner in log lines; done(arg, ...) is told of each
 * transfer that ends. */
void mcpx_curl_loop_init(struct mcpx_curl_loop *cl, struct mcpx_loop *loop, const char *who,
                         mcpx_curl_done_fn done, void *arg);

/* The multi handle, made (and libcurl loaded) on the first call; NULL when
 * it cannot be made (adding a handle to NULL then fails like any add). */
CURLM *mcpx_curl_loop_multi(struct mcpx_curl_loop *cl);

/* Cleans up the multi handle and everything of cl's; the owner removed its
 * easy handles first. cl may then be freed. */
void mcpx_curl_loop_fini(struct mcpx_curl_loop *cl);

/* ---- a loop shared by several modules ------------------------------------ */

/* A transfer on a shared loop: its owner embeds it, sets easy and done, and
 * keeps it alive until done is called or it removes it. CURLOPT_PRIVATE is
 * the loop's (it points here). */
struct mcpx_curl_xfer {
	CURL *easy;
	/* The transfer ended with result; it is no longer on the multi
	 * handle, and the easy handle is still the owner's. */
	void (*done)(struct mcpx_curl_xfer *x, CURLcode result);
	bool running; /* on the multi handle (the loop's) */
};

/* A loop whose transfers each say who is told of their end (done is NULL
 * in it). NULL when out of memory. */
struct mcpx_curl_loop *mcpx_curl_loop_new(struct mcpx_loop *loop, const char *who);
/* Frees a loop from mcpx_curl_loop_new once no transfer runs on it. NULL
 * is fine. */
void mcpx_curl_loop_free(struct mcpx_curl_loop *cl);

/* Starts x on cl (made by mcpx_curl_loop_new). Returns 0, or -EIO when curl
 * refused it (or libcurl cannot be loaded). */
int mcpx_curl_loop_add(struct mcpx_curl_loop *cl, struct mcpx_curl_xfer *x);
/* Stops x before its end if it runs (done is not called). */
void mcpx_curl_loop_remove(struct mcpx_curl_loop *cl, struct mcpx_curl_xfer *x);

#endif
