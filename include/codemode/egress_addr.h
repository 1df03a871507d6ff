/*
 * egress_addr.h - the egress broker's address decision: the class of an
 * address a request is about to connect to (the SSRF table), the policy's
 * allow_cidrs ranges that let a rule reach one anyway, and an address in
 * words for messages. Pure: no I/O, no state. egress_check.h includes it.
 */
#ifndef MCPX_EGRESS_ADDR_H
#define MCPX_EGRESS_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* ---- addresses ---------------------------------------------------------- */

/* Why an address is refused unless a rule's allow_cidrs contains it. */
enum mcpx_addr_class {
	MCPX_ADDR_PUBLIC = 0,  /* anything else: allowed */
	MCPX_ADDR_LOOPBACK,    /* 127.0.0.0/8, ::1 */
	MCPX_ADDR_PRIVATE,     /* RFC 1918: 10/8, 172.16/12, 192.168/16; fec0::/10 */
	MCPX_ADDR_LINK_LOCAL,  /* 169.254.0.0/16 (cloud metadata), fe80::/10 */
	MCPX_ADDR_CGNAT,       /* 100.64.0.0/10 */
	MCPX_ADDR_ULA,         /* fc00::/7 */
	MCPX_ADDR_UNSPECIFIED, /* 0.0.0.0/8, :: */
	MCPX_ADDR_MULTICAST,   /* 224.0.0.0/4, ff00::/8 */
	MCPX_ADDR_RESERVED,    /* 192.0.0.0/24, 198.18.0.0/15, 240.0.0.0/4, 2001:db8::/32 */
	MCPX_ADDR_UNSUPPORTED, /* not IPv4 or IPv6 */
};

/* "loopback", "private", "link-local", ... ("public" for MCPX_ADDR_PUBLIC). */
const char *mcpx_addr_class_name(enum mcpx_addr_class c);

/* One range of allow_cidrs. IPv4 ranges are kept as IPv4; an IPv4-mapped
 * IPv6 address is compared as the IPv4 address it carries. */
struct mcpx_cidr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	unsigned bits;
};

/* Parses "a.b.c.d/n", "x:y::z/n", or an address alone (/32, /128). Host bits
 * beyond the prefix must be zero. Returns 0 or -EINVAL with why set. */
int mcpx_cidr_parse(const char *s, struct mcpx_cidr *out, char *why, size_t whylen);

/* The class of the address curl is about to connect to. IPv6 addresses that
 * carry an IPv4 address (v4-mapped ::ffff:0:0/96, v4-compatible ::/96, the
 * NAT64 prefixes 64:ff9b::/96 and 64:ff9b:1::/48) are classified as that
 * IPv4 address, so 64:ff9b::a9fe:a9fe is the metadata address it reaches. */
enum mcpx_addr_class mcpx_addr_classify(const struct sockaddr *sa, socklen_t len);

/* The connect decision: MCPX_ADDR_PUBLIC when the address may be used, else
 * the class that refuses it. Addresses inside one of allow[0..n) are
 * allowed whatever their class. */
enum mcpx_addr_class mcpx_addr_check(const struct sockaddr *sa, socklen_t len,
                                     const struct mcpx_cidr *allow, size_t n);

/* Renders the address (without port) for messages; buf of 64 bytes. */
void mcpx_addr_text(const struct sockaddr *sa, socklen_t len, char *buf, size_t cap);

#endif
