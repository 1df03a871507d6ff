/*
 * http_field.h - an HTTP field value as received, narrowed to its content:
 * the one trim the HTTP server (http_admit.c, server_http.c) and the
 * outgoing requests' header readers (broker.c, upstream_reader.c) share.
 */
#ifndef MCPX_HTTP_FIELD_H
#define MCPX_HTTP_FIELD_H

#include <stddef.h>

/* Narrows (*p, *len) to a field value without RFC 9110's optional
 * whitespace (spaces and tabs) at either end. A NULL *p reads as empty. */
void mcpx_http_trim(const char **p, size_t *len);

/* Shortens len by the CR LF (or lone LF) a raw header line from libcurl
 * ends with. */
void mcpx_http_chomp(const char *p, size_t *len);

#endif
