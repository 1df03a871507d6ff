/*
 * fdutil.c - file-descriptor chores (fdutil.h).
 */
#include "fdutil.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

void mcpx_close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

int mcpx_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int mcpx_set_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);

	if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
		return -errno;
	return 0;
}
