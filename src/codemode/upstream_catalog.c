/*
 * upstream_catalog.c - an upstream's tool list, kept compactly within its
 * caps, and the tools of the upstreams a caller may reach: as MCP Tool
 * objects named `<upstream>.<tool>` for the gateway, as mcpx.tools' entries
 * for a run, and as the one-line-per-server summary exec's description
 * names.
 *
 * A hostile upstream must not make the server big or slow (issue 34 item
 * 3): a list is kept up to the upstream's max_tools tools and
 * max_tools_bytes bytes of their JSON text (the rest is left out, and the
 * connection says so once), and it is kept as text, each tool's members
 * printed once when the list arrives (json.h: numbers exact), not as cJSON
 * trees, which cost ten times their text. Answering mcpx.tools() then
 * copies that text; the gateway's list wraps each member as a raw JSON
 * value. Neither serialises the catalogue again.
 *
 * It lists only what the connections hold; it connects nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "upstream_internal.h"

/* Bookkeeping per kept tool and member, counted with the text. */
#define TOOL_OVERHEAD 64u

/* ---- keeping a list ------------------------------------------------------ */

struct up_catalog *mcpx_up_catalog_new(void)
{
	return calloc(1, sizeof(struct up_catalog));
}

static void tool_free(struct up_tool *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->m[i].key);
		free(t->m[i].value);
	}
	free(t->m);
	free(t->name);
}

void mcpx_up_catalog_free(struct up_catalog *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		tool_free(&c->tools[i]);
	free(c->tools);
	free(c);
}

/* A tool's members but its name, as text; its size in *bytes. */
static int tool_text(struct up_tool *t, const cJSON *tool, size_t *bytes)
{
	const cJSON *m;
	size_t n = 0;

	cJSON_ArrayForEach(m, tool) n++;
	if (n && !(t->m = calloc(n, sizeof(*t->m))))
		return -ENOMEM;
	*bytes = TOOL_OVERHEAD + strlen(t->name);
	cJSON_ArrayForEach(m, tool)
	{
		struct up_member *e = &t->m[t->n];

		if (strcmp(m->string, "name") == 0)
			continue;
		if (!(e->key = strdup(m->string)) || !(e->value = mcpx_json_print_exact(m))) {
			free(e->key);
			return -ENOMEM;
		}
		t->n++;
		*bytes += strlen(e->key) + strlen(e->value) + TOOL_OVERHEAD;
	}
	return 0;
}

int mcpx_up_catalog_add(struct up_catalog *c, const cJSON *tool,
                        const struct mcpx_upstream_conf *conf)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(tool, "name");
	struct up_tool t = {0};
	size_t bytes = 0;

	/* A tool without a name, or with one that cannot be called by
	 * "<upstream>.<tool>", is left out. */
	if (!cJSON_IsObject(tool) || !cJSON_IsString(name) || !name->valuestring[0] ||
	    strlen(name->valuestring) > 128)
		return 1;
	if (c->truncated || c->n >= conf->max_tools) {
		c->truncated = true;
		return -E2BIG;
	}
	if (!(t.name = strdup(name->valuestring)) || tool_text(&t, tool, &bytes) < 0) {
		tool_free(&t);
		return -ENOMEM;
	}
	if (c->bytes + bytes > conf->max_tools_bytes) {
		tool_free(&t);
		c->truncated = true;
		return -E2BIG;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct up_tool *more = realloc(c->tools, cap * sizeof(*more));

		if (!more) {
			tool_free(&t);
			return -ENOMEM;
		}
		c->tools = more;
		c->cap = cap;
	}
	c->tools[c->n++] = t;
	c->bytes += bytes;
	return 0;
}

bool mcpx_up_catalog_has(const struct up_catalog *c, const char *name)
{
	for (size_t i = 0; c && i < c->n; i++)
		if (strcmp(c->tools[i].name, name) == 0)
			return true;
	return false;
}

static const char *member(const struct up_tool *t, const char *key)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->m[i].key, key) == 0)
			return t->m[i].value;
	return NULL;
}

/* ---- listing ------------------------------------------------------------- */

/* The upstream of conf whose list callers of this policy version see (the
 * connection must be to conf's URL). */
static const struct upstream *listed(struct mcpx_upstreams *u,
                                     const struct mcpx_upstream_conf *conf)
{
	const struct upstream *up = mcpx_up_find(u, conf->name);

	return up && up->tools && strcmp(up->conf->url, conf->url) == 0 ? up : NULL;
}

/* The upstream's Tool as it is, renamed: its members as raw JSON. */
static cJSON *gateway_entry(const struct upstream *up, const struct up_tool *t)
{
	char full[MCPX_UPSTREAM_NAME_MAX + 131];
	cJSON *e = cJSON_CreateObject();

	snprintf(full, sizeof(full), "%s.%s", up->name, t->name);
	if (!e || !cJSON_AddStringToObject(e, "name", full))
		goto fail;
	for (size_t i = 0; i < t->n; i++) {
		cJSON *raw = cJSON_CreateRaw(t->m[i].value);

		if (!raw || !cJSON_AddItemToObject(e, t->m[i].key, raw)) {
			cJSON_Delete(raw);
			goto fail;
		}
	}
	return e;
fail:
	cJSON_Delete(e);
	return NULL;
}

cJSON *mcpx_upstreams_gateway_tools(struct mcpx_upstreams *u, const struct mcpx_policy *policy)
{
	cJSON *list = cJSON_CreateArray();

	for (size_t i = 0; list && policy && i < policy->n_upstreams; i++) {
		const struct mcpx_upstream_conf *conf = &policy->upstreams[i];
		const struct upstream *up = conf->expose ? listed(u, conf) : NULL;

		for (size_t k = 0; up && k < up->tools->n; k++) {
			const struct up_tool *t = &up->tools->tools[k];
			cJSON *e;

			if (!mcpx_upstream_tool_allowed(conf, t->name))
				continue;
			if (!(e = gateway_entry(up, t)) || !cJSON_AddItemToArray(list, e)) {
				cJSON_Delete(e);
				cJSON_Delete(list);
				return NULL;
			}
		}
	}
	return list;
}

/* {"name": "<upstream>.<tool>", "description", "input_schema",
 * "output_schema"}, from the kept text. */
static int run_entry(const struct upstream *up, const struct up_tool *t, struct mcpx_buf *out)
{
	const char *desc = member(t, "description"), *in = member(t, "inputSchema"),
	           *outs = member(t, "outputSchema");
	char full[MCPX_UPSTREAM_NAME_MAX + 131];
	int rc;

	snprintf(full, sizeof(full), "%s.%s", up->name, t->name);
	if ((rc = mcpx_buf_adds(out, "{\"name\":")) < 0 ||
	    (rc = mcpx_json_print_string(full, out)) < 0 ||
	    (rc = mcpx_buf_adds(out, ",\"description\":")) < 0 ||
	    (rc = mcpx_buf_adds(out, desc && desc[0] == '"' ? desc : "\"\"")) < 0 ||
	    (rc = mcpx_buf_adds(out, ",\"input_schema\":")) < 0 ||
	    (rc = mcpx_buf_adds(out, in ? in : "{}")) < 0 ||
	    (rc = mcpx_buf_adds(out, ",\"output_schema\":")) < 0 ||
	    (rc = mcpx_buf_adds(out, outs ? outs : "null")) < 0)
		return rc;
	return mcpx_buf_adds(out, "}");
}

int mcpx_upstreams_run_tools(struct mcpx_upstreams *u, const struct mcpx_policy *policy,
                             const struct mcpx_egress_grant *grant, struct mcpx_buf *out,
                             bool *first)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && policy && i < policy->n_upstreams; i++) {
		const struct mcpx_upstream_conf *conf = &policy->upstreams[i];
		const struct upstream *up =
		    mcpx_egress_grant_has_upstream(grant, conf) ? listed(u, conf) : NULL;

		for (size_t k = 0; rc == 0 && up && k < up->tools->n; k++) {
			if (!mcpx_upstream_tool_allowed(conf, up->tools->tools[k].name))
				continue;
			if (!*first)
				rc = mcpx_buf_add(out, ",", 1);
			*first = false;
			if (rc == 0)
				rc = run_entry(up, &up->tools->tools[k], out);
		}
	}
	return rc;
}

char *mcpx_upstreams_summary(struct mcpx_upstreams *u, const struct mcpx_policy *policy,
                             const struct mcpx_egress_grant *grant)
{
	struct mcpx_buf b;

	mcpx_buf_init(&b, 64u * 1024u);
	for (size_t i = 0; policy && i < policy->n_upstreams; i++) {
		const struct mcpx_upstream_conf *conf = &policy->upstreams[i];
		const struct upstream *up = mcpx_up_find(u, conf->name);
		const struct up_catalog *tools = up ? up->tools : NULL;
		size_t n = 0;

		if (grant && !mcpx_egress_grant_has_upstream(grant, conf))
			continue;
		for (size_t k = 0; tools && k < tools->n; k++)
			n += mcpx_upstream_tool_allowed(conf, tools->tools[k].name);
		if (!tools)
			mcpx_buf_addf(&b, "- %s: not connected yet\n", conf->name);
		else
			mcpx_buf_addf(&b, "- %s: %zu tools%s%s%s\n", conf->name, n,
			              up->server_name[0] ? " (server " : "", up->server_name,
			              up->server_name[0] ? ")" : "");
	}
	if (b.len == 0) {
		mcpx_buf_free(&b);
		return NULL;
	}
	return mcpx_buf_take(&b, NULL);
}
