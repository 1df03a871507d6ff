/*
 * mcp-exec-zygote - the warm interpreter of mcp-exec: Debian's libpython
 * embedded in a small C program, started by the server through the same
 * sandbox setup as a cold run (spawn.c), never by hand.
 *
 *   mcp-exec-zygote serve <python> <preload>   the fork server's zygote
 *   mcp-exec-zygote once <python> <preload>    one warm interpreter
 *                                              (after-reap mode)
 *
 * <python> is the interpreter cold runs exec (sys.executable), <preload> the
 * validated MCP_EXEC_PRELOAD list. Exits 64 on bad arguments.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "interp.h"
#include "preload.h"
#include "zygote.h"

/* Threat: a memory-hungry run making the OOM killer pick the server. The
 * server raises this process's score to 1000 as for every sandboxed process
 * (a root server's child before it drops root, in the pod the server itself
 * right after exec: Landlock keeps this process from writing /proc). Until
 * then this process stays dumpable, since turning non-dumpable would hand
 * its /proc files to root and make the server's write fail. */
static int await_oom_score(void)
{
	struct timespec ts = {0, 1000000};

	for (int i = 0; i < 10000; i++) {
		char cur[16] = {0};
		int fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, cur, sizeof(cur) - 1) : -1;

		if (fd >= 0)
			close(fd);
		if (n > 0 && atoi(cur) == 1000)
			return 0;
		nanosleep(&ts, NULL);
	}
	return -1;
}

int main(int argc, char **argv)
{
	bool serve = argc == 4 && strcmp(argv[1], "serve") == 0;
	bool once = argc == 4 && strcmp(argv[1], "once") == 0;

	if ((!serve && !once) || argv[2][0] != '/' || !mcpx_preload_valid(argv[3])) {
		fprintf(stderr, "usage: mcp-exec-zygote serve|once <python> <preload>\n"
		                "(started by mcp-exec, not by hand)\n");
		return EX_USAGE;
	}
	if (await_oom_score() < 0) {
		fprintf(stderr, "mcp-exec-zygote: oom_score_adj was never raised\n");
		return EX_OSERR;
	}
	/* Non-dumpable while it waits: no same-uid process can open
	 * /proc/<pid>/fd/0 or read its memory. A run's child becomes dumpable
	 * again when its code arrives (interp.c). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		perror("mcp-exec-zygote: PR_SET_DUMPABLE");
		return EX_OSERR;
	}
	if (serve)
		return mcpx_zygote_serve(argv[2], argv[3]);
	{
		char dir[4096];

		if (!getcwd(dir, sizeof(dir)) || mcpx_interp_start(argv[2], argv[3]) < 0)
			return 1;
		mcpx_interp_run(dir, NULL);
	}
}
