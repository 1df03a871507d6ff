/*
 * cli.c - commands, options, help texts, inputs and exit codes of
 * mcp-exec-client (see cli.h).
 *
 * One option table serves all commands; each option names the commands it
 * belongs to, so `probe --clients 3` is a usage error rather than silently
 * ignored. The token can come from a file or the environment but never from
 * the command line, where every user of the machine could read it in ps.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "crypto.h"

#define MAX_TOKEN_FILE_BYTES 4096

enum {
	OPT_URL = 'u',
	OPT_TIMEOUT = 't',
	OPT_CODE = 'c',
	OPT_HELP = 'h',
	OPT_TOKEN_FILE = 256,
	OPT_STDIN,
	OPT_PROGRESS,
	OPT_CLIENTS,
	OPT_CALLS,
	OPT_VERSION,
	OPT_TOOL,
	OPT_ARGS,
	OPT_EXPECT,
	OPT_WARMUP,
	OPT_THINK,
	OPT_LANGUAGE,
};

#define FOR_CALL (1u << CLI_CALL)
#define FOR_PROBE (1u << CLI_PROBE)
#define FOR_BENCH (1u << CLI_BENCH)
#define FOR_ALL (FOR_CALL | FOR_PROBE | FOR_BENCH)

static const struct option long_opts[] = {
    {"url", required_argument, NULL, OPT_URL},
    {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"stdin", required_argument, NULL, OPT_STDIN},
    {"code", required_argument, NULL, OPT_CODE},
    {"progress", no_argument, NULL, OPT_PROGRESS},
    {"clients", required_argument, NULL, OPT_CLIENTS},
    {"calls", required_argument, NULL, OPT_CALLS},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {"tool", required_argument, NULL, OPT_TOOL},
    {"args", required_argument, NULL, OPT_ARGS},
    {"expect", required_argument, NULL, OPT_EXPECT},
    {"language", required_argument, NULL, OPT_LANGUAGE},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"think-ms", required_argument, NULL, OPT_THINK},
    {NULL, 0, NULL, 0},
};

/* Which commands accept which option. */
static const struct {
	int opt;
	unsigned cmds;
} opt_scope[] = {
    {OPT_URL, FOR_ALL},
    {OPT_TOKEN_FILE, FOR_CALL | FOR_BENCH},
    {OPT_TIMEOUT, FOR_ALL},
    {OPT_STDIN, FOR_CALL},
    {OPT_CODE, FOR_CALL | FOR_BENCH},
    {OPT_PROGRESS, FOR_CALL},
    {OPT_CLIENTS, FOR_BENCH},
    {OPT_CALLS, FOR_BENCH},
    {OPT_HELP, FOR_ALL},
    {OPT_VERSION, FOR_ALL},
    {OPT_TOOL, FOR_BENCH},
    {OPT_ARGS, FOR_BENCH},
    {OPT_EXPECT, FOR_BENCH},
    {OPT_WARMUP, FOR_BENCH},
    {OPT_THINK, FOR_BENCH},
    {OPT_LANGUAGE, FOR_CALL},
};

static const char *const command_names[] = {
    [CLI_NONE] = "", [CLI_CALL] = "call", [CLI_PROBE] = "probe", [CLI_BENCH] = "bench"};

static const char usage_main[] =
    "usage: mcp-exec-client COMMAND [OPTIONS]\n"
    "\n"
    "A client for mcp-exec over MCP Streamable HTTP.\n"
    "\n"
    "commands:\n"
    "  call    run Python code on the server; print its output, exit with its code\n"
    "  probe   check /healthz and /readyz (for health checks)\n"
    "  bench   load generator: N clients x M calls, latency percentiles\n"
    "\n"
    "`mcp-exec-client COMMAND --help` describes each command.\n"
    "\n"
    "The token comes from --token-file or MCP_EXEC_TOKEN, never from the command\n"
    "line; the URL from --url or MCP_EXEC_URL.\n";

static const char usage_call[] =
    "usage: mcp-exec-client call --url URL [--token-file F] [--timeout S]\n"
    "                            [--stdin F] [--progress] [--language L]\n"
    "                            (--code CODE | FILE | -)\n"
    "\n"
    "Runs code (Python unless --language says otherwise) with the server's exec tool. The "
    "program's stdout and\n"
    "stderr are written to ours unchanged and its exit code becomes ours.\n"
    "\n"
    "  --url URL         the MCP endpoint, e.g. http://mcp-exec:8080/mcp\n"
    "                    (default: MCP_EXEC_URL; a URL without a path gets /mcp)\n"
    "  --token-file F    read the token from F (a trailing newline is ignored);\n"
    "                    default: the MCP_EXEC_TOKEN environment variable\n"
    "  --timeout S       run time limit in seconds (the server clamps it to its\n"
    "                    maximum); the client waits S + 120 s for the reply, the\n"
    "                    margin covering time in the server's queue. Without it\n"
    "                    the server's default applies and the client waits 420 s.\n"
    "  --stdin F         send the contents of F (- for our stdin) as the\n"
    "                    program's standard input\n"
    "  --progress        report queueing and output progress on stderr while the\n"
    "                    code runs (the reply then streams as server-sent events)\n"
    "  --code CODE       the code to run; or a FILE holding it; or - for stdin\n"
    "  --language L      the code's language: python (the default), bash or\n"
    "                    javascript, as the server offers them\n"
    "\n"
    "exit status:\n"
    "  the program's exit code when it ran to completion\n"
    "  124  the run timed out (or no reply came in time)\n"
    "  128+N  the program was killed by signal N (e.g. at the memory limit)\n"
    "  64   usage error             65  the server rejected the code or input\n"
    "  66   cannot read an input file\n"
    "  69   cannot connect to the server, or the connection broke\n"
    "  75   the server is busy or shutting down: try again later\n"
    "  76   the server's reply made no sense (protocol error)\n"
    "  77   authentication failed\n"
    "A program may itself exit with one of these codes; the message on stderr\n"
    "(prefixed mcp-exec-client:) tells the cases apart.\n";

static const char usage_probe[] =
    "usage: mcp-exec-client probe --url URL [--timeout S]\n"
    "\n"
    "GETs /healthz and /readyz next to the MCP endpoint (the URL with /mcp\n"
    "removed) and prints what they say. Needs no token.\n"
    "\n"
    "  --url URL      the MCP endpoint or the server's base URL\n"
    "                 (default: MCP_EXEC_URL)\n"
    "  --timeout S    per-request limit in seconds (default 5)\n"
    "\n"
    "exit status: 0 when the server is ready, 1 otherwise (not ready, draining,\n"
    "unreachable); 64 for a usage error.\n";

static const char usage_bench[] =
    "usage: mcp-exec-client bench --url URL [--token-file F] [--clients N]\n"
    "                             [--calls M] [--warmup K] [--think-ms T]\n"
    "                             [--timeout S]\n"
    "                             [--code CODE | --tool NAME --args JSON]\n"
    "                             [--expect TEXT]\n"
    "\n"
    "Load generator: N threads, each with its own connection and session, make\n"
    "M tool calls each, back to back. Prints one line of key=value pairs\n"
    "(p50_ms, p90_ms, p99_ms, max_ms, calls_per_s, ok, errors, busy, clients,\n"
    "calls, wall_s) and then a table. Latency is per tools/call, measured over\n"
    "the successful calls; calls_per_s is successful calls per second of wall\n"
    "time from the first measured call to the last reply.\n"
    "\n"
    "  --clients N    concurrent clients (default 1)\n"
    "  --calls M      measured calls per client (default 10)\n"
    "  --warmup K     unmeasured calls per client first (default 0)\n"
    "  --think-ms T   pause T ms between a client's calls, as an agent\n"
    "                 thinking between tool calls would (default 0)\n"
    "  --code CODE    the code each exec call runs (default: pass)\n"
    "  --tool NAME    the tool to call (default exec); works against any MCP\n"
    "                 server, for side-by-side measurements\n"
    "  --args JSON    the tool's arguments as a JSON object (instead of --code)\n"
    "  --expect TEXT  a call succeeds when its first text block contains TEXT;\n"
    "                 default for exec: \"exit_code\":0, otherwise any\n"
    "                 non-error result\n"
    "  --timeout S    with --code: the run time limit; always: the reply wait,\n"
    "                 as for call\n"
    "  --url, --token-file   as for call\n"
    "\n"
    "exit status: 0 when every call succeeded, 1 when some failed, as for call\n"
    "when no session could be opened at all; 64 for a usage error.\n";

const char *cli_command_name(enum cli_command cmd)
{
	return cmd >= CLI_NONE && cmd <= CLI_BENCH ? command_names[cmd] : "";
}

void cli_usage(enum cli_command cmd, FILE *out)
{
	switch (cmd) {
	case CLI_CALL:
		fputs(usage_call, out);
		break;
	case CLI_PROBE:
		fputs(usage_probe, out);
		break;
	case CLI_BENCH:
		fputs(usage_bench, out);
		break;
	default:
		fputs(usage_main, out);
	}
}

static int parse_uint(const char *s, const char *name, unsigned lo, unsigned hi, unsigned *out,
                      struct mcpx_err *err)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return mcpx_err_set(err, EINVAL,
		                    "%s must be a whole number from %u to %u, not '%s'", name, lo,
		                    hi, s);
	*out = (unsigned)v;
	return 0;
}

/* Accepts http(s) URLs only; a URL with no path (or just "/") names the
 * server, whose endpoint is /mcp. */
static int set_url(struct cli_opts *o, const char *url, struct mcpx_err *err)
{
	const char *rest, *path;
	int n;

	if (!strncmp(url, "http://", 7))
		rest = url + 7;
	else if (!strncmp(url, "https://", 8))
		rest = url + 8;
	else
		return mcpx_err_set(err, EINVAL, "the URL must start with http:// or https://: %s",
		                    url);
	if (!*rest || *rest == '/')
		return mcpx_err_set(err, EINVAL, "the URL has no host: %s", url);
	path = strchr(rest, '/');
	if (!path)
		n = snprintf(o->url, sizeof(o->url), "%s/mcp", url);
	else if (!strcmp(path, "/"))
		n = snprintf(o->url, sizeof(o->url), "%smcp", url);
	else
		n = snprintf(o->url, sizeof(o->url), "%s", url);
	if (n < 0 || (size_t)n >= sizeof(o->url))
		return mcpx_err_set(err, EINVAL, "the URL is too long");
	return 0;
}

void cli_base_url(const char *mcp_url, char *out, size_t cap)
{
	size_t n = strlen(mcp_url);

	while (n && mcp_url[n - 1] == '/')
		n--;
	if (n >= 4 && !memcmp(mcp_url + n - 4, "/mcp", 4))
		n -= 4;
	snprintf(out, cap, "%.*s", (int)n, mcp_url);
}

static bool in_scope(int opt, enum cli_command cmd)
{
	for (size_t i = 0; i < sizeof(opt_scope) / sizeof(opt_scope[0]); i++)
		if (opt_scope[i].opt == opt)
			return opt_scope[i].cmds & (1u << cmd);
	return false;
}

static const char *opt_name(int opt)
{
	for (const struct option *l = long_opts; l->name; l++)
		if (l->val == opt)
			return l->name;
	return "?";
}

static enum cli_command command_of(const char *name)
{
	for (int c = CLI_CALL; c <= CLI_BENCH; c++)
		if (!strcmp(name, command_names[c]))
			return (enum cli_command)c;
	return CLI_NONE;
}

/* Options before any command: only --help and --version. */
static int parse_global(int argc, char **argv, struct cli_opts *o, struct mcpx_err *err)
{
	if (argc < 2)
		return mcpx_err_set(err, EINVAL, "no command given (call, probe or bench)");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		o->help = true;
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		o->version = true;
		return 0;
	}
	o->cmd = command_of(argv[1]);
	if (o->cmd == CLI_NONE)
		return mcpx_err_set(err, EINVAL, "unknown command '%s' (call, probe or bench)",
		                    argv[1]);
	return 0;
}

static int check_call(struct cli_opts *o, int npos, char **pos, struct mcpx_err *err)
{
	if (npos > 1)
		return mcpx_err_set(err, EINVAL, "call takes one FILE (or -), not %d", npos);
	if (npos == 1 && o->code)
		return mcpx_err_set(err, EINVAL, "give the code with --code or as FILE, not both");
	if (npos == 0 && !o->code)
		return mcpx_err_set(err, EINVAL,
		                    "no code: give --code CODE, a FILE, or - for stdin");
	o->code_file = npos ? pos[0] : NULL;
	if (o->code_file && o->stdin_file && !strcmp(o->code_file, "-") &&
	    !strcmp(o->stdin_file, "-"))
		return mcpx_err_set(err, EINVAL,
		                    "the code and --stdin cannot both come from stdin");
	return 0;
}

/* A getopt failure (c is '?' or ':') in the user's words. optopt names the
 * option when getopt knows it; otherwise the offending word is the one
 * just read (argv is shifted by one, hence no -1). */
static int option_error(int c, int argc, char **argv, struct mcpx_err *err)
{
	char word[64];

	if (optopt && strcmp(opt_name(optopt), "?") != 0)
		snprintf(word, sizeof(word), "--%s", opt_name(optopt));
	else if (optopt > 0 && optopt < 128)
		snprintf(word, sizeof(word), "-%c", optopt);
	else
		snprintf(word, sizeof(word), "%s", optind < argc ? argv[optind] : "");
	if (c == ':')
		return mcpx_err_set(err, EINVAL, "option '%s' needs a value", word);
	return mcpx_err_set(err, EINVAL, "unknown option '%s'", word);
}

/* One option c (its value in optarg) into o, the URL into *url. Returns 0,
 * 1 for --help or --version (parsing stops there), or -EINVAL. */
static int take_option(int c, struct cli_opts *o, const char **url, struct mcpx_err *err)
{
	int rc = 0;

	switch (c) {
	case OPT_URL:
		*url = optarg;
		break;
	case OPT_TOKEN_FILE:
		o->token_file = optarg;
		break;
	case OPT_TIMEOUT:
		rc = parse_uint(optarg, "--timeout", 1, 86400, &o->timeout_s, err);
		break;
	case OPT_STDIN:
		o->stdin_file = optarg;
		break;
	case OPT_CODE:
		o->code = optarg;
		break;
	case OPT_PROGRESS:
		o->progress = true;
		break;
	case OPT_LANGUAGE:
		o->language = optarg;
		break;
	case OPT_CLIENTS:
		rc = parse_uint(optarg, "--clients", 1, 1024, &o->clients, err);
		break;
	case OPT_CALLS:
		rc = parse_uint(optarg, "--calls", 1, 1000000, &o->calls, err);
		break;
	case OPT_WARMUP:
		rc = parse_uint(optarg, "--warmup", 0, 1000000, &o->warmup, err);
		break;
	case OPT_THINK:
		rc = parse_uint(optarg, "--think-ms", 0, 3600000, &o->think_ms, err);
		break;
	case OPT_TOOL:
		o->tool = optarg;
		break;
	case OPT_ARGS:
		o->args = optarg;
		break;
	case OPT_EXPECT:
		o->expect = optarg;
		break;
	case OPT_HELP:
		o->help = true;
		return 1;
	case OPT_VERSION:
		o->version = true;
		return 1;
	}
	return rc;
}

/* What follows the options: a call's code and stdin, else nothing; then
 * the URL (the option, else MCP_EXEC_URL). */
static int finish_args(int argc, char **argv, struct cli_opts *o, const char *url,
                       struct mcpx_err *err)
{
	int rc;

	if (o->cmd == CLI_CALL) {
		rc = check_call(o, argc - 1 - optind, argv + 1 + optind, err);
		if (rc < 0)
			return rc;
	} else if (o->code && o->args) {
		return mcpx_err_set(err, EINVAL,
		                    "give the arguments with --code or --args, not both");
	} else if (optind < argc - 1) {
		return mcpx_err_set(err, EINVAL, "%s takes no arguments, got '%s'",
		                    command_names[o->cmd], argv[1 + optind]);
	}
	if (!url)
		url = getenv("MCP_EXEC_URL");
	if (!url || !*url)
		return mcpx_err_set(err, EINVAL, "--url is required (or set MCP_EXEC_URL)");
	return set_url(o, url, err);
}

int cli_parse(int argc, char **argv, struct cli_opts *o, struct mcpx_err *err)
{
	const char *url = NULL;
	int c, rc;

	memset(o, 0, sizeof(*o));
	o->clients = 1;
	o->calls = 10;
	rc = parse_global(argc, argv, o, err);
	if (rc < 0 || o->help || o->version)
		return rc;

	/* The command becomes getopt's argv[0]; GNU getopt moves operands
	 * to the end, so `call FILE --timeout 5` works too. */
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, ":u:t:c:h", long_opts, NULL)) != -1) {
		if (c == '?' || c == ':')
			return option_error(c, argc, argv, err);
		if (!in_scope(c, o->cmd))
			return mcpx_err_set(err, EINVAL, "option '--%s' does not apply to %s",
			                    opt_name(c), command_names[o->cmd]);
		rc = take_option(c, o, &url, err);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	return finish_args(argc, argv, o, url, err);
}

int cli_read_file(const char *path, size_t max, char **out, size_t *len, struct mcpx_err *err)
{
	bool is_stdin = !strcmp(path, "-");
	const char *name = is_stdin ? "standard input" : path;
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0, cap = 4096;
	char *buf = NULL;
	int rc = 0;

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return mcpx_err_set(err, EIO, "cannot open %s: %s", name, strerror(errno));
	buf = malloc(cap);
	if (!buf) {
		rc = mcpx_err_set(err, EIO, "out of memory reading %s", name);
		goto out;
	}
	for (;;) {
		ssize_t r;
		if (n + 1 >= cap) {
			char *nb;
			if (cap > max + 1) {
				rc = mcpx_err_set(err, EIO, "%s is larger than %zu bytes", name,
				                  max);
				goto out;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				rc = mcpx_err_set(err, EIO, "out of memory reading %s", name);
				goto out;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = mcpx_err_set(err, EIO, "cannot read %s: %s", name, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		rc = mcpx_err_set(err, EIO, "%s is larger than %zu bytes", name, max);
		goto out;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	buf = NULL;
out:
	free(buf);
	if (!is_stdin)
		close(fd);
	return rc;
}

int cli_token(const struct cli_opts *o, char **token, struct mcpx_err *err)
{
	const char *env;
	size_t n;
	int rc;

	*token = NULL;
	if (o->token_file) {
		struct mcpx_err why = {{0}};
		rc = cli_read_file(o->token_file, MAX_TOKEN_FILE_BYTES, token, &n, &why);
		if (rc < 0)
			return mcpx_err_set(err, EIO, "token file: %s", why.msg);
		/* Secrets written with echo, or mounted from Kubernetes, often
		 * end in a newline that is not part of the token. */
		while (n && ((*token)[n - 1] == '\n' || (*token)[n - 1] == '\r'))
			(*token)[--n] = '\0';
		if (n == 0 || strlen(*token) != n) {
			cli_token_free(*token);
			*token = NULL;
			return mcpx_err_set(err, EINVAL, "the token file %s is empty or binary",
			                    o->token_file);
		}
		return 0;
	}
	env = getenv("MCP_EXEC_TOKEN");
	if (!env || !*env)
		return 0;
	*token = strdup(env);
	if (!*token)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	return 0;
}

void cli_token_free(char *token)
{
	if (!token)
		return;
	mcpx_wipe(token, strlen(token));
	free(token);
}

int cli_exit_code(int rc)
{
	switch (rc) {
	case 0:
		return 0;
	case -EINVAL:
		return EX_USAGE;
	case -EREMOTEIO:
	case -E2BIG:
	case -EILSEQ:
		return EX_DATAERR;
	case -EIO:
		return EX_NOINPUT;
	case -ECONNREFUSED:
	case -ECONNRESET:
		return EX_UNAVAILABLE;
	case -ENOMEM:
		return EX_OSERR;
	case -EBUSY:
		return EX_TEMPFAIL;
	case -EPROTO:
		return EX_PROTOCOL;
	case -EACCES:
		return EX_NOPERM;
	case -ETIMEDOUT:
		return CLI_EXIT_TIMEOUT;
	default:
		return EX_SOFTWARE;
	}
}
