/*
 * jsonrpc.h - JSON-RPC 2.0 message building blocks for the MCP core.
 *
 * Parses inbound messages, builds response, error and notification objects
 * in cJSON, prints them, and handles request ids (validity, equality, a
 * printable form). It knows nothing about MCP methods, sessions or
 * transports; mcp.c decides what to send, this module only decides how a
 * message looks on the wire.
 *
 * U+0000 inside strings: cJSON keeps strings NUL-terminated, so a "\u0000"
 * escape would silently cut a string short (stdin, code, an id, a method
 * name). The parser therefore turns each such escape into
 * MCPX_JSON_NUL_MARK, a byte that never occurs in valid UTF-8 (and every
 * inbound message is checked to be valid UTF-8 first), so it cannot be
 * confused with anything the peer sent. A parsed string then has its true
 * length, compares unequal to every name it is not, and the printer writes
 * each mark back as \u0000, so echoes (ids, progress tokens) are exact.
 * Tools read their arguments' exact bytes with mcpx_json_bytes.
 */
#ifndef MCPX_JSONRPC_H
#define MCPX_JSONRPC_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "json.h" /* MCPX_JSON_NUL_MARK, mcpx_json_print_exact */

/* The largest message the printer produces (a batch's array included): a
 * hard cap far above what the configured limits let a reply reach. */
#define MCPX_JSONRPC_MAX_MESSAGE ((size_t)1 << 30)

/* JSON-RPC 2.0 error codes (https://www.jsonrpc.org/specification#error_object). */
#define MCPX_RPC_PARSE_ERROR -32700
#define MCPX_RPC_INVALID_REQUEST -32600
#define MCPX_RPC_METHOD_NOT_FOUND -32601
#define MCPX_RPC_INVALID_PARAMS -32602
#define MCPX_RPC_INTERNAL_ERROR -32603

/* MCP 2026-07-28 error codes (basic/index "Error Codes"; schema "Errors"). */
#define MCPX_RPC_HEADER_MISMATCH -32020
#define MCPX_RPC_MISSING_CLIENT_CAPABILITY -32021
#define MCPX_RPC_UNSUPPORTED_PROTOCOL_VERSION -32022

/* Parses one inbound message of len bytes (not NUL-terminated): valid UTF-8,
 * no unescaped control characters (RFC 8259), one JSON value and nothing but
 * whitespace after it. Returns the tree (caller frees with cJSON_Delete), or
 * NULL with the -32700 message in *why. */
cJSON *mcpx_jsonrpc_parse(const char *msg, size_t len, const char **why);

/* Appends msg, printed compactly, to out, each MCPX_JSON_NUL_MARK written as
 * \u0000 and every number exact (json.h). What it appends is valid UTF-8:
 * a string that is not (a bug of whoever made it) has each ill-formed
 * sequence replaced by U+FFFD, and the repair is counted. Returns 0,
 * -ENOMEM, or -E2BIG when out's cap would be passed. */
int mcpx_jsonrpc_print(const cJSON *msg, struct mcpx_buf *out);
/* How many printed messages needed that repair since the start: 0 unless
 * there is a bug (the fuzz harnesses check it). */
unsigned long mcpx_jsonrpc_repairs(void);

/* Adds item to obj under key, or frees it: the caller's item is never
 * leaked, whichever step ran out of memory (item may be NULL: a failed
 * allocation, reported as false). */
bool mcpx_json_add_owned(cJSON *obj, const char *key, cJSON *item);

/* True when a parsed string carries U+0000. */
bool mcpx_json_has_nul(const cJSON *str);

/* A parsed string's exact bytes, NULs restored: a malloc'd copy (with a
 * terminator after len bytes) that the caller frees; NULL when str is not a
 * string or memory ran out. */
char *mcpx_json_bytes(const cJSON *str, size_t *len);

/* True for an id MCP allows in a request: a string or a number (never null). */
bool mcpx_jsonrpc_id_valid(const cJSON *id);

/* True when two ids name the same request: same type and same value. */
bool mcpx_jsonrpc_id_equal(const cJSON *a, const cJSON *b);

/* Renders an id as text ("7", "abc"), truncated to cap-1 bytes on a UTF-8
 * character boundary; a U+0000 in it is shown as the six characters
 * \u0000, so the text stays printable for logs and the audit record. */
void mcpx_jsonrpc_id_text(const cJSON *id, char *buf, size_t cap);

/* {"jsonrpc":"2.0","id":id,"result":result}. Takes ownership of result (also
 * on failure); id is copied. Returns NULL when out of memory. */
cJSON *mcpx_jsonrpc_result(const cJSON *id, cJSON *result);

/* {"jsonrpc":"2.0","id":id|null,"error":{"code","message"[,"data"]}}. A NULL
 * id becomes null, as JSON-RPC requires when the id could not be read. Takes
 * ownership of data (may be NULL). */
cJSON *mcpx_jsonrpc_error(const cJSON *id, int code, const char *message, cJSON *data);

/* {"jsonrpc":"2.0","method":method[,"params":params]}. Takes ownership of
 * params (may be NULL). */
cJSON *mcpx_jsonrpc_notification(const char *method, cJSON *params);

/* Copies src into dst (cap bytes, always NUL-terminated), cutting on a UTF-8
 * character boundary so the copy stays valid UTF-8 if src was. */
void mcpx_utf8_copy_trunc(char *dst, size_t cap, const char *src);

#endif
