/*
 * interp.h - the embedded interpreter of mcp-exec-zygote.
 *
 * Private to the zygote binary (cmd/mcp-exec-zygote, zygote.c). One
 * interpreter per process, initialised like `python3 -I -u -B` (isolated,
 * unbuffered, no bytecode written), with the runner (runner.h) installed
 * and the preload list imported. Everything here runs inside a sandbox the
 * cold path's setup built (sandbox_child.c): the zygote's, or a run's.
 */
#ifndef MCPX_ZYGOTE_INTERP_H
#define MCPX_ZYGOTE_INTERP_H

#include <sched.h>

/* Initialises the interpreter with python as sys.executable (the
 * interpreter a cold run execs), installs the runner and the support
 * modules, then imports each module of preload_csv (validated: module
 * names only) with stderr on /dev/null; a module that fails to import is
 * skipped. Returns 0, or -1 with a message on stderr. */
int mcpx_interp_start(const char *python, const char *preload_csv);

/* Moves everything allocated so far out of the collector's reach
 * (gc.freeze), so children do not touch, and so copy, those pages. Call
 * right before the zygote starts forking. Returns 0 or -1. */
int mcpx_interp_freeze(void);

/* In a child the zygote forked, right after fork: the interpreter's own
 * after-fork work (PyOS_AfterFork_Child: locks, thread state, the
 * os.register_at_fork hooks such as random's reseed). */
void mcpx_interp_forked(void);

/* In that child, once its sandbox is set up: the runner's _mcpx_fresh (the
 * workdir in the environment where the zygote's was, env_name=env_value
 * added when env_name is not NULL, numpy reseeded, the run's path
 * rehearsed). Returns 0 or -1. */
int mcpx_interp_fresh(const char *zygote_dir, const char *workdir, const char *env_name,
                      const char *env_value);

/* Says ready (MCPX_WARM_READY on stdout), reads the header and the code
 * from stdin, says it has them (MCPX_WARM_TAKEN), re-bases RLIMIT_CPU on the CPU used so far,
 * becomes dumpable again (a cold run is), takes the CPU affinity cpus (NULL: keeps its own) and
 * runs the code as __main__ from <workdir>/main.py.
 * Never returns: the process exits with the program's status (0 without a
 * word when stdin ends before the code: the server discarded it). */
__attribute__((noreturn)) void mcpx_interp_run(const char *workdir, const cpu_set_t *cpus);

#endif
