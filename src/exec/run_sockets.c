/*
 * run_sockets.c - the AF_UNIX socket buffers of a run's processes
 * (run_sockets.h), summed from one sock_diag dump.
 *
 * Two steps: the inodes of the sockets the run's processes hold, from their
 * fd tables in /proc (following an fd's link reaches the socket's inode),
 * sorted; then one NETLINK_SOCK_DIAG dump of every AF_UNIX socket of the
 * network namespace with its memory, each looked up among them. The dump
 * costs the server in proportion to the sockets on the host, so the caller
 * reads it only every few readings.
 */
#include "run_sockets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* The state of a listening socket (TCP_LISTEN in the kernel's numbering):
 * its "receive queue" is a count of pending connections, not bytes. */
#define TCP_LISTEN_STATE 10

struct inodes {
	size_t n;
	ino_t ino[MCPX_SOCKETS_MAX];
};

static int cmp_ino(const void *a, const void *b)
{
	ino_t x = *(const ino_t *)a, y = *(const ino_t *)b;

	return x < y ? -1 : x > y;
}

static void collect(const struct mcpx_usage_procs *p, struct inodes *s)
{
	for (size_t i = 0; i < p->n && s->n < MCPX_SOCKETS_MAX; i++) {
		char path[64];
		struct dirent *de;
		struct stat st;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/fd", (int)p->pid[i]);
		d = opendir(path);
		if (!d)
			continue;
		while (s->n < MCPX_SOCKETS_MAX && (de = readdir(d)))
			if (de->d_name[0] != '.' && fstatat(dirfd(d), de->d_name, &st, 0) == 0 &&
			    S_ISSOCK(st.st_mode))
				s->ino[s->n++] = st.st_ino;
		closedir(d);
	}
	qsort(s->ino, s->n, sizeof(s->ino[0]), cmp_ino);
	/* A socket held by several processes (after fork) counts once. */
	if (s->n) {
		size_t w = 1;

		for (size_t r = 1; r < s->n; r++)
			if (s->ino[r] != s->ino[w - 1])
				s->ino[w++] = s->ino[r];
		s->n = w;
	}
}

static bool held(const struct inodes *s, ino_t ino)
{
	return bsearch(&ino, s->ino, s->n, sizeof(s->ino[0]), cmp_ino) != NULL;
}

static int request_dump(int fd)
{
	struct {
		struct nlmsghdr nh;
		struct unix_diag_req req;
	} msg = {
	    .nh = {.nlmsg_len = sizeof(msg),
	           .nlmsg_type = SOCK_DIAG_BY_FAMILY,
	           .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
	    .req = {.sdiag_family = AF_UNIX,
	            .udiag_states = ~0u,
	            .udiag_show = UDIAG_SHOW_MEMINFO | UDIAG_SHOW_RQLEN},
	};
	struct sockaddr_nl nl = {.nl_family = AF_NETLINK};

	if (sendto(fd, &msg, sizeof(msg), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0)
		return -errno;
	return 0;
}

/* One socket's buffers, when it is one of the run's: what it sent that is
 * not read yet (charged to it, overhead included), and what waits in its
 * own receive queue. A stream's bytes between two ends the run both holds
 * count twice: an over-count, never an under-count. The receive queue is
 * what still counts when the sending end was closed (it is no longer
 * listed, and its charge goes with it). */
static uint64_t socket_bytes(const struct nlmsghdr *h, const struct inodes *s)
{
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	int len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*m));
	const struct rtattr *a = (const struct rtattr *)(m + 1);
	uint64_t n = 0;

	if (len < 0 || !held(s, (ino_t)m->udiag_ino))
		return 0;
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		const uint32_t *v = RTA_DATA(a);

		if (a->rta_type == UNIX_DIAG_MEMINFO &&
		    RTA_PAYLOAD(a) >= sizeof(uint32_t) * (SK_MEMINFO_WMEM_ALLOC + 1))
			n += (uint64_t)v[SK_MEMINFO_RMEM_ALLOC] + v[SK_MEMINFO_WMEM_ALLOC];
		else if (a->rta_type == UNIX_DIAG_RQLEN && m->udiag_state != TCP_LISTEN_STATE &&
		         RTA_PAYLOAD(a) >= sizeof(struct unix_diag_rqlen))
			n += ((const struct unix_diag_rqlen *)v)->udiag_rqueue;
	}
	return n;
}

int mcpx_usage_socket_kb(const struct mcpx_usage_procs *p, uint64_t *kb)
{
	struct inodes *s = calloc(1, sizeof(*s));
	uint64_t bytes = 0;
	int fd = -1, rc = 0;
	bool done = false;
	long buf[8192];

	*kb = 0;
	if (!s)
		return -ENOMEM;
	collect(p, s);
	if (!s->n)
		goto out;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0 || (rc = request_dump(fd)) < 0) {
		rc = fd < 0 ? -errno : rc;
		goto out;
	}
	while (!done) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
		/* unsigned: NLMSG_OK compares it with the header's __u32 length. */
		unsigned int left = (unsigned int)n;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				rc = e->error < 0 ? e->error : -EIO;
				done = true;
				break;
			}
			bytes += socket_bytes(h, s);
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(s);
	*kb = bytes / 1024u;
	return rc;
}
