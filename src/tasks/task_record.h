/*
 * task_record.h - one MCP task's state as the store keeps it.
 *
 * A task is a tools/call detached from the request that started it
 * (tasks.h). What every replica needs to answer tasks/get for it lives in
 * this small record: its id and owner, the tool, its status and status
 * message, its timestamps, ttl and poll interval, which replica runs it,
 * and, once it is done, how its call ended (a result, whether that result
 * is a tool error, or the JSON-RPC error of a failed task) and how many
 * bytes that outcome takes in the store. The outcome itself is a separate
 * blob (task_store.h).
 *
 * The status is the protocol-neutral one the store keeps; the two protocol
 * generations show it differently (task_wire.h): a completed call whose
 * result has isError is "failed" to a 2025-11-25 client and "completed"
 * to a 2026-07-28 one. The record's JSON is data the server reads back from
 * a store other processes share: parsing checks every field's type and
 * bound and refuses what does not fit, and nothing in it is ever trusted to
 * name a file, a command or another caller's key.
 */
#ifndef MCPX_TASK_RECORD_H
#define MCPX_TASK_RECORD_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "caller.h"

/* A task id: 128 random bits as 32 lowercase hex digits. Unguessable on
 * purpose: where no caller is authenticated (a loopback listener without a
 * token) the id is the only thing that guards a task. */
#define MCPX_TASK_ID_LEN 32

enum mcpx_task_status {
	MCPX_TASK_WORKING,
	MCPX_TASK_COMPLETED, /* the call returned a CallToolResult (is_error says which kind) */
	MCPX_TASK_FAILED,    /* the call ended in a JSON-RPC error, or the task could not go on */
	MCPX_TASK_CANCELLED,
};

struct mcpx_task_rec {
	char id[MCPX_TASK_ID_LEN + 1];
	char owner[MCPX_CALLER_MAX]; /* the caller that created it (caller.h) */
	char tool[129];              /* the tool called */
	enum mcpx_task_status status;
	bool is_error;      /* completed: the result's isError */
	int error_code;     /* failed: the JSON-RPC error code */
	char message[512];  /* statusMessage; "" for none */
	int64_t created_ms; /* Unix epoch milliseconds */
	int64_t updated_ms;
	int64_t ttl_ms;        /* from created_ms; the store drops the task after it */
	uint32_t poll_ms;      /* suggested interval between tasks/get */
	char replica[64];      /* the replica that runs (or ran) it */
	char session[160];     /* the session key that created it, for status notifications */
	uint64_t result_bytes; /* the stored outcome's size, once done */
	/* The store's version of the record this was read as or written to
	 * (task_store.h); not part of its JSON. 0: not stored yet. */
	uint64_t version;
};

/* True for completed, failed and cancelled: no status follows them. */
bool mcpx_task_terminal(enum mcpx_task_status s);
/* "working", "completed", "failed", "cancelled". */
const char *mcpx_task_status_name(enum mcpx_task_status s);

/* A fresh random id into out (MCPX_TASK_ID_LEN + 1 bytes). 0 or -EIO. */
int mcpx_task_id_new(char *out);
/* True when s has the shape of an id this server makes (so a client's
 * string is never used as a store key before it passed this check). */
bool mcpx_task_id_valid(const char *s);

/* Wall clock, Unix epoch milliseconds. */
int64_t mcpx_task_now_ms(void);
/* ms as ISO 8601 UTC with milliseconds ("2025-11-25T10:30:00.000Z") into
 * out (at least 25 bytes). */
void mcpx_task_iso8601(int64_t ms, char *out, size_t cap);

/* Sets the status message, truncated at a UTF-8 character boundary. */
void mcpx_task_set_message(struct mcpx_task_rec *r, const char *msg);

/* The record as a JSON object (caller frees); NULL when out of memory. */
cJSON *mcpx_task_rec_json(const struct mcpx_task_rec *r);
/* Reads a record back. Returns 0, or -EINVAL with the reason in *why (a
 * static string) when a field is missing, of the wrong type or out of
 * bounds. */
int mcpx_task_rec_parse(const cJSON *obj, struct mcpx_task_rec *out, const char **why);

#endif
