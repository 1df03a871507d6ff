/*
 * test_task_record.c - task records (task_record.h) and their wire forms
 * in both protocol generations (task_wire.h).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>

#include "check.h"
#include "task_record.h"
#include "task_wire.h"

static struct mcpx_task_rec sample(void)
{
	struct mcpx_task_rec r;

	memset(&r, 0, sizeof(r));
	memcpy(r.id, "0123456789abcdef0123456789abcdef", MCPX_TASK_ID_LEN + 1);
	strcpy(r.owner, "alice");
	strcpy(r.tool, "exec");
	r.status = MCPX_TASK_WORKING;
	r.created_ms = 1764066600000; /* 2025-11-25T10:30:00.000Z */
	r.updated_ms = 1764066600123;
	r.ttl_ms = 60000;
	r.poll_ms = 1000;
	strcpy(r.replica, "replica-a");
	strcpy(r.session, "m2.session");
	return r;
}

static void test_ids(void)
{
	char a[MCPX_TASK_ID_LEN + 1], b[MCPX_TASK_ID_LEN + 1];

	CHECK_INT(mcpx_task_id_new(a), 0);
	CHECK_INT(mcpx_task_id_new(b), 0);
	CHECK(mcpx_task_id_valid(a));
	CHECK(strcmp(a, b) != 0);
	CHECK(!mcpx_task_id_valid(NULL));
	CHECK(!mcpx_task_id_valid(""));
	CHECK(!mcpx_task_id_valid("0123456789ABCDEF0123456789abcdef"));  /* upper case */
	CHECK(!mcpx_task_id_valid("0123456789abcdef0123456789abcde"));   /* short */
	CHECK(!mcpx_task_id_valid("0123456789abcdef0123456789abcdef0")); /* long */
	CHECK(!mcpx_task_id_valid("../../../../etc/passwd0123456789ab"));
}

static void test_iso8601(void)
{
	char t[32];

	mcpx_task_iso8601(1764066600123, t, sizeof(t));
	CHECK_STR(t, "2025-11-25T10:30:00.123Z");
	mcpx_task_iso8601(0, t, sizeof(t));
	CHECK_STR(t, "1970-01-01T00:00:00.000Z");
	CHECK(mcpx_task_now_ms() > 1764066600000);
}

static void test_round_trip(void)
{
	struct mcpx_task_rec r = sample(), back;
	cJSON *j;
	const char *why = NULL;

	r.status = MCPX_TASK_FAILED;
	r.error_code = -32603;
	r.result_bytes = 12345;
	mcpx_task_set_message(&r, "the replica running this task stopped");
	j = mcpx_task_rec_json(&r);
	REQUIRE(j != NULL);
	memset(&back, 0x5a, sizeof(back));
	CHECK_INT(mcpx_task_rec_parse(j, &back, &why), 0);
	CHECK_STR(back.id, r.id);
	CHECK_STR(back.owner, "alice");
	CHECK_STR(back.tool, "exec");
	CHECK_INT(back.status, MCPX_TASK_FAILED);
	CHECK_INT(back.error_code, -32603);
	CHECK_STR(back.message, "the replica running this task stopped");
	CHECK_INT(back.created_ms, r.created_ms);
	CHECK_INT(back.updated_ms, r.updated_ms);
	CHECK_INT(back.ttl_ms, 60000);
	CHECK_INT(back.poll_ms, 1000);
	CHECK_STR(back.replica, "replica-a");
	CHECK_STR(back.session, "m2.session");
	CHECK_INT(back.result_bytes, 12345);
	CHECK(!back.is_error);
	cJSON_Delete(j);
}

/* Parses json after replacing member key of a good record with value. */
static int parse_with(const char *key, cJSON *value, const char **why)
{
	struct mcpx_task_rec r = sample(), out;
	cJSON *j = mcpx_task_rec_json(&r);
	int rc;

	if (value)
		cJSON_ReplaceItemInObjectCaseSensitive(j, key, value);
	else
		cJSON_DeleteItemFromObjectCaseSensitive(j, key);
	rc = mcpx_task_rec_parse(j, &out, why);
	cJSON_Delete(j);
	return rc;
}

static void test_parse_refuses(void)
{
	const char *why = NULL;
	char big[600];
	struct mcpx_task_rec out;

	CHECK_INT(parse_with("id", cJSON_CreateString("../x"), &why), -EINVAL);
	CHECK_STR(why, "id");
	CHECK_INT(parse_with("owner", cJSON_CreateString(""), &why), -EINVAL);
	CHECK_INT(parse_with("owner", NULL, &why), -EINVAL);
	CHECK_INT(parse_with("status", cJSON_CreateString("input_required"), &why), -EINVAL);
	CHECK_STR(why, "status");
	CHECK_INT(parse_with("ttl_ms", cJSON_CreateNumber(0), &why), -EINVAL);
	CHECK_INT(parse_with("ttl_ms", cJSON_CreateNumber(1.5), &why), -EINVAL);
	CHECK_INT(parse_with("ttl_ms", cJSON_CreateString("60000"), &why), -EINVAL);
	CHECK_INT(parse_with("updated_ms", cJSON_CreateNumber(5), &why),
	          -EINVAL); /* before created */
	CHECK_INT(parse_with("is_error", cJSON_CreateNumber(1), &why), -EINVAL);
	CHECK_INT(parse_with("v", cJSON_CreateNumber(2), &why), -EINVAL);
	memset(big, 'm', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_INT(parse_with("message", cJSON_CreateString(big), &why), -EINVAL);
	CHECK_INT(parse_with("tool", cJSON_CreateString("bad\xff"), &why), -EINVAL);
	CHECK_INT(mcpx_task_rec_parse(NULL, &out, &why), -EINVAL);
}

static void test_message_truncation(void)
{
	struct mcpx_task_rec r = sample();
	char big[2000];

	/* Two-byte characters: the cut must not split one. */
	for (size_t i = 0; i + 2 < sizeof(big); i += 2) {
		big[i] = (char)0xc3;
		big[i + 1] = (char)0xa9;
	}
	big[sizeof(big) - 2] = '\0';
	mcpx_task_set_message(&r, big);
	CHECK(strlen(r.message) < sizeof(r.message));
	CHECK(strlen(r.message) % 2 == 0);
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static void test_wire_v1(void)
{
	struct mcpx_task_rec r = sample();
	cJSON *c = mcpx_task_wire_created(&r, MCPX_TASK_V1);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "task");

	REQUIRE(t != NULL);
	CHECK_STR(str(t, "taskId"), r.id);
	CHECK_STR(str(t, "status"), "working");
	CHECK_STR(str(t, "createdAt"), "2025-11-25T10:30:00.000Z");
	CHECK_STR(str(t, "lastUpdatedAt"), "2025-11-25T10:30:00.123Z");
	CHECK(num(t, "ttl") == 60000);
	CHECK(num(t, "pollInterval") == 1000);
	CHECK(!cJSON_HasObjectItem(t, "ttlMs"));
	CHECK(!cJSON_HasObjectItem(t, "statusMessage"));
	CHECK(!cJSON_HasObjectItem(c, "resultType"));
	cJSON_Delete(c);

	/* A tool error is "failed" to a 2025-11-25 client. */
	r.status = MCPX_TASK_COMPLETED;
	r.is_error = true;
	mcpx_task_set_message(&r, "Tool execution failed");
	c = mcpx_task_wire_task(&r, MCPX_TASK_V1);
	CHECK_STR(str(c, "status"), "failed");
	CHECK_STR(str(c, "statusMessage"), "Tool execution failed");
	cJSON_Delete(c);
}

static void test_wire_v2(void)
{
	struct mcpx_task_rec r = sample();
	cJSON *c = mcpx_task_wire_created(&r, MCPX_TASK_V2), *result, *d, *e;

	CHECK_STR(str(c, "resultType"), "task");
	CHECK_STR(str(c, "taskId"), r.id);
	CHECK(num(c, "ttlMs") == 60000);
	CHECK(num(c, "pollIntervalMs") == 1000);
	CHECK(!cJSON_HasObjectItem(c, "ttl") && !cJSON_HasObjectItem(c, "pollInterval"));
	CHECK(!cJSON_HasObjectItem(c, "task"));
	cJSON_Delete(c);

	/* Completed with a tool error stays "completed" and inlines the result. */
	r.status = MCPX_TASK_COMPLETED;
	r.is_error = true;
	result = cJSON_Parse("{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"isError\":true}");
	d = mcpx_task_wire_detailed(&r, result, NULL);
	CHECK_STR(str(d, "status"), "completed");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(d, "result"), "isError")));
	CHECK(!cJSON_HasObjectItem(d, "error"));
	cJSON_Delete(d);
	/* A completed task needs its result. */
	CHECK(mcpx_task_wire_detailed(&r, NULL, NULL) == NULL);

	/* Failed: the record's code and message as the error. */
	r.status = MCPX_TASK_FAILED;
	r.error_code = -32603;
	mcpx_task_set_message(&r, "lease lapsed");
	d = mcpx_task_wire_detailed(&r, result, NULL);
	e = cJSON_GetObjectItemCaseSensitive(d, "error");
	CHECK(num(e, "code") == -32603);
	CHECK_STR(str(e, "message"), "lease lapsed");
	CHECK(!cJSON_HasObjectItem(d, "result"));
	cJSON_Delete(d);

	/* Cancelled: neither. */
	r.status = MCPX_TASK_CANCELLED;
	d = mcpx_task_wire_detailed(&r, result, NULL);
	CHECK_STR(str(d, "status"), "cancelled");
	CHECK(!cJSON_HasObjectItem(d, "result") && !cJSON_HasObjectItem(d, "error"));
	cJSON_Delete(d);
	cJSON_Delete(result);
}

int main(void)
{
	test_ids();
	test_iso8601();
	test_round_trip();
	test_parse_refuses();
	test_message_truncation();
	test_wire_v1();
	test_wire_v2();
	CHECK_DONE();
}
