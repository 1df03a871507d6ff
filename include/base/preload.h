/*
 * preload.h - MCP_EXEC_PRELOAD, the modules a warm interpreter imports
 * before its first run: which lists are valid, and what "auto" means in
 * each warm mode. Shared by the configuration (which checks the value), the
 * warm pool (which resolves it) and the zygote (which checks its argument).
 */
#ifndef MCPX_PRELOAD_H
#define MCPX_PRELOAD_H

#include <stdbool.h>

/* MCP_EXEC_PRELOAD=auto (the default): what each mode preloads. A fork
 * server pays its preload once per zygote, so it also loads and warms
 * matplotlib (python/mcpx_matplotlib_warm.py), which makes a chart call
 * about three times faster for ~27 MiB more shared memory; an interpreter
 * per run would pay that in every run, so it keeps numpy alone
 * (docs/benchmarks.md, bench/preload.sh). */
#define MCPX_PRELOAD_AUTO "auto"
#define MCPX_PRELOAD_FORK "numpy,mcpx_matplotlib_warm"
#define MCPX_PRELOAD_FRESH "numpy"

/* True when every comma-separated entry is a dotted Python module name. */
bool mcpx_preload_valid(const char *csv);

/* The modules a warm interpreter preloads for a configured list: the list
 * itself, or for "auto" the mode's own (static storage). */
const char *mcpx_preload_list(const char *configured, bool fork_server);

#endif
