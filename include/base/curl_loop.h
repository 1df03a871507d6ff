/*
 * curl_loop.h - a libcurl multi handle driven by the server's event loop.
 *
 * The egress broker (and the upstream transfers it carries) and the
 * Kubernetes TokenReview client run their HTTP transfers on the server's
 * one loop through this glue: curl says which sockets to watch and when to
 * wake it (its socket and timer callbacks); the loop watches a dup() of
 * each socket (loop.h) and calls curl back; each transfer that ends is
 * handed to the owner's done function.
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

#endif
