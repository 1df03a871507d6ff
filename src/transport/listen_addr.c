/*
 * listen_addr.c - resolves the listener's host once at start-up and decides
 * from the resolved address whether the listener is loopback.
 *
 * Why: libwebsockets 4.1.6 takes its bind "interface" to be a numeric
 * address or an interface name. Given "localhost" it finds no such
 * interface, logs it and carries on without a listening socket, while our
 * loopback check had already trusted the name. Resolving here means the
 * listener binds what the name means, and a name that resolves to a public
 * address is not treated as loopback because of how it is spelled. This
 * module does not open sockets.
 */
#include "listen_addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static bool v4_loopback(const struct in_addr *a)
{
	return (ntohl(a->s_addr) >> 24) == 127;
}

static bool v6_loopback(const struct in6_addr *a)
{
	if (IN6_IS_ADDR_LOOPBACK(a))
		return true;
	/* ::ffff:127.x.y.z is IPv4 loopback reached through a v6 socket. */
	return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
}

static int describe(const struct sockaddr *sa, struct mcpx_listen_addr *out)
{
	const void *bin;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
		bin = &in->sin_addr;
		out->ipv6 = false;
		out->loopback = v4_loopback(&in->sin_addr);
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
		bin = &in6->sin6_addr;
		out->ipv6 = true;
		out->loopback = v6_loopback(&in6->sin6_addr);
	}
	if (!inet_ntop(sa->sa_family, bin, out->numeric, sizeof(out->numeric)))
		return -errno;
	return 0;
}

int mcpx_listen_addr_resolve(const char *host, struct mcpx_listen_addr *out, struct mcpx_err *err)
{
	struct addrinfo hints, *res = NULL, *pick = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!host[0] || strcmp(host, "0.0.0.0") == 0)
		return 0; /* every IPv4 interface: lws binds INADDR_ANY */
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc != 0)
		return mcpx_err_set(err, EINVAL,
		                    "MCP_EXEC_ADDR: cannot resolve host \"%.200s\": %s", host,
		                    gai_strerror(rc));
	/* IPv4 first: "localhost" often lists ::1 first, yet most clients
	 * that were told 127.0.0.1 (or resolve to it) would then be refused. */
	for (struct addrinfo *ai = res; ai && !pick; ai = ai->ai_next)
		if (ai->ai_family == AF_INET)
			pick = ai;
	for (struct addrinfo *ai = res; ai && !pick; ai = ai->ai_next)
		if (ai->ai_family == AF_INET6)
			pick = ai;
	rc = pick ? describe(pick->ai_addr, out)
	          : mcpx_err_set(err, EINVAL, "MCP_EXEC_ADDR: host \"%.200s\" has no IP address",
	                         host);
	freeaddrinfo(res);
	return rc;
}
