/*
 * store_spec.c - MCP_EXEC_WORKSPACES parsed and printed (store_spec.h).
 *
 * A hand-written parser for a small grammar: the redis:// form takes a
 * user, a host (a name, an IPv4 address or a bracketed IPv6 one), a port
 * and a database number, and nothing else, so a password, a query string or
 * a TLS scheme is refused by name rather than ignored. Messages say which
 * part is wrong without quoting the value.
 */
#include "store_spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* An absolute path without empty, "." or ".." parts and without control
 * characters, short enough for the store's paths. */
static int parse_dir(const char *p, struct mcpx_store_spec *spec, struct mcpx_err *err)
{
	size_t n = strlen(p);

	if (p[0] != '/')
		return mcpx_err_set(err, EINVAL, "a dir: store needs an absolute path");
	if (n > MCPX_STORE_DIR_MAX)
		return mcpx_err_set(err, EINVAL, "the store directory is longer than %d bytes",
		                    MCPX_STORE_DIR_MAX);
	for (const char *s = p; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return mcpx_err_set(err, EINVAL,
			                    "the store directory has a control character");
	for (const char *s = p + 1; *s;) {
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.') ||
		    (len == 0 && e))
			return mcpx_err_set(err, EINVAL,
			                    "the store directory must not have \".\", \"..\" or "
			                    "empty parts");
		s += len + (e ? 1 : 0);
	}
	memcpy(spec->dir, p, n + 1);
	/* A trailing slash is dropped (the path names the same directory). */
	while (n > 1 && spec->dir[n - 1] == '/')
		spec->dir[--n] = '\0';
	spec->type = MCPX_STORE_DIR;
	return 0;
}

static int parse_number(const char *s, size_t len, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (len == 0 || len > 10)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* [user@] */
static int parse_user(const char **pp, struct mcpx_store_spec *spec, struct mcpx_err *err)
{
	const char *p = *pp, *at = strchr(p, '@');
	const char *end = p + strcspn(p, "/");

	if (!at || at > end)
		return 0;
	if (memchr(p, ':', (size_t)(at - p)))
		return mcpx_err_set(err, EINVAL,
		                    "the redis:// URL must not hold a password: put it in the file "
		                    "MCP_EXEC_WORKSPACES_PASSWORD_FILE names");
	if (at == p || (size_t)(at - p) >= sizeof(spec->user))
		return mcpx_err_set(err, EINVAL, "the redis:// user must be 1 to %zu characters",
		                    sizeof(spec->user) - 1);
	for (const char *s = p; s < at; s++)
		if (!is_alnum(*s) && *s != '_' && *s != '-' && *s != '.')
			return mcpx_err_set(err, EINVAL,
			                    "the redis:// user may hold only letters, digits, '_', "
			                    "'-' and '.'");
	memcpy(spec->user, p, (size_t)(at - p));
	spec->user[at - p] = '\0';
	*pp = at + 1;
	return 0;
}

/* host, [v6] */
static int parse_host(const char **pp, struct mcpx_store_spec *spec, struct mcpx_err *err)
{
	const char *p = *pp, *end;
	size_t len;

	if (*p == '[') {
		end = strchr(p, ']');
		if (!end)
			return mcpx_err_set(err, EINVAL, "the redis:// IPv6 address lacks its ']'");
		p++;
		for (const char *s = p; s < end; s++)
			if (!is_alnum(*s) && *s != ':' && *s != '.')
				return mcpx_err_set(err, EINVAL,
				                    "the redis:// IPv6 address is not valid");
		len = (size_t)(end - p);
		*pp = end + 1;
	} else {
		end = p + strcspn(p, ":/");
		for (const char *s = p; s < end; s++)
			if (!is_alnum(*s) && *s != '-' && *s != '.')
				return mcpx_err_set(
				    err, EINVAL,
				    "the redis:// host may hold only letters, digits, "
				    "'-' and '.'");
		len = (size_t)(end - p);
		*pp = end;
	}
	if (len == 0 || len > 253)
		return mcpx_err_set(err, EINVAL,
		                    "the redis:// URL needs a host (1 to 253 characters)");
	memcpy(spec->host, p, len);
	spec->host[len] = '\0';
	return 0;
}

static int parse_redis(const char *p, struct mcpx_store_spec *spec, struct mcpx_err *err)
{
	unsigned long v;
	int rc;

	spec->user[0] = '\0';
	spec->port = 6379;
	spec->db = 0;
	if (strpbrk(p, "?#"))
		return mcpx_err_set(err, EINVAL, "the redis:// URL takes no query or fragment");
	if ((rc = parse_user(&p, spec, err)) < 0 || (rc = parse_host(&p, spec, err)) < 0)
		return rc;
	if (*p == ':') {
		size_t len = strcspn(++p, "/");

		if (parse_number(p, len, 65535, &v) < 0 || v == 0)
			return mcpx_err_set(err, EINVAL, "the redis:// port must be 1 to 65535");
		spec->port = (int)v;
		p += len;
	}
	if (*p == '/') {
		p++;
		if (*p && (parse_number(p, strlen(p), 1000000, &v) < 0))
			return mcpx_err_set(
			    err, EINVAL, "the redis:// database must be a number (0 to 1000000)");
		spec->db = *p ? (unsigned)v : 0;
	} else if (*p) {
		return mcpx_err_set(err, EINVAL, "the redis:// URL has something after its port");
	}
	spec->type = MCPX_STORE_REDIS;
	return 0;
}

int mcpx_store_spec_parse(const char *value, struct mcpx_store_spec *spec, struct mcpx_err *err)
{
	if (strcmp(value, "off") == 0) {
		spec->type = MCPX_STORE_OFF;
		return 0;
	}
	if (strncmp(value, "dir:", 4) == 0)
		return parse_dir(value + 4, spec, err);
	if (strncmp(value, "redis://", 8) == 0)
		return parse_redis(value + 8, spec, err);
	if (strncmp(value, "rediss://", 9) == 0)
		return mcpx_err_set(
		    err, EINVAL,
		    "rediss:// (TLS) is not supported: Debian's hiredis 0.14 has no "
		    "TLS; reach Redis over a private network or a TLS sidecar");
	return mcpx_err_set(err, EINVAL,
	                    "the value must be \"off\", \"dir:<absolute path>\" or "
	                    "\"redis://[user@]host:port[/db]\"");
}

int mcpx_store_spec_default(struct mcpx_store_spec *spec, struct mcpx_err *err)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char path[4096];
	int n;

	if (geteuid() == 0)
		n = snprintf(path, sizeof(path), "dir:/var/lib/mcp-exec/workspaces");
	else if (xdg && xdg[0] == '/')
		n = snprintf(path, sizeof(path), "dir:%s/mcp-exec/workspaces", xdg);
	else if (home && home[0] == '/')
		n = snprintf(path, sizeof(path), "dir:%s/.local/state/mcp-exec/workspaces", home);
	else
		return mcpx_err_set(err, ENOENT,
		                    "no state directory for the default workspace store (neither "
		                    "XDG_STATE_HOME nor HOME is an absolute path): set "
		                    "MCP_EXEC_WORKSPACES");
	if (n < 0 || (size_t)n >= sizeof(path) || parse_dir(path + 4, spec, err) < 0)
		return mcpx_err_set(
		    err, EINVAL,
		    "the default workspace store's path is not usable (too long, or "
		    "\".\"/\"..\" parts in XDG_STATE_HOME or HOME): set "
		    "MCP_EXEC_WORKSPACES");
	spec->is_default = true;
	return 0;
}

void mcpx_store_spec_format(const struct mcpx_store_spec *spec, char *out, size_t n)
{
	bool v6 = strchr(spec->host, ':') != NULL;

	switch (spec->type) {
	case MCPX_STORE_DIR:
		snprintf(out, n, "dir:%s", spec->dir);
		break;
	case MCPX_STORE_REDIS:
		snprintf(out, n, "redis://%s%s%s%s%s:%d/%u%s%s%s", spec->user,
		         spec->user[0] ? "@" : "", v6 ? "[" : "", spec->host, v6 ? "]" : "",
		         spec->port, spec->db, spec->password_file[0] ? " (password from " : "",
		         spec->password_file, spec->password_file[0] ? ")" : "");
		break;
	default:
		snprintf(out, n, "off");
	}
}
