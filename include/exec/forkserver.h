/*
 * forkserver.h - warm runs forked from a zygote that has never run user code.
 *
 * The zygote is mcp-exec-zygote (src/zygote/), a C program embedding the
 * interpreter, started through the sandbox (sandbox.h,
 * mcpx_sandbox_spawn_zygote); it preloads the configured modules once and
 * then, on request, forks a child per run. The child runs the cold path's
 * setup itself (sandbox_child.c: its own session, workdir, limits, a nested
 * Landlock ruleset and the run's seccomp filter stacked on the zygote's),
 * reports it on an error pipe as a cold child does, and then behaves
 * exactly like a warm interpreter (warm.h): ready byte, header, code, one
 * run, discarded. The server adopts
 * the child (mcpx_sandbox_adopt), so kill, reap and cleanup are the same as
 * for any run; reaping goes through the zygote, which never reaps on its own.
 *
 * Only for kernels where run code can neither signal nor ptrace the zygote
 * (Landlock ABI >= 6 with signal scoping); the executor decides that. Not
 * thread-safe: one thread (the executor's loop) drives it.
 *
 * Waiting: with a loop (mcpx_forkserver_use_loop) the zygote's answers are
 * read by a watch on its control socket, so nothing on the loop's thread
 * waits for the zygote: a fork's answer is told to on_answer, a reap's to
 * its callback (mcpx_forkserver_reap_async). The calls that wait for an
 * answer (take, reap, a take_now whose answer has not come, stop without
 * a loop) wait at most 5 s, and only off the loop (loop_guard.h checks
 * it): the start-up self-test, the unit tests, teardown.
 */
#ifndef MCPX_FORKSERVER_H
#define MCPX_FORKSERVER_H

#include <stdbool.h>

#include "err.h"
#include "loop.h"
#include "sandbox.h"

struct mcpx_forkserver;

/* Starts the zygote, preloading the modules of preload (a validated list),
 * under lim (its CPU limit is ignored: each child sets its own). Needs
 * mcpx_sandbox_use_zygote. Returns at once; the preload goes on in the
 * background (see mcpx_forkserver_poll). */
int mcpx_forkserver_start(const struct mcpx_sandbox *sb, const char *preload,
                          const struct mcpx_limits *lim, struct mcpx_forkserver **out,
                          struct mcpx_err *err);

/* Reads the zygote's answers on loop from now on: on_answer(arg) (may be
 * NULL) is called once the pending fork's answer has come, or once it is
 * known that none will (mcpx_forkserver_answered is then true). A request
 * not answered within 5 s marks the zygote gone. */
void mcpx_forkserver_use_loop(struct mcpx_forkserver *fs, struct mcpx_loop *loop,
                              void (*on_answer)(void *arg), void *arg);

/* 1 when the zygote is ready to fork, 0 while it is still preloading,
 * -EPIPE when it is gone (stop it and start another). Never blocks. */
int mcpx_forkserver_poll(struct mcpx_forkserver *fs);

/* False once the zygote process has exited (its pidfd says so), whatever
 * the control socket last said. Never blocks. */
bool mcpx_forkserver_alive(const struct mcpx_forkserver *fs);

/* The zygote's pid (for logs and metrics). */
pid_t mcpx_forkserver_pid(const struct mcpx_forkserver *fs);

/* True when the pending fork's answer has arrived (or it failed), so that
 * mcpx_forkserver_take will not wait for it. Never blocks. */
bool mcpx_forkserver_answered(struct mcpx_forkserver *fs);

/* Reaps a child the zygote forked (after it exited or was killed): status
 * and rusage as wait4 gives them. Returns 0 or -errno (-EPIPE: the zygote
 * is gone, and the child's zombie came back to the server). Waits for the
 * answer. */
int mcpx_forkserver_reap(struct mcpx_forkserver *fs, pid_t pid, int *status, struct rusage *ru);

/* The same reap with the answer handed to done(arg, rc, status, ru) on the
 * loop (sandbox.h, mcpx_reap_async_fn); without a loop it is waited for
 * and done called before this returns. Returns 0, or -errno when nothing
 * was asked (done is then not called). */
int mcpx_forkserver_reap_async(struct mcpx_forkserver *fs, pid_t pid, mcpx_reaped_fn done,
                               void *arg);

/* Asks for the next run and returns without waiting: a fresh workdir
 * beneath the zygote's, three pipes (and with lim->channel a broker channel,
 * as for a cold spawn), and a child that is sandboxed before it reports
 * ready on its stdout. At most one fork is pending. Fails with
 * -EAGAIN before the zygote is ready and with -EPIPE when it is gone. */
int mcpx_forkserver_fork(struct mcpx_forkserver *fs, const struct mcpx_limits *lim,
                         struct mcpx_err *err);

/* Takes the pending fork (waiting, bounded, for the zygote's answer and the
 * child's setup verdict): proc becomes an adopted run (see sandbox.h) with
 * O_NONBLOCK stdin/stdout/stderr ends. A child whose setup failed is
 * reported as a cold spawn reports it ("sandbox setup failed at step
 * <name>: <error>"), with *setup_failed set (may be NULL). On failure
 * nothing of the fork is left. */
int mcpx_forkserver_take(struct mcpx_forkserver *fs, struct mcpx_sandbox_proc *proc,
                         bool *setup_failed, struct mcpx_err *err);

/* As take, without waiting for the child's setup verdict: a child still
 * entering its sandbox is handed over with proc->setup_fd, its error pipe,
 * whose verdict the caller reads once the child ends without saying ready
 * (mcpx_sandbox_setup_verdict); a verdict already there is read here, as
 * take reads it. Waits only for the zygote's answer to the fork, which
 * mcpx_forkserver_answered says has come. */
int mcpx_forkserver_take_now(struct mcpx_forkserver *fs, struct mcpx_sandbox_proc *proc,
                             bool *setup_failed, struct mcpx_err *err);

/* Ends the pending fork unused: its child is taken and ended now when its
 * answer has come, or once it comes (with a loop). No-op when none is
 * pending. */
void mcpx_forkserver_drop(struct mcpx_forkserver *fs);

/* True while a fork is asked for and not yet taken. */
bool mcpx_forkserver_pending(const struct mcpx_forkserver *fs);

/* The limits the pending fork was asked for with (owned by fs, valid until
 * it is taken), or NULL when none is pending: a successor zygote asks its
 * own child with them (zygote_cycle.c). */
const struct mcpx_limits *mcpx_forkserver_pending_limits(const struct mcpx_forkserver *fs);

/* Proves a ready zygote: forks a child and runs the start-up self-test's
 * probe in it (mcpx_sandbox_selftest_in), checking every active layer the
 * way a cold run is checked at start-up. Blocks for one short run. Returns
 * 0, or -EPERM with the failing layer in err. */
int mcpx_forkserver_selftest(struct mcpx_forkserver *fs, struct mcpx_err *err);

/* Ends the zygote (its children are the caller's to reap first; any left
 * come back to the server as the subreaper) and frees fs (once its answers
 * in hand have been given out). Requests still waiting for an answer fail
 * (-EPIPE). With a loop nothing waits: the zygote is reaped once it has
 * exited (reap_later.h). NULL is fine. */
void mcpx_forkserver_stop(struct mcpx_forkserver *fs);

#endif
