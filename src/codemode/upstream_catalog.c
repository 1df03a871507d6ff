/*
 * upstream_catalog.c - the tools of the upstreams a caller may reach, from
 * their kept lists (upstream_list.c): as MCP Tool objects named
 * `<upstream>.<tool>` for the gateway, as mcpx.tools' entries for a run,
 * and as the one-line-per-server summary exec's description names.
 *
 * A hostile upstream must not make the server slow (issue 34 item 3): the
 * lists are kept as text, so answering mcpx.tools() copies that text, and
 * the gateway's list wraps each member as a raw JSON value; neither
 * serialises the catalogue again.
 *
 * It lists only what the connections hold; it connects nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "upstream_internal.h"

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

char *mcpx_upstreams_tool_member(struct mcpx_upstreams *u, const struct mcpx_policy *policy,
                                 const char *name, const char *key)
{
	const char *tool;
	const struct mcpx_upstream_conf *conf = mcpx_upstream_of(policy, name, &tool);
	const struct upstream *up = conf && conf->expose ? listed(u, conf) : NULL;

	if (!up || !mcpx_upstream_tool_allowed(conf, tool))
		return NULL;
	for (size_t k = 0; k < up->tools->n; k++) {
		const struct up_tool *t = &up->tools->tools[k];
		const char *v;

		if (strcmp(t->name, tool) == 0)
			return (v = member(t, key)) ? strdup(v) : NULL;
	}
	return NULL;
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
