/*
 * langset.h - the languages a run may be written in, by name, and
 * MCP_EXEC_LANGUAGES, the set an operator allows.
 *
 * Only names and the setting's syntax live here (the configuration checks
 * the value, the exec tool parses `language`); where each runtime is, its
 * version and how a run is started belong to the sandbox (language.h).
 * Nothing here allocates.
 */
#ifndef MCPX_LANGSET_H
#define MCPX_LANGSET_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* python first: it is the default, and the zero value. */
enum mcpx_lang { MCPX_LANG_PYTHON = 0, MCPX_LANG_BASH, MCPX_LANG_JAVASCRIPT, MCPX_LANG_COUNT };

#define MCPX_LANGS_AUTO "auto"

/* "python", "bash", "javascript" (static storage); "?" out of range. */
const char *mcpx_lang_name(enum mcpx_lang l);

/* The language named exactly (len bytes at name, case-sensitive), or -1. */
int mcpx_lang_from_name(const char *name, size_t len);

/* The set MCP_EXEC_LANGUAGES gives: "auto" (every language whose runtime
 * is present, *explicit false) or a comma-separated list of names, which
 * must include python, the default language (*explicit true: a listed
 * runtime that is missing is an error, not a silent omission). *mask has
 * bit (1u << lang) per language. Returns 0, or -EINVAL with err set. */
int mcpx_langset_parse(const char *setting, unsigned *mask, bool *explicit_list,
                       struct mcpx_err *err);

#endif
