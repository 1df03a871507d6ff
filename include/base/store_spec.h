/*
 * store_spec.h - which store keeps workspaces and tasks: MCP_EXEC_WORKSPACES
 * parsed and printed.
 *
 * The value is "off", "dir:<absolute path>" or
 * "redis://[user@]host[:port][/db]" (port 6379 and db 0 by default; an IPv6
 * address in brackets). A password never appears in the value: it comes
 * from MCP_EXEC_WORKSPACES_PASSWORD_FILE, which the store reads when it
 * opens. Unset, the store is a directory under the server's state
 * directory (mcpx_store_spec_default).
 *
 * Parsing is strict and its messages never repeat the value (it is the
 * store's address, which must not reach the logs): they name the part that
 * is wrong. What it does not do: open anything or check that a directory is
 * out of the runs' reach (the store and the app do).
 */
#ifndef MCPX_STORE_SPEC_H
#define MCPX_STORE_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

enum mcpx_store_type { MCPX_STORE_OFF, MCPX_STORE_DIR, MCPX_STORE_REDIS };

/* The longest store directory: its objects' paths are built beneath it in
 * 4096-byte buffers with up to 256 bytes after it. */
#define MCPX_STORE_DIR_MAX (4096 - 256 - 1)

struct mcpx_store_spec {
	enum mcpx_store_type type;
	bool is_default;          /* not configured: the default directory */
	char dir[4096];           /* DIR: an absolute path without "." or ".." parts */
	char host[256];           /* REDIS: a host name or an address (IPv6 without brackets) */
	int port;                 /* REDIS: 1..65535 */
	unsigned db;              /* REDIS: the database number */
	char user[128];           /* REDIS: the ACL user, "" for none */
	char password_file[4096]; /* REDIS: "" for none (MCP_EXEC_WORKSPACES_PASSWORD_FILE) */
};

/* Parses value into spec (password_file and is_default untouched). Returns
 * 0, or -EINVAL with err naming what is wrong. */
int mcpx_store_spec_parse(const char *value, struct mcpx_store_spec *spec, struct mcpx_err *err);

/* The default store: a directory "workspaces" under the server's state
 * directory: /var/lib/mcp-exec as root, else $XDG_STATE_HOME/mcp-exec or
 * $HOME/.local/state/mcp-exec. Returns 0, or -ENOENT (not root and neither
 * variable is set to an absolute path) with err set. */
int mcpx_store_spec_default(struct mcpx_store_spec *spec, struct mcpx_err *err);

/* The spec as --check-config shows it: "off", "dir:<path>" or
 * "redis://[user@]host:port/db" with "(password from <file>)" when one is
 * set; never a password. */
void mcpx_store_spec_format(const struct mcpx_store_spec *spec, char *out, size_t n);

#endif
