/*
 * cmd_call.c - `mcp-exec-client call`: run code once and behave like the
 * program did.
 *
 * The program's stdout and stderr bytes go to ours unchanged (stdout first,
 * flushed, then stderr) and its exit code becomes ours; what the program did
 * not say itself (timed out, killed, output truncated) is added on stderr as
 * lines starting "mcp-exec-client:". Failures of the client, the transport
 * or the tool get one such line and an exit code from cli_exit_code.
 *
 * It does not retry a run or interpret the program's output.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "commands.h"
#include "http_client.h"
#include "mcp_session.h"
#include "utf8.h"

/* The largest code or stdin file we read; the server's own limits are far
 * lower and it answers with a clear message past them. */
#define MAX_INPUT_BYTES ((size_t)64 << 20)
/* Extra wait beyond the run's timeout: the server's queue (60 s by
 * default), sandbox start-up and the transfer of the reply. */
#define HTTP_MARGIN_S 120L
/* Without --timeout the server picks the run's limit; its default maximum
 * is 300 s. */
#define DEFAULT_RUN_LIMIT_S 300L

long cmd_http_timeout(unsigned timeout_s)
{
	return (timeout_s ? (long)timeout_s : DEFAULT_RUN_LIMIT_S) + HTTP_MARGIN_S;
}

int cmd_check_text(const char *what, const char *s, size_t len, struct mcpx_err *err)
{
	if (memchr(s, '\0', len))
		return mcpx_err_set(err, EILSEQ,
		                    "%s contains NUL bytes, which the server cannot take", what);
	if (!mcpx_utf8_valid(s, len))
		return mcpx_err_set(err, EILSEQ, "%s is not valid UTF-8", what);
	return 0;
}

/* --progress: what the server says while the code runs. */
static void show_notification(void *arg, const cJSON *msg)
{
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	const cJSON *v;

	if (!cJSON_IsString(method))
		return;
	if (!strcmp(method->valuestring, "notifications/progress")) {
		v = cJSON_GetObjectItemCaseSensitive(params, "progress");
		if (cJSON_IsNumber(v))
			fprintf(stderr, "mcp-exec-client: progress: %.0f bytes of output\n",
			        v->valuedouble);
	} else if (!strcmp(method->valuestring, "notifications/message")) {
		char line[200];
		v = cJSON_GetObjectItemCaseSensitive(params, "data");
		if (!cJSON_IsString(v))
			return;
		mcp_printable(v->valuestring, line, sizeof(line));
		fprintf(stderr, "mcp-exec-client: server: %s\n", line);
	}
	fflush(stderr);
}

/* "SIGKILL" or "SIG9" to 9; 0 when unknown. */
static int signal_number(const char *name)
{
	if (strncmp(name, "SIG", 3) != 0)
		return 0;
	name += 3;
	if (*name >= '0' && *name <= '9')
		return atoi(name);
	for (int s = 1; s < SIGRTMIN; s++) {
		const char *abbrev = sigabbrev_np(s);
		if (abbrev && !strcmp(abbrev, name))
			return s;
	}
	return 0;
}

static int write_all(FILE *f, const char *buf, size_t len)
{
	if (len && fwrite(buf, 1, len, f) != len)
		return -EIO;
	return fflush(f) == 0 ? 0 : -EIO;
}

/* Prints the run and works out our exit status. */
static int report(const struct mcp_exec_result *res)
{
	int status, sig;

	if (write_all(stdout, res->out, res->out_len) < 0 ||
	    write_all(stderr, res->err, res->err_len) < 0) {
		/* Nothing sensible can be said on a broken stderr; try. */
		fprintf(stderr, "mcp-exec-client: cannot write the program's output: %s\n",
		        strerror(errno));
		return EX_IOERR;
	}
	if (res->truncated)
		fprintf(stderr, "mcp-exec-client: output truncated at the server's limit\n");

	if (res->timed_out) {
		/* The server's clock, in whole seconds: it may have clamped
		 * the limit we asked for. */
		unsigned long secs = (unsigned long)(res->duration_ms / 1000);
		fprintf(stderr, "mcp-exec-client: timed out after %lus\n", secs ? secs : 1);
		return CLI_EXIT_TIMEOUT;
	}
	if (res->signal_name[0]) {
		sig = signal_number(res->signal_name);
		if (res->limit[0])
			fprintf(stderr, "mcp-exec-client: killed by %s (%s limit)\n",
			        res->signal_name, res->limit);
		else
			fprintf(stderr, "mcp-exec-client: killed by %s\n", res->signal_name);
		/* The shell's convention for a death by signal. */
		return sig > 0 && sig < 128 ? 128 + sig : EX_SOFTWARE;
	}
	if (res->limit[0] && strcmp(res->limit, "output") != 0)
		fprintf(stderr, "mcp-exec-client: the run hit the server's %s limit\n", res->limit);
	status = res->exit_code;
	if (status < 0 || status > 255) {
		fprintf(stderr, "mcp-exec-client: the server reported exit code %d\n", status);
		return EX_SOFTWARE;
	}
	return status;
}

/* The code and stdin, from the options; both freed by the caller. */
static int read_inputs(const struct cli_opts *o, char **code, char **in, struct mcpx_err *err)
{
	size_t len;
	int rc;

	*code = *in = NULL;
	if (o->code) {
		*code = strdup(o->code);
		if (!*code)
			return mcpx_err_set(err, ENOMEM, "out of memory");
		len = strlen(*code);
	} else {
		rc = cli_read_file(o->code_file, MAX_INPUT_BYTES, code, &len, err);
		if (rc < 0)
			return rc;
	}
	rc = cmd_check_text("the code", *code, len, err);
	if (rc < 0 || !o->stdin_file)
		return rc;
	rc = cli_read_file(o->stdin_file, MAX_INPUT_BYTES, in, &len, err);
	if (rc < 0)
		return rc;
	return cmd_check_text("the --stdin input", *in, len, err);
}

int cmd_call(const struct cli_opts *o)
{
	struct mcp_session session = {0};
	struct mcp_exec_result res = {0};
	struct mcpx_err err = {{0}};
	struct mcp_exec_req req = {0};
	char *token = NULL, *code = NULL, *in = NULL;
	struct hc *http = NULL;
	bool opened = false;
	int rc, status;

	rc = read_inputs(o, &code, &in, &err);
	if (rc == 0)
		rc = cli_token(o, &token, &err);
	if (rc == 0)
		rc = hc_new(&http, token, &err);
	cli_token_free(token);
	if (rc < 0)
		goto out;

	rc = mcp_session_open(&session, http, o->url, &err);
	if (rc < 0)
		goto out;
	opened = true;
	if (o->progress) {
		rc = mcp_session_set_log_level(&session, "info", &err);
		if (rc < 0)
			goto out;
	}
	req.code = code;
	req.stdin_data = in;
	req.timeout_s = o->timeout_s;
	req.language = o->language;
	req.http_timeout_s = cmd_http_timeout(o->timeout_s);
	req.progress = o->progress;
	req.on_notify = o->progress ? show_notification : NULL;
	rc = mcp_session_exec(&session, &req, &res, &err);
out:
	/* End the session before printing: the server frees it now rather
	 * than at expiry, and our output is not delayed by much. */
	if (opened)
		mcp_session_close(&session);
	hc_free(http);
	free(code);
	free(in);
	if (rc < 0) {
		fprintf(stderr, "mcp-exec-client: %s\n", err.msg);
		return cli_exit_code(rc);
	}
	status = report(&res);
	mcp_exec_result_free(&res);
	return status;
}
