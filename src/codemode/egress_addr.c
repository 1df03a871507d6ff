/*
 * egress_addr.c - the broker's address decision (egress_addr.h): address
 * classes, the connect check against a rule's allow_cidrs, CIDR parsing,
 * an address in words.
 *
 * The address table is the SSRF policy in one place: every range a request
 * must not reach unless a rule explicitly allows it, with the reason it is
 * there. IPv6 addresses that carry an IPv4 one are judged as that address.
 *
 * What it does not do: resolve names or connect (egress_handle.c checks
 * each connect with it), or judge URLs and headers (egress_check.c). It
 * keeps no state and allocates nothing.
 */
#include "egress_addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- addresses ---------------------------------------------------------- */

struct range {
	uint8_t net[16];
	unsigned bits;
	enum mcpx_addr_class cls;
};

/* clang-format off */
static const struct range v4_ranges[] = {
	/* "This network": connecting to 0.0.0.0 reaches the local host. */
	{{0, 0, 0, 0}, 8, MCPX_ADDR_UNSPECIFIED},
	{{10, 0, 0, 0}, 8, MCPX_ADDR_PRIVATE},
	/* Carrier-grade NAT: in some clouds, the node's own network. */
	{{100, 64, 0, 0}, 10, MCPX_ADDR_CGNAT},
	{{127, 0, 0, 0}, 8, MCPX_ADDR_LOOPBACK},
	/* Cloud metadata (169.254.169.254) and link-local services. */
	{{169, 254, 0, 0}, 16, MCPX_ADDR_LINK_LOCAL},
	{{172, 16, 0, 0}, 12, MCPX_ADDR_PRIVATE},
	/* IETF protocol assignments (some are node-local services). */
	{{192, 0, 0, 0}, 24, MCPX_ADDR_RESERVED},
	{{192, 168, 0, 0}, 16, MCPX_ADDR_PRIVATE},
	/* Benchmarking networks, used inside some data centres. */
	{{198, 18, 0, 0}, 15, MCPX_ADDR_RESERVED},
	{{224, 0, 0, 0}, 4, MCPX_ADDR_MULTICAST},
	/* Reserved for future use, and the limited broadcast address. */
	{{240, 0, 0, 0}, 4, MCPX_ADDR_RESERVED},
};

static const struct range v6_ranges[] = {
	{{0}, 128, MCPX_ADDR_UNSPECIFIED},
	{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, MCPX_ADDR_LOOPBACK},
	{{0xfe, 0x80}, 10, MCPX_ADDR_LINK_LOCAL},
	/* Site-local: deprecated, but still routed to private networks. */
	{{0xfe, 0xc0}, 10, MCPX_ADDR_PRIVATE},
	{{0xfc}, 7, MCPX_ADDR_ULA},
	{{0xff}, 8, MCPX_ADDR_MULTICAST},
	{{0x20, 0x01, 0x0d, 0xb8}, 32, MCPX_ADDR_RESERVED},
};

/* IPv6 prefixes whose last 32 bits are an IPv4 address that the packet
 * reaches (or that the host treats as one). */
static const struct range v6_embedding[] = {
	{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96, MCPX_ADDR_PUBLIC}, /* v4-mapped */
	{{0}, 96, MCPX_ADDR_PUBLIC},                                        /* v4-compatible */
	{{0, 0x64, 0xff, 0x9b}, 96, MCPX_ADDR_PUBLIC},                      /* NAT64 */
	{{0, 0x64, 0xff, 0x9b, 0, 1}, 48, MCPX_ADDR_PUBLIC},                /* local NAT64 */
};

static const char *const class_names[] = {
	[MCPX_ADDR_PUBLIC] = "public",
	[MCPX_ADDR_LOOPBACK] = "loopback",
	[MCPX_ADDR_PRIVATE] = "private",
	[MCPX_ADDR_LINK_LOCAL] = "link-local",
	[MCPX_ADDR_CGNAT] = "carrier-grade NAT",
	[MCPX_ADDR_ULA] = "unique local",
	[MCPX_ADDR_UNSPECIFIED] = "unspecified",
	[MCPX_ADDR_MULTICAST] = "multicast",
	[MCPX_ADDR_RESERVED] = "reserved",
	[MCPX_ADDR_UNSUPPORTED] = "not an IP address",
};
/* clang-format on */

const char *mcpx_addr_class_name(enum mcpx_addr_class c)
{
	if ((size_t)c >= sizeof(class_names) / sizeof(class_names[0]))
		return "unknown";
	return class_names[c];
}

static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;

	if (memcmp(a, b, full) != 0)
		return false;
	if (!rest)
		return true;
	return ((a[full] ^ b[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* The address as (family, bytes), IPv4-mapped IPv6 turned into IPv4. */
static int normalise(const struct sockaddr *sa, socklen_t len, uint8_t out[16])
{
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		memcpy(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return AF_INET;
	}
	if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const uint8_t *a =
		    ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;

		if (prefix_equal(a, v6_embedding[0].net, 96)) {
			memcpy(out, a + 12, 4);
			return AF_INET;
		}
		memcpy(out, a, 16);
		return AF_INET6;
	}
	return AF_UNSPEC;
}

static enum mcpx_addr_class classify_bytes(int family, const uint8_t *a)
{
	const struct range *t = family == AF_INET ? v4_ranges : v6_ranges;
	size_t n = family == AF_INET ? sizeof(v4_ranges) / sizeof(v4_ranges[0])
	                             : sizeof(v6_ranges) / sizeof(v6_ranges[0]);

	for (size_t i = 0; i < n; i++)
		if (prefix_equal(a, t[i].net, t[i].bits))
			return t[i].cls;
	if (family == AF_INET6) {
		/* :: and ::1 matched above; the rest of ::/96 embeds IPv4. */
		for (size_t i = 0; i < sizeof(v6_embedding) / sizeof(v6_embedding[0]); i++)
			if (prefix_equal(a, v6_embedding[i].net, v6_embedding[i].bits))
				return classify_bytes(AF_INET, a + 12);
	}
	return MCPX_ADDR_PUBLIC;
}

enum mcpx_addr_class mcpx_addr_classify(const struct sockaddr *sa, socklen_t len)
{
	uint8_t a[16];
	int family = normalise(sa, len, a);

	if (family == AF_UNSPEC)
		return MCPX_ADDR_UNSUPPORTED;
	return classify_bytes(family, a);
}

enum mcpx_addr_class mcpx_addr_check(const struct sockaddr *sa, socklen_t len,
                                     const struct mcpx_cidr *allow, size_t n)
{
	uint8_t a[16];
	int family = normalise(sa, len, a);
	enum mcpx_addr_class cls;

	if (family == AF_UNSPEC)
		return MCPX_ADDR_UNSUPPORTED;
	cls = classify_bytes(family, a);
	if (cls == MCPX_ADDR_PUBLIC)
		return cls;
	for (size_t i = 0; i < n; i++)
		if (allow[i].family == family && prefix_equal(a, allow[i].addr, allow[i].bits))
			return MCPX_ADDR_PUBLIC;
	return cls;
}

void mcpx_addr_text(const struct sockaddr *sa, socklen_t len, char *buf, size_t cap)
{
	uint8_t a[16];
	int family = normalise(sa, len, a);

	if (family == AF_UNSPEC || !inet_ntop(family, a, buf, (socklen_t)cap))
		snprintf(buf, cap, "(unknown)");
}

static int parse_bits(const char *s, unsigned max, unsigned *out)
{
	unsigned v = 0;

	if (!*s || strlen(s) > 3)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*s - '0');
	}
	if (v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int mcpx_cidr_parse(const char *s, struct mcpx_cidr *out, char *why, size_t whylen)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);

	memset(out, 0, sizeof(*out));
	if (alen == 0 || alen >= sizeof(addr)) {
		snprintf(why, whylen, "not an address or CIDR range");
		return -EINVAL;
	}
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, out->addr) == 1)
		out->family = AF_INET;
	else if (inet_pton(AF_INET6, addr, out->addr) == 1)
		out->family = AF_INET6;
	else {
		snprintf(why, whylen, "\"%s\" is not an IPv4 or IPv6 address", addr);
		return -EINVAL;
	}
	out->bits = out->family == AF_INET ? 32 : 128;
	if (slash && parse_bits(slash + 1, out->bits, &out->bits) < 0) {
		snprintf(why, whylen, "the prefix length must be 0..%u", out->bits);
		return -EINVAL;
	}
	/* 10.0.0.1/8 is more likely a typo than a range: refuse it. */
	{
		uint8_t masked[16];

		memcpy(masked, out->addr, 16);
		for (unsigned i = out->bits; i < 128; i++)
			masked[i / 8] &= (uint8_t) ~(0x80 >> (i % 8));
		if (memcmp(masked, out->addr, 16) != 0) {
			snprintf(why, whylen, "host bits are set beyond the /%u prefix", out->bits);
			return -EINVAL;
		}
	}
	/* A v4-mapped range is compared as IPv4, as addresses are. */
	if (out->family == AF_INET6 && out->bits >= 96 &&
	    prefix_equal(out->addr, v6_embedding[0].net, 96)) {
		memmove(out->addr, out->addr + 12, 4);
		memset(out->addr + 4, 0, 12);
		out->family = AF_INET;
		out->bits -= 96;
	}
	return 0;
}
