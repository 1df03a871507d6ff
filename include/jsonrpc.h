/*
 * jsonrpc.h - JSON-RPC 2.0 message building blocks for the MCP core.
 *
 * Builds response, error and notification objects in cJSON and handles
 * request ids (validity, equality, a printable form). It knows nothing about
 * MCP methods, sessions or transports; mcp.c decides what to send, this
 * module only decides how a message looks on the wire.
 */
#ifndef MCPX_JSONRPC_H
#define MCPX_JSONRPC_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

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

/* True for an id MCP allows in a request: a string or a number (never null). */
bool mcpx_jsonrpc_id_valid(const cJSON *id);

/* True when two ids name the same request: same type and same value. */
bool mcpx_jsonrpc_id_equal(const cJSON *a, const cJSON *b);

/* Renders an id as text ("7", "abc"), truncated to cap-1 bytes on a UTF-8
 * character boundary. */
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
