/*
 * app.h - builds the server from its modules for the configured transport and
 * runs it until stdin EOF (stdio) or SIGTERM, then tears down in reverse.
 */
#ifndef MCPX_APP_H
#define MCPX_APP_H

struct mcpx_config;

/* Returns the process exit status (0, or a sysexits code). The config is
 * mutable only so the auth module can take and wipe the token. */
int mcpx_app_run(struct mcpx_config *cfg);

/* --check-config: prints the configuration, the sandbox layers and the
 * self-test result; returns the exit status. */
int mcpx_app_check_config(struct mcpx_config *cfg);

#endif
