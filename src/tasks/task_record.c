/*
 * task_record.c - a task's record: ids, timestamps, and its JSON in the
 * store.
 *
 * The JSON uses short keys and holds nothing but the record's fields; the
 * parser is strict (types, lengths, ranges, the id's shape, UTF-8), because
 * the store is shared with other processes and a record is read back by
 * replicas that did not write it. It does not talk to the store, decide
 * status transitions or build protocol messages (task_wire.h).
 */
#include "task_record.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "jsonrpc.h"
#include "utf8.h"

/* The longest ttl a record may carry: far beyond MCP_EXEC_TASK_TTL_MAX_S's
 * bound, small enough that created_ms + ttl_ms never overflows. */
#define TTL_MS_MAX ((int64_t)10 * 365 * 24 * 3600 * 1000)

static const char *const status_names[] = {"working", "completed", "failed", "cancelled"};

bool mcpx_task_terminal(enum mcpx_task_status s)
{
	return s != MCPX_TASK_WORKING;
}

const char *mcpx_task_status_name(enum mcpx_task_status s)
{
	return (unsigned)s < sizeof(status_names) / sizeof(status_names[0]) ? status_names[s]
	                                                                    : "unknown";
}

int mcpx_task_id_new(char *out)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[MCPX_TASK_ID_LEN / 2];

	if (mcpx_random(raw, sizeof(raw)) < 0)
		return -EIO;
	for (size_t i = 0; i < sizeof(raw); i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[MCPX_TASK_ID_LEN] = '\0';
	mcpx_wipe(raw, sizeof(raw));
	return 0;
}

bool mcpx_task_id_valid(const char *s)
{
	if (!s)
		return false;
	for (size_t i = 0; i < MCPX_TASK_ID_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false; /* also stops at a short string's NUL */
	return s[MCPX_TASK_ID_LEN] == '\0';
}

int64_t mcpx_task_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void mcpx_task_iso8601(int64_t ms, char *out, size_t cap)
{
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;

	if (ms < 0 || !gmtime_r(&sec, &tm)) {
		snprintf(out, cap, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

void mcpx_task_set_message(struct mcpx_task_rec *r, const char *msg)
{
	mcpx_utf8_copy_trunc(r->message, sizeof(r->message), msg ? msg : "");
}

cJSON *mcpx_task_rec_json(const struct mcpx_task_rec *r)
{
	cJSON *o = cJSON_CreateObject();

	if (!cJSON_AddNumberToObject(o, "v", 1) || !cJSON_AddStringToObject(o, "id", r->id) ||
	    !cJSON_AddStringToObject(o, "owner", r->owner) ||
	    !cJSON_AddStringToObject(o, "tool", r->tool) ||
	    !cJSON_AddStringToObject(o, "status", mcpx_task_status_name(r->status)) ||
	    !cJSON_AddBoolToObject(o, "is_error", r->is_error) ||
	    !cJSON_AddNumberToObject(o, "error_code", r->error_code) ||
	    !cJSON_AddStringToObject(o, "message", r->message) ||
	    !cJSON_AddNumberToObject(o, "created_ms", (double)r->created_ms) ||
	    !cJSON_AddNumberToObject(o, "updated_ms", (double)r->updated_ms) ||
	    !cJSON_AddNumberToObject(o, "ttl_ms", (double)r->ttl_ms) ||
	    !cJSON_AddNumberToObject(o, "poll_ms", r->poll_ms) ||
	    !cJSON_AddStringToObject(o, "replica", r->replica) ||
	    !cJSON_AddStringToObject(o, "session", r->session) ||
	    !cJSON_AddNumberToObject(o, "result_bytes", (double)r->result_bytes)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* A string member that fits cap (NUL included) and is valid UTF-8 without
 * a NUL. */
static int get_str(const cJSON *obj, const char *key, char *out, size_t cap, bool nonempty)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	size_t len;

	if (!cJSON_IsString(v) || mcpx_json_has_nul(v))
		return -EINVAL;
	len = strlen(v->valuestring);
	if (len >= cap || (nonempty && len == 0) || !mcpx_utf8_valid(v->valuestring, len))
		return -EINVAL;
	memcpy(out, v->valuestring, len + 1);
	return 0;
}

/* An integral number member in [lo, hi]. Doubles hold every integer up to
 * 2^53 exactly, which covers every bound used here. */
static int get_int(const cJSON *obj, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsNumber(v) || v->valuedouble < (double)lo || v->valuedouble > (double)hi ||
	    v->valuedouble != (double)(int64_t)v->valuedouble)
		return -EINVAL;
	*out = (int64_t)v->valuedouble;
	return 0;
}

static int get_status(const cJSON *obj, enum mcpx_task_status *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "status");

	if (!cJSON_IsString(v))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++) {
		if (strcmp(v->valuestring, status_names[i]) == 0) {
			*out = (enum mcpx_task_status)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* The strings of a record. */
static int parse_strings(const cJSON *obj, struct mcpx_task_rec *r, const char **why)
{
	if (get_str(obj, "id", r->id, sizeof(r->id), true) < 0 || !mcpx_task_id_valid(r->id)) {
		*why = "id";
		return -EINVAL;
	}
	if (get_str(obj, "owner", r->owner, sizeof(r->owner), true) < 0) {
		*why = "owner";
		return -EINVAL;
	}
	if (get_str(obj, "tool", r->tool, sizeof(r->tool), true) < 0) {
		*why = "tool";
		return -EINVAL;
	}
	if (get_str(obj, "message", r->message, sizeof(r->message), false) < 0) {
		*why = "message";
		return -EINVAL;
	}
	if (get_str(obj, "replica", r->replica, sizeof(r->replica), false) < 0 ||
	    get_str(obj, "session", r->session, sizeof(r->session), false) < 0) {
		*why = "replica or session";
		return -EINVAL;
	}
	return 0;
}

/* The numbers of a record. */
static int parse_numbers(const cJSON *obj, struct mcpx_task_rec *r, const char **why)
{
	int64_t v, created, updated, ttl, poll, bytes;

	if (get_int(obj, "v", 1, 1, &v) < 0) {
		*why = "version";
		return -EINVAL;
	}
	if (get_int(obj, "created_ms", 0, INT64_C(1) << 50, &created) < 0 ||
	    get_int(obj, "updated_ms", created, INT64_C(1) << 50, &updated) < 0) {
		*why = "timestamps";
		return -EINVAL;
	}
	if (get_int(obj, "ttl_ms", 1, TTL_MS_MAX, &ttl) < 0 ||
	    get_int(obj, "poll_ms", 1, UINT32_MAX, &poll) < 0) {
		*why = "ttl_ms or poll_ms";
		return -EINVAL;
	}
	if (get_int(obj, "error_code", INT32_MIN, INT32_MAX, &v) < 0 ||
	    get_int(obj, "result_bytes", 0, INT64_C(1) << 50, &bytes) < 0) {
		*why = "error_code or result_bytes";
		return -EINVAL;
	}
	r->error_code = (int)v;
	r->created_ms = created;
	r->updated_ms = updated;
	r->ttl_ms = ttl;
	r->poll_ms = (uint32_t)poll;
	r->result_bytes = (uint64_t)bytes;
	return 0;
}

int mcpx_task_rec_parse(const cJSON *obj, struct mcpx_task_rec *out, const char **why)
{
	struct mcpx_task_rec r;
	const cJSON *is_error = cJSON_GetObjectItemCaseSensitive(obj, "is_error");

	memset(&r, 0, sizeof(r));
	*why = "not an object";
	if (!cJSON_IsObject(obj))
		return -EINVAL;
	if (parse_strings(obj, &r, why) < 0 || parse_numbers(obj, &r, why) < 0)
		return -EINVAL;
	if (get_status(obj, &r.status) < 0) {
		*why = "status";
		return -EINVAL;
	}
	if (!cJSON_IsBool(is_error)) {
		*why = "is_error";
		return -EINVAL;
	}
	r.is_error = cJSON_IsTrue(is_error);
	*out = r;
	return 0;
}
