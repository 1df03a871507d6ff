/*
 * caller.h - how long a caller's name may be, for every layer that carries
 * one (the auth gate, the HTTP request, the protocol session, the audit).
 *
 * A caller is who presented the request's credential: a named token's
 * caller (1..128 characters), "default" for MCP_EXEC_AUTH_TOKEN, a
 * Kubernetes ServiceAccount as "system:serviceaccount:<namespace (63)>:
 * <name (253)>", "stdio" on stdio, or "anonymous" on an HTTP listener
 * without auth.
 */
#ifndef MCPX_CALLER_H
#define MCPX_CALLER_H

/* The longest name, NUL included. */
#define MCPX_CALLER_MAX 352

#endif
