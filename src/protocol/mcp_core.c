/*
 * mcp_core.c - what every part of the MCP core reads: the protocol versions
 * this server speaks (and which are the stateless 2026-07-28 generation),
 * the log levels by name, a member of a request's params, and the
 * capabilities the server declares. With mcp_core.h (the core's state: a
 * call, a listener, a batch, the request being answered) it is the bottom
 * of the core's files.
 *
 * It answers nothing and keeps no state.
 */
#include <errno.h>
#include <string.h>

#include "mcp_core.h"

/* Every version this server speaks, newest first, as listed in
 * server/discover's supportedVersions and UnsupportedProtocolVersionError's
 * data.supported (2026-07-28 basic/versioning). */
static const char *const all_versions[] = {
    MCPX_PV_2026_07_28, MCPX_PV_2025_11_25, MCPX_PV_2025_06_18,
    MCPX_PV_2025_03_26, MCPX_PV_2024_11_05,
};
#define NVERSIONS (sizeof(all_versions) / sizeof(all_versions[0]))

static const char *const level_names[] = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
};

bool mcpx_version_supported(const char *v)
{
	if (!v)
		return false;
	for (size_t i = 0; i < NVERSIONS; i++)
		if (strcmp(v, all_versions[i]) == 0)
			return true;
	return false;
}

size_t mcpx_versions(const char *const **list)
{
	*list = all_versions;
	return NVERSIONS;
}

/* True for "YYYY-MM-DD"; protocol versions are dates, which is what makes
 * "2026-07-28 and later" a string comparison. */
static bool is_date(const char *v)
{
	if (strlen(v) != 10 || v[4] != '-' || v[7] != '-')
		return false;
	for (int i = 0; i < 10; i++)
		if (i != 4 && i != 7 && (v[i] < '0' || v[i] > '9'))
			return false;
	return true;
}

bool mcpx_version_stateless(const char *v)
{
	return v && is_date(v) && strcmp(v, MCPX_PV_2026_07_28) >= 0;
}

/* Versions negotiated with initialize. */
bool mcpx_mcp_version_stateful(const char *v)
{
	return mcpx_version_supported(v) && !mcpx_version_stateless(v);
}

const char *mcpx_mcp_level_name(enum mcpx_level l)
{
	return level_names[l];
}

int mcpx_mcp_parse_level(const cJSON *item, enum mcpx_level *out)
{
	if (!cJSON_IsString(item))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(item->valuestring, level_names[i]) == 0) {
			*out = (enum mcpx_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

const cJSON *mcpx_mcp_member(const cJSON *obj, const char *name)
{
	return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, name) : NULL;
}

cJSON *mcpx_mcp_capabilities(const struct mcpx_core *core)
{
	/* listChanged: with a policy file the tools (its functions, exec's
	 * description) change when it does, and listeners are told; without
	 * one the list never changes. logging is declared because tools/call
	 * relays queue and start events as notifications/message ("Servers
	 * that emit log message notifications MUST declare the logging
	 * capability"). */
	cJSON *caps = cJSON_CreateObject();
	cJSON *tools = cJSON_AddObjectToObject(caps, "tools");

	if (!tools || !cJSON_AddBoolToObject(tools, "listChanged", core->tools_list_changed) ||
	    !cJSON_AddObjectToObject(caps, "logging")) {
		cJSON_Delete(caps);
		return NULL;
	}
	/* resources: a caller's workspaces and their files (resource.h); no
	 * subscriptions and no list_changed notifications are offered. */
	if (core->resources.list && !cJSON_AddObjectToObject(caps, "resources")) {
		cJSON_Delete(caps);
		return NULL;
	}
	return caps;
}

bool mcpx_mcp_tasks_extension(const struct mcpx_core *core, cJSON *caps)
{
	cJSON *ext;

	/* SEP-2663: "Servers advertise the extension in server/discover". */
	if (!core->tasks.call || !core->tasks.extension(core->tasks.ctx))
		return true;
	ext = cJSON_GetObjectItemCaseSensitive(caps, "extensions");
	if (!ext)
		ext = cJSON_AddObjectToObject(caps, "extensions");
	return ext && cJSON_AddObjectToObject(ext, "io.modelcontextprotocol/tasks");
}

const char *mcpx_task_support_name(enum mcpx_task_support s)
{
	return s == MCPX_TASK_SUPPORT_REQUIRED   ? "required"
	       : s == MCPX_TASK_SUPPORT_OPTIONAL ? "optional"
	                                         : "forbidden";
}

enum mcpx_task_support mcpx_core_tool_task_support(const struct mcpx_tool *tool, const char *name)
{
	return tool && tool->task_support ? tool->task_support(tool, name)
	                                  : MCPX_TASK_SUPPORT_FORBIDDEN;
}
