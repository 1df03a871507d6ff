/*
 * upstream_catalog.c - the tools of the upstreams a caller may reach, from
 * their kept lists: as `<upstream>.<tool>` entries (the MCP Tool form for
 * the gateway, or mcpx.tools' form for a run) and as the one-line-per-server
 * summary exec's description names.
 *
 * It lists only what the connections hold; it connects nothing.
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "upstream_internal.h"

static cJSON *entry_of(const struct upstream *up, const cJSON *t, bool mcp_form)
{
	const char *name = cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring;
	const cJSON *desc = cJSON_GetObjectItemCaseSensitive(t, "description");
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(t, "inputSchema");
	const cJSON *outs = cJSON_GetObjectItemCaseSensitive(t, "outputSchema");
	char full[MCPX_UPSTREAM_NAME_MAX + 131];
	cJSON *e;

	snprintf(full, sizeof(full), "%s.%s", up->name, name);
	if (mcp_form) {
		/* The upstream's Tool as it is, renamed. */
		e = cJSON_Duplicate(t, true);
		if (e)
			cJSON_ReplaceItemInObjectCaseSensitive(e, "name", cJSON_CreateString(full));
		return e;
	}
	e = cJSON_CreateObject();
	if (!e)
		return NULL;
	cJSON_AddStringToObject(e, "name", full);
	cJSON_AddStringToObject(e, "description", cJSON_IsString(desc) ? desc->valuestring : "");
	cJSON_AddItemToObject(e, "input_schema",
	                      in ? cJSON_Duplicate(in, true) : cJSON_CreateObject());
	cJSON_AddItemToObject(e, "output_schema",
	                      outs ? cJSON_Duplicate(outs, true) : cJSON_CreateNull());
	return e;
}

cJSON *mcpx_upstreams_tools(struct mcpx_upstreams *u, const struct mcpx_policy *policy,
                            const struct mcpx_egress_grant *grant, bool mcp_form)
{
	cJSON *list = cJSON_CreateArray();

	for (size_t i = 0; list && policy && i < policy->n_upstreams; i++) {
		const struct mcpx_upstream_conf *conf = &policy->upstreams[i];
		const struct upstream *up = mcpx_up_find(u, conf->name);
		const cJSON *t;

		if (grant ? !mcpx_egress_grant_has_upstream(grant, conf) : !conf->expose)
			continue;
		if (!up || !up->tools || strcmp(up->conf->url, conf->url) != 0)
			continue;
		cJSON_ArrayForEach(t, up->tools)
		{
			const char *name = cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring;
			cJSON *e;

			if (!mcpx_upstream_tool_allowed(conf, name))
				continue;
			e = entry_of(up, t, mcp_form);
			if (e)
				cJSON_AddItemToArray(list, e);
		}
	}
	return list;
}

char *mcpx_upstreams_summary(struct mcpx_upstreams *u, const struct mcpx_policy *policy,
                             const struct mcpx_egress_grant *grant)
{
	struct mcpx_buf b;

	mcpx_buf_init(&b, 64u * 1024u);
	for (size_t i = 0; policy && i < policy->n_upstreams; i++) {
		const struct mcpx_upstream_conf *conf = &policy->upstreams[i];
		const struct upstream *up = mcpx_up_find(u, conf->name);
		const cJSON *tools = up ? up->tools : NULL, *t;
		size_t n = 0;

		if (grant && !mcpx_egress_grant_has_upstream(grant, conf))
			continue;
		cJSON_ArrayForEach(t, tools)
		{
			n += mcpx_upstream_tool_allowed(
			    conf, cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring);
		}
		if (!up || !up->tools)
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
