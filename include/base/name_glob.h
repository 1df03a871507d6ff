/*
 * name_glob.h - the globs of the policy file (profile callers and tools,
 * an upstream's allow and deny): one syntax, checked when the policy
 * loads, matched by one matcher.
 *
 * The syntax, exactly (docs/policy.md, "Globs"): a pattern is 1.. printable
 * ASCII characters without spaces;
 *   *       any run of characters, the empty one too ('.', ':' and '/' are
 *           characters like any other);
 *   ?       exactly one character (a whole UTF-8 sequence of the name);
 *   [set]   one ASCII character of the set: single characters and ranges
 *           a-z (low <= high); [!set] or [^set] one character not in it
 *           (non-ASCII characters included); a ']' first in the set and a
 *           '-' first or last are themselves; \x inside is x;
 *   \x      the character x itself (\*, \?, \[, \\);
 * every other character is itself. Refused at load: a trailing lone
 * backslash, a '[' without its ']', an empty set, a range whose ends are
 * reversed, and POSIX classes ([:alpha:] and the like: not supported, so
 * never silently read as a set of their letters).
 *
 * Matching is exact, or with MCPX_GLOB_CASEFOLD ASCII letters in either
 * case (deny lists: an upstream listing SECRET_ADMIN must not slip past
 * secret_*). Names are any bytes (a NUL ends them).
 */
#ifndef MCPX_NAME_GLOB_H
#define MCPX_NAME_GLOB_H

#include <stddef.h>

#define MCPX_GLOB_CASEFOLD 1u

/* 0 when pattern is usable; otherwise -EINVAL and a sentence in
 * why[whylen] saying what and where. */
int mcpx_glob_check(const char *pattern, char *why, size_t whylen);

/* 1 when name matches pattern, 0 when not, -EINVAL when the pattern is
 * one mcpx_glob_check refuses (a caller must treat that as the answer
 * that fails closed: not allowed, denied). */
int mcpx_glob_match(const char *pattern, const char *name, unsigned flags);

#endif
