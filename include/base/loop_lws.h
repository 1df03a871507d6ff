/*
 * loop_lws.h - what the libwebsockets-based server needs from the loop: the
 * protocol entry that carries adopted file descriptors. Only the server loop
 * and transports include this header.
 */
#ifndef MCPX_LOOP_LWS_H
#define MCPX_LOOP_LWS_H

#include <libwebsockets.h>

#define MCPX_FD_PROTOCOL_NAME "mcpx-fd"

/* The protocol every vhost must list so the loop can adopt fds into it. */
extern const struct lws_protocols mcpx_loop_fd_protocol;

#endif
