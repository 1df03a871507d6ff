/*
 * resource.h - the interface between the protocol core and whoever serves
 * MCP resources (server/resources: resources/list, resources/read,
 * resources/templates/list).
 *
 * With a provider the core announces the `resources` capability and hands
 * it each list and read as a struct mcpx_call (tool.h): the provider
 * answers once, at once or later, with mcpx_call_finish (a
 * ListResourcesResult or a ReadResourceResult) or mcpx_call_error (a
 * JSON-RPC error, such as "Resource not found", -32002); the core does not
 * touch the call after handing it over; after cancel the provider must not
 * answer. mcpx_call_caller names
 * who asks: what a provider lists and reads is that caller's alone.
 */
#ifndef MCPX_RESOURCE_H
#define MCPX_RESOURCE_H

#include <cjson/cJSON.h>

#include "tool.h"

/* "Resource not found" (server/resources, "Error Handling"). */
#define MCPX_RPC_RESOURCE_NOT_FOUND (-32002)

struct mcpx_resource_provider {
	/* resources/list for call's caller; cursor NULL on the first page. */
	void (*list)(void *ctx, struct mcpx_call *call, const char *cursor);
	/* resources/read of uri (any string the client sent). */
	void (*read)(void *ctx, struct mcpx_call *call, const char *uri);
	/* resources/templates/list: the templates array (caller frees), or
	 * NULL when out of memory. Answered at once. */
	cJSON *(*templates)(void *ctx);
	/* The client cancelled or went away. */
	void (*cancel)(void *ctx, struct mcpx_call *call);
	void *ctx;
};

/* Ends call with a JSON-RPC error instead of a result. */
void mcpx_call_error(struct mcpx_call *call, int code, const char *msg);

#endif
