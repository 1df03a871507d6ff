/*
 * hex.h - hexadecimal digits, read in one place (percent-decoding of URLs
 * and JSON pointers, the tokens file's SHA-256 digests).
 */
#ifndef MCPX_HEX_H
#define MCPX_HEX_H

/* The value of the hex digit c (either case), or -1. */
int mcpx_hex_value(unsigned char c);

#endif
