/*
 * functions_start.h - how the run channel's "call" op (functions_ops.c)
 * starts an mcpx.call: the same way as a tools/call (functions_start.c),
 * its arguments checked off the loop first.
 */
#ifndef MCPX_FUNCTIONS_START_H
#define MCPX_FUNCTIONS_START_H

#include <cjson/cJSON.h>

struct mcpx_fn_run;

/* Hands r's arguments (taken, even on failure) to the offload worker; the
 * call goes on when they were checked: queued, or refused (r->op answered,
 * or cb.done called). 0, or -ENOMEM with nothing queued. */
int mcpx_fn_validate_later(struct mcpx_fn_run *r, cJSON *args);

#endif
