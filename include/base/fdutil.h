/*
 * fdutil.h - the few file-descriptor chores every process-handling module
 * needs, written once.
 */
#ifndef MCPX_FDUTIL_H
#define MCPX_FDUTIL_H

/* Closes *fd if it is open and sets it to -1, so a second call is harmless. */
void mcpx_close_fd(int *fd);

/* Adds O_NONBLOCK / FD_CLOEXEC. Return 0 or -errno. */
int mcpx_set_nonblock(int fd);
int mcpx_set_cloexec(int fd);

#endif
