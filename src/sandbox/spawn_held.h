/*
 * spawn_held.h - what spawn.c lends the sandbox's other parent-side files
 * for a run held before its code (gate.c's prepared bash): a spawn with no
 * code yet, one more variable and its own workdir step; the code file
 * written later; and the limits a run of a language gets, computed once
 * for a cold spawn and for the line that lowers a held run's own.
 *
 * Not for use outside src/sandbox/; everyone else has sandbox.h.
 */
#ifndef MCPX_SPAWN_HELD_H
#define MCPX_SPAWN_HELD_H

#include "sandbox.h"

/* How a run is held: env, one more variable of its environment (a static
 * string, "NAME=value"); make, what goes into its new workdir instead of
 * the code (0 or -errno with err set). */
struct mcpx_spawn_hold {
	const char *env;
	int (*make)(const struct mcpx_sandbox *sb, const char *workdir, struct mcpx_err *err);
};

/* A run of lang started as a cold one is, without its code: held as hold
 * says. As mcpx_sandbox_spawn_lang otherwise. */
int mcpx_spawn_held(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
                    enum mcpx_lang lang, const struct mcpx_spawn_hold *hold,
                    struct mcpx_sandbox_proc *proc, struct mcpx_err *err);

/* Writes lang's code file into proc's workdir (owned by the run uid). */
int mcpx_spawn_write_code(const struct mcpx_sandbox *sb, const struct mcpx_sandbox_proc *proc,
                          enum mcpx_lang lang, const char *code, size_t code_len,
                          struct mcpx_err *err);

/* The rlimits a run of lang gets for lim (mcpx_sandbox_rlimits, then the
 * language's adjustments: language.c). Returns how many. */
int mcpx_spawn_rlimits(const struct mcpx_sandbox *sb, enum mcpx_lang lang,
                       const struct mcpx_limits *lim, struct mcpx_rlimit out[MCPX_MAX_RLIMITS]);

#endif
