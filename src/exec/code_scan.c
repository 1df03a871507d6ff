/*
 * code_scan.c - which zygote a run's Python code needs (code_scan.h).
 *
 * What it does: walks the code once, as words (identifiers and dotted
 * names), and reads the statements `import a.b [as c], d` and `from a.b
 * import ...`: the first name of each module must be in stdlib[], the
 * top-level names of CPython 3.11's standard library
 * (sys.stdlib_module_names, less the GUI and joke modules) and mcpx. It
 * does not parse Python: strings and comments are read as code, so a
 * comment that mentions "import numpy" sends the run to the scientific
 * zygote, which is only slower, never wrong.
 *
 * What it does not do: decide anything else about the run (warm_pool.c
 * picks the zygote, the executor the start path).
 */
#include "code_scan.h"

#include <stdlib.h>
#include <string.h>

/* Sorted (strcmp order), for bsearch. */
static const char *const stdlib[] = {"__future__",
                                     "_abc",
                                     "_aix_support",
                                     "_ast",
                                     "_asyncio",
                                     "_bisect",
                                     "_blake2",
                                     "_bootsubprocess",
                                     "_bz2",
                                     "_codecs",
                                     "_codecs_cn",
                                     "_codecs_hk",
                                     "_codecs_iso2022",
                                     "_codecs_jp",
                                     "_codecs_kr",
                                     "_codecs_tw",
                                     "_collections",
                                     "_collections_abc",
                                     "_compat_pickle",
                                     "_compression",
                                     "_contextvars",
                                     "_crypt",
                                     "_csv",
                                     "_ctypes",
                                     "_curses",
                                     "_curses_panel",
                                     "_datetime",
                                     "_dbm",
                                     "_decimal",
                                     "_elementtree",
                                     "_frozen_importlib",
                                     "_frozen_importlib_external",
                                     "_functools",
                                     "_gdbm",
                                     "_hashlib",
                                     "_heapq",
                                     "_imp",
                                     "_io",
                                     "_json",
                                     "_locale",
                                     "_lsprof",
                                     "_lzma",
                                     "_markupbase",
                                     "_md5",
                                     "_msi",
                                     "_multibytecodec",
                                     "_multiprocessing",
                                     "_opcode",
                                     "_operator",
                                     "_osx_support",
                                     "_overlapped",
                                     "_pickle",
                                     "_posixshmem",
                                     "_posixsubprocess",
                                     "_py_abc",
                                     "_pydecimal",
                                     "_pyio",
                                     "_queue",
                                     "_random",
                                     "_scproxy",
                                     "_sha1",
                                     "_sha256",
                                     "_sha3",
                                     "_sha512",
                                     "_signal",
                                     "_sitebuiltins",
                                     "_socket",
                                     "_sqlite3",
                                     "_sre",
                                     "_ssl",
                                     "_stat",
                                     "_statistics",
                                     "_string",
                                     "_strptime",
                                     "_struct",
                                     "_symtable",
                                     "_thread",
                                     "_threading_local",
                                     "_tkinter",
                                     "_tokenize",
                                     "_tracemalloc",
                                     "_typing",
                                     "_uuid",
                                     "_warnings",
                                     "_weakref",
                                     "_weakrefset",
                                     "_winapi",
                                     "_zoneinfo",
                                     "abc",
                                     "aifc",
                                     "argparse",
                                     "array",
                                     "ast",
                                     "asynchat",
                                     "asyncio",
                                     "asyncore",
                                     "atexit",
                                     "audioop",
                                     "base64",
                                     "bdb",
                                     "binascii",
                                     "bisect",
                                     "builtins",
                                     "bz2",
                                     "cProfile",
                                     "calendar",
                                     "cgi",
                                     "cgitb",
                                     "chunk",
                                     "cmath",
                                     "cmd",
                                     "code",
                                     "codecs",
                                     "codeop",
                                     "collections",
                                     "colorsys",
                                     "compileall",
                                     "concurrent",
                                     "configparser",
                                     "contextlib",
                                     "contextvars",
                                     "copy",
                                     "copyreg",
                                     "crypt",
                                     "csv",
                                     "ctypes",
                                     "curses",
                                     "dataclasses",
                                     "datetime",
                                     "dbm",
                                     "decimal",
                                     "difflib",
                                     "dis",
                                     "distutils",
                                     "doctest",
                                     "email",
                                     "encodings",
                                     "ensurepip",
                                     "enum",
                                     "errno",
                                     "faulthandler",
                                     "fcntl",
                                     "filecmp",
                                     "fileinput",
                                     "fnmatch",
                                     "fractions",
                                     "ftplib",
                                     "functools",
                                     "gc",
                                     "genericpath",
                                     "getopt",
                                     "getpass",
                                     "gettext",
                                     "glob",
                                     "graphlib",
                                     "grp",
                                     "gzip",
                                     "hashlib",
                                     "heapq",
                                     "hmac",
                                     "html",
                                     "http",
                                     "imaplib",
                                     "imghdr",
                                     "imp",
                                     "importlib",
                                     "inspect",
                                     "io",
                                     "ipaddress",
                                     "itertools",
                                     "json",
                                     "keyword",
                                     "lib2to3",
                                     "linecache",
                                     "locale",
                                     "logging",
                                     "lzma",
                                     "mailbox",
                                     "mailcap",
                                     "marshal",
                                     "math",
                                     "mcpx",
                                     "mimetypes",
                                     "mmap",
                                     "modulefinder",
                                     "msilib",
                                     "msvcrt",
                                     "multiprocessing",
                                     "netrc",
                                     "nis",
                                     "nntplib",
                                     "nt",
                                     "ntpath",
                                     "nturl2path",
                                     "numbers",
                                     "opcode",
                                     "operator",
                                     "optparse",
                                     "os",
                                     "ossaudiodev",
                                     "pathlib",
                                     "pdb",
                                     "pickle",
                                     "pickletools",
                                     "pipes",
                                     "pkgutil",
                                     "platform",
                                     "plistlib",
                                     "poplib",
                                     "posix",
                                     "posixpath",
                                     "pprint",
                                     "profile",
                                     "pstats",
                                     "pty",
                                     "pwd",
                                     "py_compile",
                                     "pyclbr",
                                     "pydoc",
                                     "pydoc_data",
                                     "pyexpat",
                                     "queue",
                                     "quopri",
                                     "random",
                                     "re",
                                     "readline",
                                     "reprlib",
                                     "resource",
                                     "rlcompleter",
                                     "runpy",
                                     "sched",
                                     "secrets",
                                     "select",
                                     "selectors",
                                     "shelve",
                                     "shlex",
                                     "shutil",
                                     "signal",
                                     "site",
                                     "smtpd",
                                     "smtplib",
                                     "sndhdr",
                                     "socket",
                                     "socketserver",
                                     "spwd",
                                     "sqlite3",
                                     "sre_compile",
                                     "sre_constants",
                                     "sre_parse",
                                     "ssl",
                                     "stat",
                                     "statistics",
                                     "string",
                                     "stringprep",
                                     "struct",
                                     "subprocess",
                                     "sunau",
                                     "symtable",
                                     "sys",
                                     "sysconfig",
                                     "syslog",
                                     "tabnanny",
                                     "tarfile",
                                     "telnetlib",
                                     "tempfile",
                                     "termios",
                                     "textwrap",
                                     "threading",
                                     "time",
                                     "timeit",
                                     "token",
                                     "tokenize",
                                     "tomllib",
                                     "trace",
                                     "traceback",
                                     "tracemalloc",
                                     "tty",
                                     "types",
                                     "typing",
                                     "unicodedata",
                                     "unittest",
                                     "urllib",
                                     "uu",
                                     "uuid",
                                     "venv",
                                     "warnings",
                                     "wave",
                                     "weakref",
                                     "webbrowser",
                                     "winreg",
                                     "winsound",
                                     "wsgiref",
                                     "xdrlib",
                                     "xml",
                                     "xmlrpc",
                                     "zipapp",
                                     "zipfile",
                                     "zipimport",
                                     "zlib",
                                     "zoneinfo"};

#define N_STDLIB (sizeof(stdlib) / sizeof(stdlib[0]))
/* Longest module name looked up; longer ones are not in the list. */
#define NAME_MAX_LEN 64

static int cmp_name(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

static bool is_word_char(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (unsigned char)c >= 0x80;
}

/* The cursor over the code. */
struct scan {
	const char *p, *end;
};

/* Skips blanks and line continuations, not newlines (a statement ends
 * there) nor ';'. */
static void skip_blanks(struct scan *s)
{
	while (s->p < s->end) {
		if (*s->p == ' ' || *s->p == '\t' || *s->p == '\f' || *s->p == '(' || *s->p == ')')
			s->p++;
		else if (*s->p == '\\' && s->p + 1 < s->end && s->p[1] == '\n')
			s->p += 2;
		else
			break;
	}
}

/* The next word at the cursor (not skipping anything), or len 0. */
static size_t word_at(const struct scan *s, const char **w)
{
	const char *q = s->p;

	while (q < s->end && is_word_char(*q))
		q++;
	*w = s->p;
	return (size_t)(q - s->p);
}

static bool is(const char *w, size_t n, const char *kw)
{
	return n == strlen(kw) && memcmp(w, kw, n) == 0;
}

/* The dotted name at the cursor (a.b.c); true when its first part is in
 * the list. A relative module (from . import x) is the run's own: plain. */
static bool module_plain(struct scan *s)
{
	char name[NAME_MAX_LEN + 1];
	const char *w;
	size_t n;

	skip_blanks(s);
	if (s->p < s->end && *s->p == '.') {
		while (s->p < s->end && (*s->p == '.' || is_word_char(*s->p)))
			s->p++;
		return true;
	}
	n = word_at(s, &w);
	if (!n || n > NAME_MAX_LEN)
		return n == 0; /* nothing named: not an import statement after all */
	memcpy(name, w, n);
	name[n] = '\0';
	s->p += n;
	while (s->p < s->end && (*s->p == '.' || is_word_char(*s->p)))
		s->p++;
	return bsearch(name, stdlib, N_STDLIB, sizeof(stdlib[0]), cmp_name) != NULL;
}

/* After "import": a.b [as c], d ... to the end of the statement. */
static bool import_list_plain(struct scan *s)
{
	const char *w;
	size_t n;

	for (;;) {
		if (!module_plain(s))
			return false;
		skip_blanks(s);
		n = word_at(s, &w);
		if (is(w, n, "as")) {
			s->p += n;
			skip_blanks(s);
			s->p += word_at(s, &w);
			skip_blanks(s);
		}
		if (s->p >= s->end || *s->p != ',')
			return true;
		s->p++;
	}
}

/* Whether the word at w begins a statement (only blanks between it and the
 * start of the code, a newline, ';' or ':'): "from" there is an import,
 * elsewhere it is raise ... from, yield from. */
static bool statement_start(const char *code, const char *w)
{
	while (w > code && (w[-1] == ' ' || w[-1] == '\t' || w[-1] == '\f'))
		w--;
	return w == code || w[-1] == '\n' || w[-1] == ';' || w[-1] == ':';
}

bool mcpx_code_plain(const char *code, size_t len)
{
	struct scan s = {code, code + len};

	while (s.p < s.end) {
		const char *w;
		size_t n = word_at(&s, &w);

		if (!n) {
			s.p++;
			continue;
		}
		s.p += n;
		/* A word inside a dotted name (x.import_module) counts too. */
		if (is(w, n, "__import__") || is(w, n, "import_module"))
			return false;
		if (is(w, n, "import") && !import_list_plain(&s))
			return false;
		if (!is(w, n, "from") || !statement_start(code, w))
			continue;
		/* from a.b import c, d: the module is a.b; the names after its
		 * "import" are not modules (and no other word matters). */
		if (!module_plain(&s))
			return false;
		skip_blanks(&s);
		n = word_at(&s, &w);
		if (is(w, n, "import"))
			s.p += n;
	}
	return true;
}
