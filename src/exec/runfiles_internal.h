/*
 * runfiles_internal.h - what runfiles.c lends the module's other files:
 * the reading of a name's characters, which input paths
 * (mcpx_runfiles_check_path) and the names found under out/
 * (runfiles_output.c: an unsafe one is listed percent-encoded, never read
 * or entered) are judged by alike. Private to the module.
 */
#ifndef MCPX_RUNFILES_INTERNAL_H
#define MCPX_RUNFILES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The code point of the UTF-8 sequence at s (n bytes left) and its length;
 * a byte that starts no valid sequence is itself, length 1. */
size_t mcpx_runfiles_next_cp(const unsigned char *s, size_t n, uint32_t *cp);
/* Whether c is a character a name must not carry (control, line or
 * paragraph separator, bidirectional-text control). */
bool mcpx_runfiles_unsafe_cp(uint32_t c);
/* The offset of the first unsafe character in the n bytes at s, or n. */
size_t mcpx_runfiles_unsafe_at(const char *s, size_t n);

#endif
