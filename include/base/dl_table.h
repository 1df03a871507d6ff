/*
 * dl_table.h - a shared library loaded on first use into a table of
 * function pointers, all or none (dl_table.c).
 *
 * What curl_lib.c (libcurl) and hiredis_lib.c (libhiredis) share: the
 * server links neither, so a replica that never uses them never maps them.
 */
#ifndef MCPX_DL_TABLE_H
#define MCPX_DL_TABLE_H

#include <stdbool.h>
#include <stddef.h>

/* Opens soname (RTLD_NOW | RTLD_LOCAL) and stores the address of each
 * names[i] in *slots[i]. True when every name was found; otherwise a
 * warning names the library, the cause and what fails without it
 * (without, e.g. "outgoing HTTP requests fail"), the library is closed
 * and no slot is to be used. Called once per library (under the caller's
 * pthread_once). */
bool mcpx_dl_table_load(const char *soname, const char *const names[], void **const slots[],
                        size_t n, const char *without);

#endif
