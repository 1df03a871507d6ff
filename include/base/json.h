/*
 * json.h - JSON read strictly and written exactly, on top of cJSON 1.7.15.
 *
 * Every JSON value the server relays (an upstream's results and tool
 * schemas, a run's mcpx.call arguments and results, a function's arguments
 * and results, structuredContent) is parsed and printed here, because
 * cJSON alone changes numbers: it prints a double with 15 significant
 * digits whenever those come within a few units in the last place of it
 * (0.30000000000000004 becomes 0.3, 9007199254740991 becomes
 * 9.00719925474099e+15, 1.7976931348623157e308 becomes a number that reads
 * back as Infinity), and it keeps only the double of what it parsed (an
 * integer above 2^53 loses its last digits when parsed). So:
 *
 *   - parsing keeps a number's source text when printing its double would
 *     not give those bytes back (1.0, 1e400, 18446744073709551617, ...): in
 *     the number node's valuestring, which cJSON leaves unused for numbers,
 *     frees with the node and copies with cJSON_Duplicate;
 *   - printing writes a number's kept text when its double is still the
 *     one that text reads as (a value set later prints from the double),
 *     and otherwise the shortest text that reads back as the same double,
 *     in JavaScript's form (JSON.stringify), with -0 kept as "-0".
 *
 * So a value that passes through the server unchanged is written with the
 * bytes it came with, and a value the server computed reads back exactly.
 *
 * Parsing also adds what cJSON leaves out: the text must be valid UTF-8,
 * hold no unescaped control character (RFC 8259), and have nothing but
 * whitespace after the value. U+0000 inside a string: cJSON keeps strings
 * NUL-terminated, so each "\u0000" escape becomes MCPX_JSON_NUL_MARK, a
 * byte that never occurs in valid UTF-8, and the printer writes each mark
 * back as \u0000 (jsonrpc.h tells how the protocol uses that).
 *
 * Ownership: parsed trees are the caller's (cJSON_Delete); printed text is
 * the caller's (free).
 */
#ifndef MCPX_JSON_H
#define MCPX_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* Stands for U+0000 inside a parsed string (see above). */
#define MCPX_JSON_NUL_MARK 0xFF

/* Room for the text of any double as mcpx_json_number writes it. */
#define MCPX_JSON_NUMBER_MAX 32

/* Parses one JSON value of len bytes (not NUL-terminated). Returns 0 with
 * *out, or -EILSEQ (not valid UTF-8), -EBADMSG (an unescaped control
 * character), -EINVAL (not one JSON value, or more than whitespace after
 * it), -ENOMEM. */
int mcpx_json_parse(const char *p, size_t len, cJSON **out);

/* Appends v printed compactly, as cJSON_PrintUnformatted does but for its
 * numbers (exact, above) and each MCPX_JSON_NUL_MARK written as \u0000.
 * Returns 0, -ENOMEM, -E2BIG when out's cap would be passed, or -EINVAL
 * (a node cJSON could not print either: an invalid type, a raw node
 * without text). */
int mcpx_json_print(const cJSON *v, struct mcpx_buf *out);

/* v printed as mcpx_json_print does into a malloc'd string the caller
 * frees; NULL when out of memory. */
char *mcpx_json_print_exact(const cJSON *v);

/* Appends s (NUL-terminated, marks as \u0000) as a JSON string, as
 * mcpx_json_print writes strings. Same returns as mcpx_json_print. */
int mcpx_json_print_string(const char *s, struct mcpx_buf *out);

/* Writes the shortest text that reads back as d (strtod) into buf, in
 * JavaScript's number form ("0.30000000000000004", "1e+21", "5e-324"),
 * with "-0" for negative zero and "null" for NaN and the infinities (as
 * cJSON). Returns the text's length. */
size_t mcpx_json_number(double d, char buf[MCPX_JSON_NUMBER_MAX]);

#endif
