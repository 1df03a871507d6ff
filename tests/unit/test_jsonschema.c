/*
 * test_jsonschema.c - the schema validator against a table of schemas x
 * instances (each keyword valid and invalid, with the exact messages and
 * their JSON pointers), the refusal of everything outside the subset at
 * compile time, and the bounds that protect the server from hostile
 * instances: catastrophic and quadratic patterns, deep nesting, long
 * reference chains, and the caps on the number and size of messages.
 *
 * To keep the tables readable, JSON in them is written with ' for ".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "jsonrpc.h"
#include "jsonschema.h"
#include "utf8.h"

/* Parses JSON written with ' for " (caller frees). */
static cJSON *parse(const char *text)
{
	char *s = strdup(text);
	cJSON *j;

	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	j = cJSON_Parse(s);
	free(s);
	return j;
}

static struct mcpx_schema *compile(const char *schema, int line)
{
	struct mcpx_err err = {{0}};
	struct mcpx_schema *s = NULL;
	cJSON *js = parse(schema);
	int rc = js ? mcpx_schema_compile(js, &s, &err) : -1;

	if (rc != 0) {
		fprintf(stderr, "test_jsonschema.c:%d: schema %s: rc %d: %s\n", line, schema, rc,
		        err.msg);
		check_failures++;
	}
	cJSON_Delete(js);
	return s;
}

/* Validates instance (a cJSON value) and compares the messages (without
 * the last newline) with want; want NULL means valid. */
static void expect_value(struct mcpx_schema *s, const cJSON *inst, const char *want, int line)
{
	struct mcpx_schema_errors errs;
	int rc = mcpx_schema_validate(s, inst, &errs);
	size_t n = errs.len && errs.text[errs.len - 1] == '\n' ? errs.len - 1 : errs.len;

	if (want ? (rc != -EINVAL || strlen(want) != n || memcmp(errs.text, want, n) != 0)
	         : rc != 0) {
		fprintf(stderr, "test_jsonschema.c:%d: rc %d, got \"%s\", want \"%s\"\n", line, rc,
		        errs.text, want ? want : "(valid)");
		check_failures++;
	}
}

struct row {
	const char *schema, *instance, *want;
};

/* Each keyword, valid and invalid; want is NULL for a valid instance. */
static const struct row rows[] = {
    /* type, including 2020-12's integer: 1.0 is an integer, 1.5 is not. */
    {"{'type':'integer'}", "1", NULL},
    {"{'type':'integer'}", "1.0", NULL},
    {"{'type':'integer'}", "-0", NULL},
    {"{'type':'integer'}", "9007199254740991", NULL},
    {"{'type':'integer'}", "-9007199254740991", NULL},
    /* A number that is not finite is refused whatever the schema (it
     * cannot travel back as JSON); every finite one travels with its own
     * text (json.h), integers above 2^53 included (issue 34 item 1: they
     * were refused while they arrived as the nearest double). */
    {"{'type':'integer'}", "1e300", NULL},
    {"{'type':'integer'}", "123456789012345678901234567", NULL},
    {"{'type':'integer'}", "9007199254740992", NULL},
    {"{}", "[1, -9007199254740993]", NULL},
    {"{'type':'number','minimum':0}", "1e999", "(root): is not a finite number"},
    {"{'type':'object'}", "{'x':{'y':-1e999}}", "/x/y: is not a finite number"},
    {"{'type':'number'}", "1.5e300", NULL},
    {"{'type':'number'}", "1.5e15", NULL},
    {"{'type':'integer'}", "1.5", "(root): must be integer (got number)"},
    {"{'type':'integer'}", "'1'", "(root): must be integer (got string)"},
    {"{'type':'number'}", "1.5", NULL},
    {"{'type':'number'}", "7", NULL},
    {"{'type':'number'}", "true", "(root): must be number (got boolean)"},
    {"{'type':'string'}", "7", "(root): must be string (got integer)"},
    {"{'type':'boolean'}", "false", NULL},
    {"{'type':'boolean'}", "0", "(root): must be boolean (got integer)"},
    {"{'type':'null'}", "null", NULL},
    {"{'type':'null'}", "false", "(root): must be null (got boolean)"},
    {"{'type':'object'}", "[]", "(root): must be object (got array)"},
    {"{'type':'array'}", "{}", "(root): must be array (got object)"},
    {"{'type':['string','null']}", "null", NULL},
    {"{'type':['string','null']}", "'x'", NULL},
    {"{'type':['string','null']}", "1", "(root): must be null or string (got integer)"},
    {"{'type':['integer','string','boolean']}", "{}",
     "(root): must be boolean, string or integer (got object)"},
    /* properties apply to the members they name, and only to objects. */
    {"{'properties':{'a':{'type':'string'}}}", "{'a':'x'}", NULL},
    {"{'properties':{'a':{'type':'string'}}}", "{'b':1}", NULL},
    {"{'properties':{'a':{'type':'string'}}}", "5", NULL},
    {"{'properties':{'a':{'type':'string'}}}", "{'a':1}", "/a: must be string (got integer)"},
    /* A repeated key cannot hide a second value from the check. */
    {"{'properties':{'a':{'type':'string'}}}", "{'a':'x','a':1}",
     "/a: must be string (got integer)"},
    {"{'properties':{'items':{'items':{'properties':{'qty':{'minimum':1}}}}}}",
     "{'items':[{'qty':1},{'qty':2},{'qty':0}]}", "/items/2/qty: must be >= 1"},
    /* required */
    {"{'required':['a','b']}", "{'a':1,'b':null}", NULL},
    {"{'required':['a','b']}", "{'a':1}", "(root): missing required property \"b\""},
    {"{'required':['a','b']}", "{}",
     "(root): missing required property \"a\"\n(root): missing required property \"b\""},
    {"{'required':['a']}", "[]", NULL},
    /* additionalProperties: false, a schema, or true. */
    {"{'properties':{'a':{}},'additionalProperties':false}", "{'a':1}", NULL},
    {"{'properties':{'a':{}},'additionalProperties':false}", "{'a':1,'b':2}",
     "/b: property not allowed"},
    {"{'additionalProperties':{'type':'integer'}}", "{'a':1,'b':'x'}",
     "/b: must be integer (got string)"},
    {"{'additionalProperties':true}", "{'a':1}", NULL},
    /* Pointers escape ~ and / (RFC 6901). */
    {"{'additionalProperties':false}", "{'a/b~c':1}", "/a~1b~0c: property not allowed"},
    /* enum and const compare deeply; 1 equals 1.0; member order is free. */
    {"{'enum':['a',1,null,{'k':[1,2]}]}", "'a'", NULL},
    {"{'enum':['a',1,null,{'k':[1,2]}]}", "1.0", NULL},
    {"{'enum':['a',1,null,{'k':[1,2]}]}", "null", NULL},
    {"{'enum':['a',1,null,{'k':[1,2]}]}", "{'k':[1,2]}", NULL},
    {"{'enum':['a',1,null,{'k':[1,2]}]}", "{'k':[2,1]}",
     "(root): must be one of [\"a\",1,null,{\"k\":[1,2]}]"},
    {"{'enum':['a',1,null,{'k':[1,2]}]}", "false",
     "(root): must be one of [\"a\",1,null,{\"k\":[1,2]}]"},
    {"{'const':{'a':[1,{'b':null}],'c':'x'}}", "{'c':'x','a':[1.0,{'b':null}]}", NULL},
    {"{'const':{'a':[1,{'b':null}],'c':'x'}}", "{'c':'x','a':[1,{'b':false}]}",
     "(root): must be equal to {\"a\":[1,{\"b\":null}],\"c\":\"x\"}"},
    {"{'const':{'a':1}}", "{'a':1,'b':2}", "(root): must be equal to {\"a\":1}"},
    {"{'const':1}", "true", "(root): must be equal to 1"},
    {"{'const':false}", "0", "(root): must be equal to false"},
    {"{'const':null}", "null", NULL},
    /* Objects above the small-object size are compared sorted. */
    {"{'const':{'a':1,'b':2,'c':3,'d':4,'e':5,'f':6,'g':7,'h':8,'i':9,'j':10}}",
     "{'j':10,'i':9,'h':8,'g':7,'f':6,'e':5,'d':4,'c':3,'b':2,'a':1}", NULL},
    {"{'const':{'a':1,'b':2,'c':3,'d':4,'e':5,'f':6,'g':7,'h':8,'i':9,'j':10}}",
     "{'j':10,'i':9,'h':8,'g':7,'f':6,'e':5,'d':4,'c':3,'b':2,'z':1}",
     "(root): must be equal to {\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,"
     "\"h\":8,\"i\":9,\"j\":10}"},
    /* Numeric bounds (2020-12: exclusive* are numbers); they ignore strings. */
    {"{'minimum':1}", "1", NULL},
    {"{'minimum':1}", "0.999", "(root): must be >= 1"},
    {"{'minimum':1}", "'0'", NULL},
    {"{'maximum':1.5}", "1.5", NULL},
    {"{'maximum':1.5}", "1.6", "(root): must be <= 1.5"},
    {"{'exclusiveMinimum':0}", "1e-300", NULL},
    {"{'exclusiveMinimum':0}", "0", "(root): must be > 0"},
    {"{'exclusiveMaximum':10}", "9.99", NULL},
    {"{'exclusiveMaximum':10}", "10", "(root): must be < 10"},
    {"{'minimum':0.1,'maximum':0.3}", "0.4", "(root): must be <= 0.3"},
    /* multipleOf is robust to binary floating point. */
    {"{'multipleOf':0.1}", "0.3", NULL},
    {"{'multipleOf':0.1}", "12345678.9", NULL},
    {"{'multipleOf':0.01}", "19.99", NULL},
    {"{'multipleOf':0.1}", "0.35", "(root): must be a multiple of 0.1"},
    {"{'multipleOf':1}", "1e-12", "(root): must be a multiple of 1"},
    {"{'multipleOf':3}", "9", NULL},
    {"{'multipleOf':3}", "10", "(root): must be a multiple of 3"},
    {"{'multipleOf':2}", "1e15", NULL},
    /* Without libm (nearest_whole, the integer path): negative values,
     * halves, a divisor larger than the value. */
    {"{'multipleOf':3}", "-9", NULL},
    {"{'multipleOf':3}", "-10", "(root): must be a multiple of 3"},
    {"{'multipleOf':0.5}", "-2.5", NULL},
    {"{'multipleOf':0.2}", "0.5", "(root): must be a multiple of 0.2"},
    {"{'multipleOf':0.2}", "-0.5", "(root): must be a multiple of 0.2"},
    {"{'multipleOf':1e300}", "0", NULL},
    {"{'multipleOf':1e300}", "7", "(root): must be a multiple of 1e+300"},
    {"{'multipleOf':1e-308}", "1.5e-300", NULL},
    /* Lengths count code points, not bytes. */
    {"{'minLength':2,'maxLength':3}", "'ab'", NULL},
    {"{'minLength':2,'maxLength':3}", "'\xC3\xA9\xE2\x82\xAC'", NULL},
    {"{'minLength':2,'maxLength':3}", "'\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00'", NULL},
    {"{'minLength':2,'maxLength':3}", "'a'", "(root): must be at least 2 characters long"},
    {"{'minLength':2,'maxLength':3}", "'\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9'",
     "(root): must be at most 3 characters long"},
    {"{'maxLength':1}", "'ab'", "(root): must be at most 1 character long"},
    {"{'minLength':5}", "12", NULL},
    /* pattern: searched, not anchored; $ is the very end; UTF-8 aware;
     * \d is ASCII only and \u is an escape, as in ECMAScript. */
    {"{'pattern':'^[a-z]+$'}", "'abc'", NULL},
    {"{'pattern':'^[a-z]+$'}", "'Abc'", "(root): must match pattern \"^[a-z]+$\""},
    {"{'pattern':'^[a-z]+$'}", "'abc\\n'", "(root): must match pattern \"^[a-z]+$\""},
    {"{'pattern':'b'}", "'abc'", NULL},
    {"{'pattern':'b'}", "'xyz'", "(root): must match pattern \"b\""},
    {"{'pattern':'^.$'}", "'\xC3\xA9'", NULL},
    {"{'pattern':'^.$'}", "'\\ud83d\\ude00'", NULL},
    {"{'pattern':'^\\\\u00e9$'}", "'\xC3\xA9'", NULL},
    {"{'pattern':'^\\\\d$'}", "'\xD9\xA3'", "(root): must match pattern \"^\\d$\""},
    {"{'pattern':'^\\\\u{1F600}$'}", "'\\ud83d\\ude00'", NULL},
    /* ECMAScript's meaning where PCRE2's differs: '.' stops at every line
     * terminator (LF, CR, U+2028, U+2029) and at nothing else... */
    {"{'pattern':'^a.b$'}", "'a\\rb'", "(root): must match pattern \"^a.b$\""},
    {"{'pattern':'^a.b$'}", "'a\\u2028b'", "(root): must match pattern \"^a.b$\""},
    {"{'pattern':'^a.b$'}", "'a\\u2029b'", "(root): must match pattern \"^a.b$\""},
    {"{'pattern':'^a.b$'}", "'a\\u0085b'", NULL},
    {"{'pattern':'^a.b$'}", "'a\\u000bb'", NULL},
    {"{'pattern':'^a[.]b$'}", "'a.b'", NULL},
    {"{'pattern':'^a[.]b$'}", "'axb'", "(root): must match pattern \"^a[.]b$\""},
    {"{'pattern':'^a\\\\.b$'}", "'axb'", "(root): must match pattern \"^a\\.b$\""},
    /* ...\s is ECMAScript's white space and line terminators... */
    {"{'pattern':'^\\\\s$'}", "'\\u00a0'", NULL},
    {"{'pattern':'^\\\\s$'}", "'\\ufeff'", NULL},
    {"{'pattern':'^\\\\s$'}", "'\\u3000'", NULL},
    {"{'pattern':'^\\\\s$'}", "'\\u0085'", "(root): must match pattern \"^\\s$\""},
    {"{'pattern':'^\\\\S$'}", "'\\u00a0'", "(root): must match pattern \"^\\S$\""},
    {"{'pattern':'^\\\\S$'}", "'\\u0085'", NULL},
    {"{'pattern':'^[\\\\s,]+$'}", "' ,\\ufeff'", NULL},
    {"{'pattern':'^[a\\\\S]$'}", "'\\u00a0'", "(root): must match pattern \"^[a\\S]$\""},
    {"{'pattern':'^[a\\\\S]$'}", "'x'", NULL},
    {"{'pattern':'^[^a\\\\S]$'}", "'\\ufeff'", NULL},
    {"{'pattern':'^[^a\\\\S]$'}", "'x'", "(root): must match pattern \"^[^a\\S]$\""},
    /* Found by fuzz_schema: without \S, [\S..] must not become PCRE2's
     * collating element [..]; '.' in a class is itself. */
    {"{'pattern':'^[\\\\S..]$'}", "'.'", NULL},
    {"{'pattern':'^[\\\\S..]$'}", "'x'", NULL},
    {"{'pattern':'^[\\\\S..]$'}", "' '", "(root): must match pattern \"^[\\S..]$\""},
    {"{'pattern':'^[^\\\\S=]$'}", "' '", NULL},
    {"{'pattern':'^[^\\\\S=]$'}", "'='", "(root): must match pattern \"^[^\\S=]$\""},
    /* Found by fuzz_schema: with \S taken out, "[:a:\S]" must not end in
     * ":]" and become PCRE2's POSIX class "[:a:]"; '[' in a class is
     * itself. */
    {"{'pattern':'^[[:a:\\\\S]$'}", "'['", NULL},
    {"{'pattern':'^[[:a:\\\\S]$'}", "'x'", NULL},
    {"{'pattern':'^[[:a:\\\\S]$'}", "' '", "(root): must match pattern \"^[[:a:\\S]$\""},
    {"{'pattern':'^[^[:a:\\\\S]$'}", "' '", NULL},
    {"{'pattern':'^[^[:a:\\\\S]$'}", "'['", "(root): must match pattern \"^[^[:a:\\S]$\""},
    /* Found by fuzz_schema: \d takes no braces, so "[\d{].}" is a class
     * of digits and '{', then ECMAScript's '.', then '}'. */
    {"{'pattern':'^[\\\\d{].}$'}", "'1x}'", NULL},
    {"{'pattern':'^[\\\\d{].}$'}", "'{\\r}'", "(root): must match pattern \"^[\\d{].}$\""},
    {"{'pattern':'^\\\\p{Lu}.$'}", "'A\\r'", "(root): must match pattern \"^\\p{Lu}.$\""},
    {"{'pattern':'^\\\\p{Lu}.$'}", "'Ax'", NULL},
    /* ...\v is U+000B alone, [] matches nothing and [^] anything, and a
     * reference to a group that did not take part matches empty. */
    {"{'pattern':'^\\\\v$'}", "'\\n'", "(root): must match pattern \"^\\v$\""},
    {"{'pattern':'^\\\\v$'}", "'\\u000b'", NULL},
    {"{'pattern':'a[]'}", "'a'", "(root): must match pattern \"a[]\""},
    {"{'pattern':'^[^]$'}", "'\\n'", NULL},
    {"{'pattern':'^\\\\c[.$'}", "'\\u001bx'", NULL},
    {"{'pattern':'^\\\\p{L}.$'}", "'\\u00e9\\r'", "(root): must match pattern \"^\\p{L}.$\""},
    {"{'pattern':'^[[:alpha:].]+$'}", "'a.b'", NULL},
    {"{'pattern':'^[[:alpha:].]+$'}", "'a-b'", "(root): must match pattern \"^[[:alpha:].]+$\""},
    {"{'pattern':'^(?:(a)|b)\\\\1$'}", "'b'", NULL},
    {"{'pattern':'(?<=a)b'}", "'ab'", NULL},
    {"{'pattern':'(?<=a)b'}", "'cb'", "(root): must match pattern \"(?<=a)b\""},
    {"{'pattern':'^a'}", "5", NULL},
    /* items */
    {"{'items':{'type':'integer'}}", "[1,2,3]", NULL},
    {"{'items':{'type':'integer'}}", "[1,2,'x',4.5]",
     "/2: must be integer (got string)\n/3: must be integer (got number)"},
    {"{'items':false}", "[]", NULL},
    {"{'items':false}", "[1]", "/0: no value is allowed here"},
    /* minItems, maxItems */
    {"{'minItems':1,'maxItems':2}", "[1]", NULL},
    {"{'minItems':1,'maxItems':2}", "[]", "(root): must have at least 1 item"},
    {"{'minItems':1,'maxItems':2}", "[1,2,3]", "(root): must have at most 2 items"},
    {"{'minItems':1}", "'x'", NULL},
    /* uniqueItems by deep equality; the reported pair does not depend on
     * hashing (smallest second index, then first). */
    {"{'uniqueItems':true}", "[1,'1',true,null,[1],{'a':1},[[1,2]],[[2,1]]]", NULL},
    {"{'uniqueItems':true}", "[1,2,1.0]",
     "(root): must not contain duplicates: items 0 and 2 are equal"},
    {"{'uniqueItems':true}", "[{'a':1,'b':2},{'b':2,'a':1}]",
     "(root): must not contain duplicates: items 0 and 1 are equal"},
    {"{'uniqueItems':true}", "[5,1,2,3,1,3]",
     "(root): must not contain duplicates: items 1 and 4 are equal"},
    {"{'uniqueItems':true}", "[0,-0]",
     "(root): must not contain duplicates: items 0 and 1 are equal"},
    {"{'uniqueItems':false}", "[1,1]", NULL},
    /* $ref to $defs, with sibling keywords applying too (2020-12). */
    {"{'$defs':{'pos':{'type':'integer','minimum':1}},'properties':{'n':{'$ref':'#/$defs/pos'}}}",
     "{'n':2}", NULL},
    {"{'$defs':{'pos':{'type':'integer','minimum':1}},'properties':{'n':{'$ref':'#/$defs/pos'}}}",
     "{'n':0}", "/n: must be >= 1"},
    {"{'$defs':{'s':{'type':'string'}},'$ref':'#/$defs/s','maxLength':2}", "'abc'",
     "(root): must be at most 2 characters long"},
    {"{'$defs':{'s':{'type':'string'}},'$ref':'#/$defs/s','maxLength':2}", "5",
     "(root): must be string (got integer)"},
    /* Recursion through the instance is fine: it ends with the instance. */
    {"{'$defs':{'node':{'type':'object','required':['v'],'properties':{'kids':{'type':'array',"
     "'items':{'$ref':'#/$defs/node'}}}}},'$ref':'#/$defs/node'}",
     "{'v':1,'kids':[{'v':2,'kids':[{'kids':[]}]}]}",
     "/kids/0/kids/0: missing required property \"v\""},
    /* Definition names with escapes: ~1 is /, ~0 is ~, %20 a space. */
    {"{'$defs':{'a/b':{'type':'null'},'c~d':{'type':'boolean'},'e f':{'const':1}},"
     "'properties':{'x':{'$ref':'#/$defs/a~1b'},'y':{'$ref':'#/$defs/c~0d'},"
     "'z':{'$ref':'#/$defs/e%20f'}}}",
     "{'x':null,'y':true,'z':2}", "/z: must be equal to 1"},
    /* Boolean schemas, annotations, $schema and $id. */
    {"true", "{'anything':[1]}", NULL},
    {"false", "1", "(root): no value is allowed here"},
    {"{'properties':{'a':false}}", "{'a':0}", "/a: no value is allowed here"},
    {"{'title':'t','description':'d','default':'x','examples':['x'],'$comment':'c',"
     "'deprecated':true,'readOnly':false,'writeOnly':false,'type':'integer'}",
     "5", NULL},
    {"{'$schema':'https://json-schema.org/draft/2020-12/schema','$id':'urn:x','type':'null'}",
     "null", NULL},
    {"{'$schema':'https://json-schema.org/draft/2020-12/schema#'}", "null", NULL},
    /* Every failure is reported, in instance order. */
    {"{'type':'object','required':['id'],'properties':{'n':{'type':'integer','minimum':1},"
     "'tags':{'items':{'type':'string','maxLength':3}}},'additionalProperties':false}",
     "{'n':0.5,'tags':['ok','long',7],'x':1}",
     "/n: must be integer (got number)\n/n: must be >= 1\n"
     "/tags/1: must be at most 3 characters long\n/tags/2: must be string (got integer)\n"
     "/x: property not allowed\n(root): missing required property \"id\""},
};

static void test_table(void)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mcpx_schema *s = compile(rows[i].schema, (int)i);
		cJSON *inst = parse(rows[i].instance);

		if (!inst) {
			fprintf(stderr, "row %zu: bad instance %s\n", i, rows[i].instance);
			check_failures++;
		}
		if (s && inst) {
			int before = check_failures;

			expect_value(s, inst, rows[i].want, (int)i);
			if (check_failures != before)
				fprintf(stderr, "  (row %zu: schema %s, instance %s)\n", i,
				        rows[i].schema, rows[i].instance);
		}
		cJSON_Delete(inst);
		mcpx_schema_free(s);
	}
}

/* Schemas outside the subset or malformed: refused, naming where. */
static const struct {
	const char *schema, *want;
} refusals[] = {
    {"{'oneOf':[{}]}", "/oneOf: unsupported keyword \"oneOf\""},
    {"{'properties':{'a':{'items':{'format':'email'}}}}",
     "/properties/a/items/format: unsupported keyword \"format\""},
    {"{'properties':{'a/b':{'allOf':[]}}}",
     "/properties/a~1b/allOf: unsupported keyword \"allOf\""},
    {"{'$defs':{'x':{'nullable':true}}}", "/$defs/x/nullable: unsupported keyword \"nullable\""},
    {"{'definitions':{}}", "/definitions: unsupported keyword \"definitions\""},
    /* A reference that decodes to bytes that are not text. */
    {"{'$defs':{'a':{}},'$ref':'#/$defs/%db'}",
     "/$ref: only references of the form \"#/$defs/<name>\" are supported"},
    {"{'patternProperties':{}}", "/patternProperties: unsupported keyword \"patternProperties\""},
    {"{'type':'int'}", "/type: must be one of null, boolean, object, array, number, string, "
                       "integer, or a list of them"},
    {"{'type':[]}", "/type: must not be an empty list"},
    {"{'type':['string','string']}", "/type: lists \"string\" twice"},
    {"{'type':'string','type':'integer'}", "/type: keyword \"type\" appears twice"},
    {"{'properties':{'a':{},'a':{}}}", "/properties/a: property defined twice"},
    {"{'properties':{'a':5}}", "/properties/a: a schema must be an object or true or false"},
    {"5", "(root): a schema must be an object or true or false"},
    {"{'minLength':-1}", "/minLength: must be a non-negative integer"},
    {"{'maxItems':1.5}", "/maxItems: must be a non-negative integer"},
    {"{'minimum':'1'}", "/minimum: must be a number"},
    {"{'exclusiveMinimum':true}", "/exclusiveMinimum: must be a number"},
    {"{'multipleOf':0}", "/multipleOf: must be greater than 0"},
    {"{'required':'a'}", "/required: must be a list of property names"},
    {"{'required':['a','a']}", "/required: lists \"a\" twice"},
    {"{'enum':5}", "/enum: must be a list of values"},
    {"{'uniqueItems':1}", "/uniqueItems: must be true or false"},
    {"{'items':[{}]}", "/items: a list of schemas (the tuple form of older drafts) is not "
                       "supported; use one schema for every item"},
    {"{'additionalProperties':{'if':{}}}", "/additionalProperties/if: unsupported keyword \"if\""},
    {"{'$ref':'#/definitions/x'}",
     "/$ref: only references of the form \"#/$defs/<name>\" are supported"},
    {"{'$ref':'other.json#/$defs/x'}",
     "/$ref: only references of the form \"#/$defs/<name>\" are supported"},
    {"{'$ref':'#'}", "/$ref: only references of the form \"#/$defs/<name>\" are supported"},
    {"{'$defs':{'a':{}},'$ref':'#/$defs/a/properties/b'}",
     "/$ref: only references of the form \"#/$defs/<name>\" are supported"},
    {"{'$defs':{'a':{}},'$ref':'#/$defs/a%2Fb'}",
     "/$ref: only references of the form \"#/$defs/<name>\" are supported"},
    {"{'properties':{'a':{'$ref':'#/$defs/missing'}}}",
     "/properties/a/$ref: no definition \"missing\" in $defs"},
    {"{'$defs':{'a':{'$ref':'#/$defs/b'},'b':{'$ref':'#/$defs/a'}},'$ref':'#/$defs/a'}",
     "/$defs/a/$ref: $ref cycle through \"#/$defs/b\" never descends into the instance"},
    {"{'$defs':{'a':{'$ref':'#/$defs/a'}}}",
     "/$defs/a/$ref: $ref cycle through \"#/$defs/a\" never descends into the instance"},
    {"{'properties':{'a':{'$defs':{}}}}",
     "/properties/a/$defs: \"$defs\" is supported only at the top of the schema"},
    {"{'items':{'$schema':'https://json-schema.org/draft/2020-12/schema'}}",
     "/items/$schema: \"$schema\" is supported only at the top of the schema"},
    {"{'$schema':'http://json-schema.org/draft-07/schema#'}",
     "/$schema: only \"https://json-schema.org/draft/2020-12/schema\" (JSON Schema 2020-12) is "
     "supported"},
    {"{'$id':5}", "/$id: must be a string"},
    {"{'properties':{'a':{'$id':'urn:a'}}}",
     "/properties/a/$id: \"$id\" is supported only at the top of the schema"},
    {"{'minProperties':1}", "/minProperties: unsupported keyword \"minProperties\""},
};

static void test_refusals(void)
{
	struct mcpx_err err;
	struct mcpx_schema *s;

	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		cJSON *js = parse(refusals[i].schema);
		int rc;

		memset(&err, 0, sizeof(err));
		s = (struct mcpx_schema *)1;
		rc = js ? mcpx_schema_compile(js, &s, &err) : -1;
		if (rc != -EINVAL || s != NULL || strcmp(err.msg, refusals[i].want) != 0) {
			fprintf(stderr, "refusal %zu: %s: rc %d, got \"%s\", want \"%s\"\n", i,
			        refusals[i].schema, rc, err.msg, refusals[i].want);
			check_failures++;
		}
		cJSON_Delete(js);
	}
	/* An invalid regular expression names the pattern and PCRE2's reason. */
	cJSON *js = parse("{'properties':{'p':{'pattern':'(['}}}");
	CHECK_INT(mcpx_schema_compile(js, &s, &err), -EINVAL);
	CHECK(strncmp(err.msg, "/properties/p/pattern: invalid regular expression: ", 51) == 0);
	cJSON_Delete(js);
	/* \C (one byte, which can split a character) is refused. */
	js = parse("{'pattern':'a\\\\Cb'}");
	CHECK_INT(mcpx_schema_compile(js, &s, &err), -EINVAL);
	CHECK(strncmp(err.msg, "/pattern: invalid regular expression: ", 38) == 0);
	cJSON_Delete(js);
	CHECK_INT(mcpx_schema_compile(NULL, &s, &err), -EINVAL);
}

/* Nested {"items": ...} n levels deep around {}. */
static cJSON *nested_items(int n)
{
	cJSON *js = cJSON_CreateObject();

	for (int i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddItemToObject(o, "items", js);
		js = o;
	}
	return js;
}

/* n arrays inside each other around 1. */
static cJSON *nested_arrays(int n)
{
	cJSON *v = cJSON_CreateNumber(1);

	for (int i = 0; i < n; i++) {
		cJSON *a = cJSON_CreateArray();

		cJSON_AddItemToArray(a, v);
		v = a;
	}
	return v;
}

static void test_depth(void)
{
	struct mcpx_schema_errors errs;
	struct mcpx_err err;
	struct mcpx_schema *s;
	cJSON *js, *inst;
	char want[512] = "";

	/* A schema may nest 64 subschemas; 65 is refused. */
	js = nested_items(MCPX_SCHEMA_MAX_DEPTH - 1);
	CHECK_INT(mcpx_schema_compile(js, &s, &err), 0);
	mcpx_schema_free(s);
	cJSON_Delete(js);
	js = nested_items(MCPX_SCHEMA_MAX_DEPTH);
	CHECK_INT(mcpx_schema_compile(js, &s, &err), -EINVAL);
	CHECK(strstr(err.msg, ": schema nests deeper than 64 levels") != NULL);
	cJSON_Delete(js);
	/* So may a const value. */
	js = cJSON_CreateObject();
	cJSON_AddItemToObject(js, "const", nested_arrays(MCPX_SCHEMA_MAX_DEPTH + 1));
	CHECK_INT(mcpx_schema_compile(js, &s, &err), -EINVAL);
	CHECK_STR(err.msg, "/const: nests deeper than 64 levels");
	cJSON_Delete(js);

	/* An instance nested 64 deep is fine; at 65 the failure names where. */
	js = parse("{'uniqueItems':true}");
	CHECK_INT(mcpx_schema_compile(js, &s, &err), 0);
	cJSON_Delete(js);
	inst = nested_arrays(MCPX_SCHEMA_MAX_DEPTH);
	CHECK_INT(mcpx_schema_validate(s, inst, &errs), 0);
	cJSON_Delete(inst);
	inst = nested_arrays(MCPX_SCHEMA_MAX_DEPTH + 1);
	CHECK_INT(mcpx_schema_validate(s, inst, &errs), -EINVAL);
	for (int i = 0; i < MCPX_SCHEMA_MAX_DEPTH; i++)
		strcat(want, "/0");
	strcat(want, ": nests deeper than 64 levels\n");
	CHECK_STR(errs.text, want);
	cJSON_Delete(inst);
	mcpx_schema_free(s);
}

/* A chain of 200 definitions, each only a $ref to the next: no cycle, but
 * validating walks 200 references at one location. Bounded and reported. */
static void test_ref_chain(void)
{
	struct mcpx_schema_errors errs;
	struct mcpx_err err;
	struct mcpx_schema *s;
	cJSON *js = cJSON_CreateObject(), *defs = cJSON_AddObjectToObject(js, "$defs");
	char name[16], ref[32];

	for (int i = 0; i < 200; i++) {
		cJSON *d =
		    cJSON_AddObjectToObject(defs, (snprintf(name, sizeof(name), "d%d", i), name));

		if (i < 199) {
			snprintf(ref, sizeof(ref), "#/$defs/d%d", i + 1);
			cJSON_AddStringToObject(d, "$ref", ref);
		}
	}
	cJSON_AddStringToObject(js, "$ref", "#/$defs/d0");
	CHECK_INT(mcpx_schema_compile(js, &s, &err), 0);
	cJSON *inst = cJSON_CreateNull();
	CHECK_INT(mcpx_schema_validate(s, inst, &errs), -EINVAL);
	CHECK_STR(errs.text, "(root): schema references nest deeper than 128 levels\n");
	cJSON_Delete(inst);
	mcpx_schema_free(s);
	cJSON_Delete(js);
}

/* A string of n copies of c followed by tail. */
static char *repeat(char c, size_t n, const char *tail)
{
	char *s = malloc(n + strlen(tail) + 1);

	memset(s, c, n);
	strcpy(s + n, tail);
	return s;
}

/* 200 000 distinct items would take 2 * 10^10 comparisons pairwise, far
 * beyond the CPU budget; sorted hashes make it quick. */
static void test_unique_long_array(void)
{
	struct mcpx_schema_errors errs;
	struct mcpx_schema *s = compile("{'uniqueItems':true}", __LINE__);
	cJSON *inst = cJSON_CreateArray();

	for (int i = 0; i < 200000; i++)
		cJSON_AddItemToArray(inst, cJSON_CreateNumber(i));
	CHECK_INT(mcpx_schema_validate(s, inst, &errs), 0);
	cJSON_AddItemToArray(inst, cJSON_CreateNumber(5));
	CHECK_INT(mcpx_schema_validate(s, inst, &errs), -EINVAL);
	CHECK_STR(errs.text, "(root): must not contain duplicates: items 5 and 200000 are equal\n");
	cJSON_Delete(inst);
	mcpx_schema_free(s);
}

/* Catastrophic backtracking: 2^40 ways to split the a's. PCRE2's match
 * limit ends each match, and it is a failure of the instance, not a hang.
 * Many such strings: the CPU budget of the whole validation ends the walk,
 * and the stop is reported even after the kept messages ran out. */
static void test_catastrophic_pattern(void)
{
	struct mcpx_schema_errors errs;
	struct mcpx_schema *s = compile("{'items':{'pattern':'^(a+)+$'}}", __LINE__);
	char *str = repeat('a', 40, "!");
	cJSON *inst = cJSON_CreateArray();

	cJSON_AddItemToArray(inst, cJSON_CreateString("aaaa"));
	cJSON_AddItemToArray(inst, cJSON_CreateString(str));
	CHECK_INT(mcpx_schema_validate(s, inst, &errs), -EINVAL);
	CHECK_STR(errs.text, "/1: could not be matched against pattern \"^(a+)+$\": the match "
	                     "exceeded its backtracking limit\n");
	cJSON_Delete(inst);

	inst = cJSON_CreateArray();
	for (int i = 0; i < 20000; i++)
		cJSON_AddItemToArray(inst, cJSON_CreateString(str));
	CHECK_INT(mcpx_schema_validate(s, inst, &errs), -EINVAL);
	CHECK(errs.count < 20000);
	/* Each failed match costs its backtracking limit: about 20 fit in the
	 * budget, fewer on a slow or loaded machine (sanitizers). The stop is
	 * the last message kept, whether or not the others filled their cap. */
	CHECK(errs.kept >= 2 && errs.kept <= MCPX_SCHEMA_MAX_ERRORS + 1);
	CHECK(strstr(errs.text, ": validation stopped: it used more than 250 ms of CPU time\n"));
	cJSON_Delete(inst);
	free(str);
	mcpx_schema_free(s);
}

/* No backtracking at all, but an unanchored search re-scans a megabyte from
 * each of its million start positions (minutes of CPU): only the CPU
 * budget, checked from PCRE2's callouts, stops it. */
static void test_quadratic_pattern(void)
{
	struct mcpx_schema_errors errs;
	struct mcpx_schema *s = compile("{'pattern':'[a-z]*[0-9]'}", __LINE__);
	char *str = repeat('a', 1000000, "");
	cJSON *inst = cJSON_CreateString(str);

	CHECK_INT(mcpx_schema_validate(s, inst, &errs), -EINVAL);
	CHECK_STR(errs.text, "(root): validation stopped: it used more than 250 ms of CPU time\n");
	cJSON_Delete(inst);
	/* A long string that matches quickly is fine. */
	str[999999] = '7';
	inst = cJSON_CreateString(str);
	CHECK_INT(mcpx_schema_validate(s, inst, &errs), 0);
	cJSON_Delete(inst);
	free(str);
	mcpx_schema_free(s);

	/* Bytes that are not UTF-8 (cJSON lets a program build them; 0xFF
	 * alone stands for U+0000, see jsonrpc.h). */
	s = compile("{'pattern':'x'}", __LINE__);
	inst = cJSON_CreateString("x\xC0");
	CHECK_INT(mcpx_schema_validate(s, inst, &errs), -EINVAL);
	CHECK_STR(errs.text, "(root): is not valid UTF-8\n");
	cJSON_Delete(inst);
	mcpx_schema_free(s);
}

/* 100 failures: 20 kept, the rest counted; the formatted message. */
static void test_message_count_cap(void)
{
	struct mcpx_schema_errors errs;
	struct mcpx_schema *s = compile("{'items':{'type':'string'}}", __LINE__);
	cJSON *inst = cJSON_CreateArray();
	char out[8192], small[40];
	size_t n;

	for (int i = 0; i < 100; i++)
		cJSON_AddItemToArray(inst, cJSON_CreateNumber(i));
	CHECK_INT(mcpx_schema_validate(s, inst, &errs), -EINVAL);
	CHECK_INT(errs.count, 100);
	CHECK_INT(errs.kept, MCPX_SCHEMA_MAX_ERRORS);
	n = mcpx_schema_errors_format(&errs, "invalid arguments", out, sizeof(out));
	CHECK_INT(n, strlen(out));
	CHECK(strncmp(out, "invalid arguments: 100 errors\n/0: must be string (got integer)\n/1: ",
	              64) == 0);
	CHECK(strstr(out, "/19: must be string (got integer)\n... and 80 more") != NULL);
	CHECK(out[n - 1] == 'e');
	/* Cut at a character boundary when the caller's buffer is small. */
	n = mcpx_schema_errors_format(&errs, "\xC3\xA9\xC3\xA9\xC3\xA9", small, 6);
	CHECK_INT(n, 4);
	CHECK_STR(small, "\xC3\xA9\xC3\xA9");
	cJSON_Delete(inst);
	mcpx_schema_free(s);
}

/* The total text is capped too: long messages fill it before the message
 * count does. Keys and the enum value are all é, so the pointers and the
 * messages are cut inside multi-byte text, marked "...", and must still be
 * valid UTF-8. */
static void test_message_text_cap(void)
{
	struct mcpx_schema_errors errs;
	struct mcpx_schema *s = NULL;
	struct mcpx_err err;
	cJSON *obj = cJSON_CreateObject();
	char out[8192], key[400] = "";
	size_t n;

	for (int j = 0; j < 190; j++)
		memcpy(key + 2 * j, "\xC3\xA9", 2);
	cJSON_AddItemToArray(
	    cJSON_AddArrayToObject(cJSON_AddObjectToObject(obj, "additionalProperties"), "enum"),
	    cJSON_CreateString(key));
	CHECK_INT(mcpx_schema_compile(obj, &s, &err), 0);
	cJSON_Delete(obj);
	obj = cJSON_CreateObject();
	for (int i = 0; i < 30; i++) {
		snprintf(key + 380, 8, "%d", i);
		cJSON_AddNullToObject(obj, key);
	}
	CHECK_INT(mcpx_schema_validate(s, obj, &errs), -EINVAL);
	CHECK_INT(errs.count, 30);
	CHECK(errs.kept > 0 && errs.kept < MCPX_SCHEMA_MAX_ERRORS);
	CHECK(errs.len < sizeof(errs.text));
	CHECK(mcpx_utf8_valid(errs.text, errs.len));
	CHECK(strstr(errs.text, "\xC3\xA9...: must be one of [\"\xC3\xA9") != NULL);
	n = mcpx_schema_errors_format(&errs, NULL, out, sizeof(out));
	CHECK(mcpx_utf8_valid(out, n));
	CHECK(strstr(out, "\xC3\xA9...\n... and ") != NULL);
	cJSON_Delete(obj);
	mcpx_schema_free(s);
}

/* An object with many members and a schema with many required names: the
 * walk over the members counts against the CPU budget, and stops. */
static void test_wide_object_budget(void)
{
	struct mcpx_schema_errors errs;
	char *schema = malloc(200 * 16 + 64), name[32];
	size_t len = 0;
	struct mcpx_schema *s;
	cJSON *obj = cJSON_CreateObject();

	len += (size_t)sprintf(schema + len, "{'required':[");
	for (int i = 0; i < 200; i++)
		len += (size_t)sprintf(schema + len, "%s'r%d'", i ? "," : "", i);
	sprintf(schema + len, "]}");
	s = compile(schema, __LINE__);
	for (int i = 0; i < 480000 && obj; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		cJSON_AddItemToObject(obj, name, cJSON_CreateNull());
	}
	CHECK_INT(mcpx_schema_validate(s, obj, &errs), -EINVAL);
	CHECK(strstr(errs.text, "validation stopped: it used more than") != NULL);
	cJSON_Delete(obj);
	mcpx_schema_free(s);
	free(schema);
}

/* A U+0000 the parser marked (jsonrpc.h) is a NUL to a pattern, not an
 * invalid byte. */
static void test_nul_in_strings(void)
{
	struct mcpx_schema_errors errs;
	struct mcpx_schema *s =
	    compile("{'properties':{'s':{'pattern':'^a\\\\x00b$','maxLength':3}}}", __LINE__);
	const char *why;
	const char *ok = "{\"s\":\"a\\u0000b\"}", *bad = "{\"s\":\"a\\u0000c\"}";
	cJSON *a = mcpx_jsonrpc_parse(ok, strlen(ok), &why);
	cJSON *b = mcpx_jsonrpc_parse(bad, strlen(bad), &why);

	CHECK(a && b);
	expect_value(s, a, NULL, __LINE__);
	expect_value(s, b, "/s: must match pattern \"^a\\x00b$\"", __LINE__);
	(void)errs;
	cJSON_Delete(a);
	cJSON_Delete(b);
	mcpx_schema_free(s);
}

/* Messages are valid UTF-8 whatever the schema's bytes: a key, a required
 * name, an enum value or a pattern that is not UTF-8 (a schema built by
 * code, or from a source that did not check) shows as '?' per invalid
 * byte, and the parser's U+0000 mark (jsonrpc.h) stays what it is. */
static void test_schema_bytes_not_utf8(void)
{
	struct mcpx_schema_errors errs;
	struct mcpx_schema *s = NULL;
	struct mcpx_err err = {{0}};
	cJSON *sch = cJSON_CreateObject(), *props, *inst;
	const char *why, *nul = "{\"n\\u0000\":\"ab\"}";
	char out[1024];
	size_t n;

	/* Compiling: the pointer names the key. */
	props = cJSON_AddObjectToObject(sch, "properties");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(props, "\xC3("), "type", "strin");
	CHECK_INT(mcpx_schema_compile(sch, &s, &err), -EINVAL);
	CHECK(mcpx_utf8_valid(err.msg, strlen(err.msg)));
	CHECK(strstr(err.msg, "/properties/?(/type") != NULL);
	cJSON_Delete(sch);
	/* Validating: a required name, an enum value, a key in the pointer,
	 * an instance key holding U+0000. */
	sch = cJSON_CreateObject();
	cJSON_AddItemToArray(cJSON_AddArrayToObject(sch, "required"),
	                     cJSON_CreateString("\xFE\xC3name\xE2\x82"));
	props = cJSON_AddObjectToObject(sch, "properties");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(cJSON_AddObjectToObject(props, "k\xF0\x9F"),
	                                            "enum"),
	                     cJSON_CreateString("\xC0\xAF"));
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(sch, "additionalProperties"), "maxLength",
	                        1);
	CHECK_INT(mcpx_schema_compile(sch, &s, &err), 0);
	cJSON_Delete(sch);
	inst = mcpx_jsonrpc_parse(nul, strlen(nul), &why);
	cJSON_AddNumberToObject(inst, "k\xF0\x9F", 1);
	CHECK_INT(mcpx_schema_validate(s, inst, &errs), -EINVAL);
	n = mcpx_schema_errors_format(&errs, "invalid arguments", out, sizeof(out));
	for (size_t i = 0; i < n; i++)
		if (out[i] == (char)MCPX_JSON_NUL_MARK)
			out[i] = '0'; /* the printer writes it as \u0000 */
	CHECK(mcpx_utf8_valid(out, n));
	CHECK(strstr(out, "??name??") != NULL);
	CHECK(strstr(out, "/k??: must be one of [\"??\"]") != NULL);
	CHECK(strstr(out, "/n0: must be at most 1 character long") != NULL);
	cJSON_Delete(inst);
	mcpx_schema_free(s);
}

/* A valid instance leaves nothing behind; a missing one is a failure. */
static void test_valid_and_missing(void)
{
	struct mcpx_schema_errors errs;
	struct mcpx_schema *s = compile("{'additionalProperties':false}", __LINE__);
	cJSON *obj = cJSON_CreateObject();
	char out[128];

	CHECK_INT(mcpx_schema_validate(s, obj, &errs), 0);
	CHECK_INT(errs.count, 0);
	CHECK_STR(errs.text, "");
	CHECK_INT(mcpx_schema_validate(s, NULL, &errs), -EINVAL);
	CHECK_STR(errs.text, "(root): no value\n");
	mcpx_schema_errors_format(&errs, "bad", out, sizeof(out));
	CHECK_STR(out, "bad: 1 error\n(root): no value");
	cJSON_Delete(obj);
	mcpx_schema_free(s);
	mcpx_schema_free(NULL);
}

int main(void)
{
	test_table();
	test_refusals();
	test_depth();
	test_ref_chain();
	test_unique_long_array();
	test_catastrophic_pattern();
	test_quadratic_pattern();
	test_message_count_cap();
	test_message_text_cap();
	test_valid_and_missing();
	test_wide_object_budget();
	test_nul_in_strings();
	test_schema_bytes_not_utf8();
	CHECK_DONE();
}
