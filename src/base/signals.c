/*
 * signals.c - a signalfd for SIGTERM and SIGINT, watched by the loop.
 */
#include "signals.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <unistd.h>

struct mcpx_signals {
	struct mcpx_watch w;
	bool open;
	void (*fn)(void *arg, int signo);
	void *arg;
};

static void sig_cb(struct mcpx_watch *w, int events)
{
	struct mcpx_signals *s = w->arg;
	struct signalfd_siginfo si;

	if (events & MCPX_EV_READ) {
		while (read(w->fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			s->fn(s->arg, (int)si.ssi_signo);
	}
	if (events & MCPX_EV_CLOSED)
		s->open = false;
}

struct mcpx_signals *mcpx_signals_watch(struct mcpx_loop *loop, void (*fn)(void *arg, int signo),
					void *arg)
{
	struct mcpx_signals *s = calloc(1, sizeof(*s));
	sigset_t set;
	int fd;

	if (!s)
		return NULL;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		goto fail;
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		goto fail;
	s->fn = fn;
	s->arg = arg;
	s->w.fd = fd;
	s->w.fn = sig_cb;
	s->w.arg = s;
	if (mcpx_loop_watch(loop, &s->w) < 0) {
		close(fd);
		goto fail;
	}
	s->open = true;
	return s;
fail:
	free(s);
	return NULL;
}

void mcpx_signals_free(struct mcpx_signals *s)
{
	if (!s)
		return;
	if (s->open)
		mcpx_loop_unwatch(&s->w);
	free(s);
}
