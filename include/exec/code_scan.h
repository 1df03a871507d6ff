/*
 * code_scan.h - a cheap look at a run's Python code before it starts: does
 * it import only what any interpreter has at hand (the standard library,
 * mcpx), or something the scientific zygote preloads (numpy, matplotlib
 * and what is built on them)? The warm pool sends the first kind of run to
 * its plain zygote, whose children are lighter to fork and to prepare
 * (docs/architecture.md, "Two zygotes").
 *
 * The look is textual and errs one way only: anything it cannot judge (an
 * import of a module outside the list, __import__, importlib's
 * import_module) counts as "not plain", so such code gets the scientific
 * zygote, as every run did before. A run sent to the plain zygote that
 * imports more at run time (through exec of a built string, say) still
 * works: it imports it then, as a cold run would. Pure: no state, no
 * allocation.
 */
#ifndef MCPX_CODE_SCAN_H
#define MCPX_CODE_SCAN_H

#include <stdbool.h>
#include <stddef.h>

/* True when every module code imports (import a.b, from a.b import c, at
 * any depth of the code) is a standard-library module of CPython 3.11 or
 * the server's mcpx, and it names neither __import__ nor import_module. */
bool mcpx_code_plain(const char *code, size_t len);

#endif
