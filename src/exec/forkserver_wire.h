/*
 * forkserver_wire.h - the fork server's control socket, and what the fork
 * server's two files share: the server's side of one zygote as a
 * structure, and the control socket's requests. forkserver.c sits above
 * forkserver_wire.c and alone calls down into it; the wire tells it of a
 * fork's answer through the request's on_answer.
 *
 * forkserver.c       the zygote started and stopped, its directory, a
 *                    child asked for, taken and adopted, the self-test
 * forkserver_wire.c  the control socket: requests sent, their answers read
 *                    in order (by a loop watch, or by a bounded wait off
 *                    the loop), the 5 s bound on each, reaps asked
 *
 * Not for use outside those two files; everyone else has forkserver.h.
 */
#ifndef MCPX_FORKSERVER_WIRE_H
#define MCPX_FORKSERVER_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "dirguard.h"
#include "forkserver.h"
#include "loop.h"
#include "warm_child.h"
#include "zygote_proto.h"

/* How long an answer may take: a fork of the preloaded zygote is a
 * millisecond, a reap of an exited child less, a child's setup about as
 * much as its fork. */
#define MCPX_FS_ANSWER_TIMEOUT_MS 5000

/* One request sent and not yet answered. Answers come strictly in the
 * order of the requests, so they wait in a queue. */
struct mcpx_fs_request {
	struct mcpx_fs_request *next;
	uint32_t op;      /* MCPX_ZOP_FORK or MCPX_ZOP_REAP */
	pid_t pid;        /* a reap's leader */
	uint64_t sent_us; /* mcpx_now_us */
	/* A reap asked without waiting: told its answer, then freed. NULL:
	 * someone waits for it (answered, rep and rc below). */
	mcpx_reaped_fn done;
	void *arg;
	/* The fork's request: told its answer (NULL rep: none will come). */
	void (*on_answer)(struct mcpx_forkserver *fs, const struct mcpx_zygote_reply *rep);
	bool answered;
	int rc; /* 0, or -EPIPE: the zygote went before it answered */
	struct mcpx_zygote_reply rep;
};

/* A fork asked for and not yet taken: the server's ends of the child's
 * pipes and its workdir, then the zygote's answer. Its state is the warm
 * child's (warm_child.h) as far as the protocol sees it: NONE, ASKED (the
 * request sent, its answer not read), FORKED (the answer read: the pid, or
 * why the fork failed), then TAKEN (handed to proc) or DISCARDED. The
 * warm pool keeps the child's own state; this is the request's. */
struct mcpx_fs_pending {
	enum mcpx_warm_child_state state;
	struct mcpx_fs_request req; /* its place in the queue while ASKED */
	bool drop;                  /* nobody will take it: ended once answered */
	pid_t pid;                  /* from the answer; 0 when the fork failed */
	int err;                    /* errno of a failed fork */
	int stdin_w, stdout_r, stderr_r, errpipe_r;
	int channel;            /* the server's end of the run's broker channel, or -1 */
	struct mcpx_limits lim; /* what it was asked for with */
	char workdir[4096];
	int parent_fd; /* the zygote's directory, O_PATH */
};

struct mcpx_forkserver {
	const struct mcpx_sandbox *sb;
	struct mcpx_sandbox_proc zygote;
	int ctl;
	bool ready;
	bool dead;
	struct mcpx_fs_pending next;
	/* Requests sent, oldest first: the next answer is head's. */
	struct mcpx_fs_request *head, *tail;
	/* With a loop (mcpx_forkserver_use_loop) answers are read by a watch
	 * on a dup of ctl, which wants to read only while a request waits,
	 * and a timer bounds each at MCPX_FS_ANSWER_TIMEOUT_MS; without one
	 * they are read when someone needs them, with a bounded wait. */
	struct mcpx_loop *loop;
	struct mcpx_watch watch;
	bool watching;
	struct mcpx_timer deadline;
	void (*on_answer)(void *arg); /* the pending fork was answered */
	void *on_answer_arg;
	/* Answers being handed out (their callbacks may stop the fork
	 * server): stopped is then kept, and fs freed once they are done. */
	unsigned dispatching;
	bool stopping; /* mcpx_forkserver_stop under way */
	bool stopped;
	/* The zygote's directory once it is ready (when a run could change
	 * it), under the sandbox's guards of the workdir base. */
	struct mcpx_dirguards guards;
	/* The address space the zygote maps once it has preloaded: each
	 * child starts with it (see mapped_size). */
	unsigned long long mapped;
};

/* ---- forkserver_wire.c ---- */

/* Fails every request waiting for an answer (none will come: the zygote
 * is gone or being stopped); fs->dead from then on. */
void mcpx_fs_fail_all(struct mcpx_forkserver *fs);
/* Marks the zygote gone (once; its stderr logged) and fails every request
 * waiting for an answer. Returns -EPIPE with what in err (may be NULL). */
int mcpx_fs_mark_dead(struct mcpx_forkserver *fs, struct mcpx_err *err, const char *what);
/* Sends one message: msg, then tail (may be empty), with nfds fds. */
int mcpx_fs_send(struct mcpx_forkserver *fs, const void *msg, size_t len, const void *tail,
                 size_t tail_len, const int *fds, size_t nfds);
/* Receives one message without waiting: 0, -EAGAIN (nothing yet) or
 * -EPIPE (gone, or not an answer). */
int mcpx_fs_recv(struct mcpx_forkserver *fs, struct mcpx_zygote_reply *rep);
/* Queues r, sent just now, for its answer. */
void mcpx_fs_enqueue(struct mcpx_forkserver *fs, struct mcpx_fs_request *r);
/* Reads the answers that have come and hands each to its request; with
 * want, waits (bounded; loop_guard.h checks the wait) until want is
 * answered. Returns 0, or -ESHUTDOWN when fs was stopped meanwhile: the
 * caller must not touch fs again. */
int mcpx_fs_read_answers(struct mcpx_forkserver *fs, struct mcpx_fs_request *want);
/* Stops watching (fs->stopped set): fs is freed now, or once its answers
 * have been handed out. */
void mcpx_fs_release(struct mcpx_forkserver *fs);

/* A child's reapers (sandbox.h: mcpx_reap_fn, mcpx_reap_async_fn), ctx
 * the fork server: the first waits for the answer (bounded), the second
 * has it handed to done on the loop (without a loop: waited for too). */
int mcpx_fs_reap_sync(void *ctx, pid_t pid, int *status, struct rusage *ru);
int mcpx_fs_reap_async(void *ctx, pid_t pid, mcpx_reaped_fn done, void *arg);

#endif
