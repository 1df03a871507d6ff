/*
 * warm.c - the bootstrap a warm interpreter runs (and, in fork-server mode,
 * the zygote's request loop and its children's way into the run's sandbox),
 * and the fixed-size header that hands a run its code.
 *
 * The bootstrap is trusted code that runs before any user code, inside the
 * full sandbox. It does not touch the network or files outside its workdir;
 * it only imports modules, waits on stdin (the zygote: on its control
 * socket), and hands control to the user's code in the real __main__ module
 * (so pickling and multiprocessing behave as in a cold `python main.py`). Tracebacks skip the bootstrap's frame, and
 * after the code the process exits the way Python would (threads joined,
 * atexit run, streams flushed) but without tearing down preloaded modules,
 * which would cost more than the code itself.
 */
#include "warm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "runner.h"

/* Below one argv string's limit (MAX_ARG_STRLEN, 128 KiB). */
#define BOOTSTRAP_MAX (126u * 1024u)

static const char boot_head[] = "import os, sys\n"
				"def _mcpx_boot(preload, fork_server):\n"
				"    import resource\n"
				"    try:\n"
				"        import ctypes\n"
				"        _prctl = ctypes.CDLL(None, use_errno=True).prctl\n"
				/* Non-dumpable while waiting: same-uid processes cannot
				 * open /proc/<pid>/fd/0 or read our memory. */
				"        _prctl(4, 0, 0, 0, 0)\n"
				"    except Exception:\n"
				"        _prctl = None\n"
				/* Preload noise (font-cache warnings, say) must not
				 * reach the next user's stderr. */
				"    saved = os.dup(2)\n"
				"    null = os.open('/dev/null', os.O_WRONLY)\n"
				"    os.dup2(null, 2)\n"
				"    os.close(null)\n"
				"    for name in preload:\n"
				"        try:\n"
				"            __import__(name)\n"
				"        except BaseException:\n"
				"            pass\n"
				"    os.dup2(saved, 2)\n"
				"    os.close(saved)\n"
				/* A zygote serves forks until the server closes the
				 * control socket; only its children return here. */
				"    if fork_server:\n"
				"        _mcpx_zygote()\n"
				/* One NUL byte on stdout says "preloaded, waiting": the
				 * server hands code only to a ready interpreter. */
				"    os.write(1, b'\\0')\n"
				/* A fixed-size header: one read, and no byte of the
				 * program's own stdin is consumed. */
				"    hdr = b''\n"
				"    while len(hdr) < 32:\n"
				"        c = os.read(0, 32 - len(hdr))\n"
				"        if not c:\n"
				"            os._exit(0)\n"
				"        hdr += c\n"
				"    n, cpu = (int(x) for x in hdr.split())\n"
				"    parts, left = [], n\n"
				"    while left:\n"
				"        c = os.read(0, min(left, 1 << 20))\n"
				"        if not c:\n"
				"            os._exit(0)\n"
				"        parts.append(c)\n"
				"        left -= len(c)\n"
				"    src = b''.join(parts)\n"
				/* One byte on stdout says "I have the whole code": until
				 * it arrives, the server knows the code never ran. */
				"    os.write(1, b'\\1')\n"
				/* The CPU limit counts from here, not from the preload. */
				"    ru = resource.getrusage(resource.RUSAGE_SELF)\n"
				"    soft = int(ru.ru_utime + ru.ru_stime) + 1 + cpu\n"
				"    hard = soft + 1\n"
				"    cur = resource.getrlimit(resource.RLIMIT_CPU)[1]\n"
				"    if cur != resource.RLIM_INFINITY:\n"
				"        hard = min(hard, cur)\n"
				"        soft = min(soft, hard)\n"
				"    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))\n"
				"    if _prctl:\n"
				"        _prctl(4, 1, 0, 0, 0)\n"
				/* The server wrote main.py (as for a cold run). */
				"    return src, os.path.join(os.getcwd(), 'main.py')\n";

/* The fork server's zygote (forkserver.c speaks the other end). It runs
 * after the preload, inside the zygote's own sandbox, and never runs user
 * code: it only answers requests on its control socket (fd 4), one JSON
 * object per SOCK_SEQPACKET message. {"fork": ...} with the run's three pipe
 * ends and an fd of its workdir attached (and a fifth fd, the run's broker
 * channel, when it has egress) forks a child that enters the run's
 * sandbox (_mcpx_enter)
 * and then returns into _mcpx_boot, which waits for the code like any warm
 * interpreter. {"reap": pid} reaps a child the server has finished with.
 *
 * Which children the zygote reaps, and when (a rewrite must keep this):
 * - A run leader (a pid it forked and answered with) is reaped only when the
 *   server sends {"reap": pid}: until then its zombie keeps its pid and
 *   process group reserved while the server kills and sweeps the run.
 * - Every other child, whoever made it (a run process that used CLONE_PARENT,
 *   which seccomp refuses, or anything else that became its child), is
 *   killed with SIGKILL and reaped, blocking until it is gone, before the
 *   zygote handles each message from the server and again right after it
 *   reaped a leader, so the answer to {"reap": pid} is sent only when the
 *   zygote has no child left but leaders the server has not released. The
 *   list comes from /proc/self/task/<pid>/children (the zygote has one
 *   thread); such a child is unreaped, so its pid cannot be reused between
 *   the listing and the kill. Nothing of a run can thus hold a zombie, and
 *   with it a share of RLIMIT_NPROC, beyond the run's own reaping.
 * tests/unit/test_forkserver.c (test_reaps_strays) proves it with filters
 * that let CLONE_PARENT through. */
static const char boot_zygote[] =
	"def _mcpx_zygote():\n"
	"    import ctypes, gc, json, socket\n"
	"    libc = ctypes.CDLL(None, use_errno=True)\n"
	"    libc.syscall.restype = ctypes.c_long\n"
	"    ctl = socket.socket(fileno=4)\n"
	/* Only the forking thread survives a fork: if the preload started
	 * threads, a child could inherit a lock one of them held. Refuse, and
	 * the server falls back to a fresh interpreter per run. */
	"    if len(os.listdir('/proc/self/task')) > 1:\n"
	"        os.write(2, b'mcp-exec: the preload started threads; a zygote cannot fork safely\\n')\n"
	"        os._exit(3)\n"
	"    init = json.loads(ctl.recv(1 << 20))\n"
	"    me = os.getpid()\n"
	/* Built once here, not in every child: the Landlock attribute and
	 * the seccomp program every child installs. */
	"    class Attr(ctypes.Structure):\n"
	"        _fields_ = [('fs', ctypes.c_uint64), ('net', ctypes.c_uint64),\n"
	"                    ('scoped', ctypes.c_uint64)]\n"
	"    class Beneath(ctypes.Structure):\n"
	"        _pack_ = 1\n"
	"        _fields_ = [('allowed', ctypes.c_uint64), ('fd', ctypes.c_int32)]\n"
	"    class Prog(ctypes.Structure):\n"
	"        _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]\n"
	"    ll = init.get('landlock')\n"
	"    lock = (Attr(ll['fs'], ll['net'], ll['scoped']), Beneath, ll['rules']) if ll else None\n"
	"    bpf = bytes.fromhex(init.get('bpf') or '')\n"
	"    buf = ctypes.create_string_buffer(bpf, len(bpf))\n"
	"    prog = Prog(len(bpf) // 8, ctypes.addressof(buf)) if bpf else None\n"
	/* What the preload built is never collected in a child; keeping the
	 * collector off it keeps those pages shared (copy-on-write). */
	"    gc.freeze()\n"
	"    ctl.send(b'{\"ready\": true}')\n"
	"    leaders = set()\n"
	"    kids = '/proc/self/task/%d/children' % me\n"
	"    def reap_strays():\n"
	"        try:\n"
	"            with open(kids) as f:\n"
	"                found = [int(p) for p in f.read().split()]\n"
	"        except OSError:\n"
	"            return\n"
	"        for p in found:\n"
	"            if p in leaders:\n"
	"                continue\n"
	"            try:\n"
	"                os.kill(p, 9)\n"
	"                os.waitpid(p, 0)\n"
	"            except OSError:\n"
	"                pass\n"
	"    while True:\n"
	"        msg, fds, _, _ = socket.recv_fds(ctl, 1 << 16, 5)\n"
	"        if not msg:\n"
	"            os._exit(0)\n"
	"        reap_strays()\n"
	"        req = json.loads(msg)\n"
	"        if 'reap' in req:\n"
	"            try:\n"
	"                _, st, ru = os.wait4(req['reap'], 0)\n"
	"                rep = {'status': st, 'utime_us': round(ru.ru_utime * 1e6),\n"
	"                       'stime_us': round(ru.ru_stime * 1e6), 'maxrss_kb': ru.ru_maxrss}\n"
	"            except OSError as e:\n"
	"                rep = {'errno': e.errno}\n"
	"            leaders.discard(req['reap'])\n"
	"            reap_strays()\n"
	"            ctl.send(json.dumps(rep).encode())\n"
	"            continue\n"
	"        pid = -1\n"
	"        if len(fds) in (4, 5):\n"
	"            try:\n"
	"                pid = os.fork()\n"
	"            except OSError as e:\n"
	"                rep = {'errno': e.errno}\n"
	"        else:\n"
	"            rep = {'errno': 22}\n"
	"        if pid == 0:\n"
	"            ctl.detach()\n"
	"            _mcpx_enter(libc, req, fds, lock, prog, me)\n"
	"            return\n"
	"        for fd in fds:\n"
	"            os.close(fd)\n"
	"        if pid > 0:\n"
	"            leaders.add(pid)\n"
	"            rep = {'pid': pid}\n"
	"        ctl.send(json.dumps(rep).encode())\n"
	/* The child's way into the run's sandbox, in the order sandbox_child.c
	 * uses: its own session, only the run's fds, its workdir and limits,
	 * then a nested Landlock ruleset (writes only in its own workdir; the
	 * zygote's layer still applies beneath it) and, last, the run's
	 * seccomp filter stacked on the zygote's (which lacks the setsid
	 * denial). Any failure ends the child with 127 before it says ready. */
	"def _mcpx_enter(libc, req, fds, lock, prog, zygote):\n"
	"    import ctypes, resource\n"
	"    L = ctypes.c_long\n"
	"    wd = req['workdir']\n"
	"    step = 'pdeathsig'\n"
	"    try:\n"
	"        if libc.prctl(1, L(9), L(0), L(0), L(0)) != 0 or os.getppid() != zygote:\n"
	"            raise OSError(3, 'the zygote is gone')\n"
	"        step = 'setsid'\n"
	"        os.setsid()\n"
	/* Through the fd the server opened, not the path: a run executing
	 * meanwhile may have made the directories above it untraversable (the
	 * server puts them back before this child's code arrives). First, so
	 * that no dup2 below can have replaced that fd. */
	"        step = 'chdir'\n"
	"        os.fchdir(fds[3])\n"
	"        step = 'fds'\n"
	"        for i, fd in enumerate(fds[:3]):\n"
	"            os.dup2(fd, i)\n"
	/* A fifth fd is the run's end of the broker channel: fd 4, as in a
	 * cold run (sandbox.h, MCPX_SANDBOX_CHANNEL_FD). */
	"        step = 'close_fds'\n"
	"        spans = ((3, 0xffffffff),)\n"
	"        if len(fds) == 5:\n"
	"            os.dup2(fds[4], 4)\n"
	"            os.environ['MCPX_CHANNEL_FD'] = '4'\n"
	"            spans = ((3, 3), (5, 0xffffffff))\n"
	"        for lo, hi in spans:\n"
	"            if libc.syscall(L(436), L(lo), L(hi), L(0)) != 0:\n"
	"                top = resource.getrlimit(resource.RLIMIT_NOFILE)[0]\n"
	"                os.closerange(lo, min(hi + 1, top))\n"
	"        step = 'rlimits'\n"
	"        inf = resource.RLIM_INFINITY\n"
	"        for res, soft, hard in req['rlimits']:\n"
	"            cur = resource.getrlimit(res)[1]\n"
	"            hard = cur if hard < 0 or (cur != inf and hard > cur) else hard\n"
	"            soft = hard if soft < 0 or (hard != inf and soft > hard) else soft\n"
	"            resource.setrlimit(res, (soft, hard))\n"
	"        if lock:\n"
	"            step = 'landlock'\n"
	"            attr, Beneath, rules = lock\n"
	"            rs = libc.syscall(L(444), ctypes.byref(attr), L(ctypes.sizeof(attr)), L(0))\n"
	"            if rs < 0:\n"
	"                raise OSError(ctypes.get_errno(), 'landlock_create_ruleset')\n"
	"            for path, rights, optional in rules:\n"
	"                try:\n"
	"                    fd = os.open(path or '.', os.O_PATH | os.O_CLOEXEC)\n"
	"                except FileNotFoundError:\n"
	"                    if optional:\n"
	"                        continue\n"
	"                    raise\n"
	"                b = Beneath(rights, fd)\n"
	"                rc = libc.syscall(L(445), L(rs), L(1), ctypes.byref(b), L(0))\n"
	"                os.close(fd)\n"
	"                if rc != 0:\n"
	"                    raise OSError(ctypes.get_errno(), 'landlock_add_rule ' + (path or wd))\n"
	"            if libc.syscall(L(446), L(rs), L(0)) != 0:\n"
	"                raise OSError(ctypes.get_errno(), 'landlock_restrict_self')\n"
	"            os.close(rs)\n"
	"        if prog:\n"
	"            step = 'seccomp'\n"
	"            if libc.prctl(22, L(2), ctypes.byref(prog), L(0), L(0)) != 0:\n"
	"                raise OSError(ctypes.get_errno(), 'PR_SET_SECCOMP')\n"
	/* What a fresh interpreter would have: its own HOME and TMPDIR, and
	 * fresh random state (random reseeds itself at fork). */
	"        step = 'environment'\n"
	"        for k in ('HOME', 'TMPDIR', 'MPLCONFIGDIR'):\n"
	"            os.environ[k] = wd\n"
	"        m = sys.modules.get('tempfile')\n"
	"        if m:\n"
	"            m.tempdir = None\n"
	"        m = sys.modules.get('numpy.random')\n"
	"        if m:\n"
	"            m.seed()\n"
	/* Touch what every run uses (compile, exec, the exit path) while
	 * waiting, so its copy-on-write page faults are paid before the
	 * request rather than after it. */
	"        step = 'warm-up'\n"
	"        exec(compile('pass', '<warm-up>', 'exec', dont_inherit=True), {})\n"
	"        import atexit, threading\n"
	"        atexit._ncallbacks()\n"
	"        threading.main_thread()\n"
	"    except BaseException as e:\n"
	"        try:\n"
	"            os.write(2, ('mcp-exec: sandbox setup failed at step %s: %s\\n' % (step, e)).encode())\n"
	"        finally:\n"
	"            os._exit(127)\n";

bool mcpx_warm_preload_valid(const char *csv)
{
	const char *p = csv;
	bool start = true;

	for (; *p; p++) {
		char c = *p;
		if (c == ',' || c == '.') {
			if (start)
				return false;
			start = true;
			continue;
		}
		if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (!start && c >= '0' && c <= '9')) {
			start = false;
			continue;
		}
		return false;
	}
	return !start || p == csv;
}

const char *mcpx_warm_preload_list(const char *configured, bool fork_server)
{
	if (strcmp(configured, MCPX_WARM_PRELOAD_AUTO) != 0)
		return configured;
	return fork_server ? MCPX_WARM_PRELOAD_FORK : MCPX_WARM_PRELOAD_FRESH;
}

char *mcpx_warm_bootstrap(const char *preload_csv, bool fork_server)
{
	/* The list is validated (module names only), so it can be quoted
	 * into Python source without escaping. */
	struct mcpx_buf b;
	const char *p = mcpx_warm_preload_list(preload_csv, fork_server);
	int rc;

	mcpx_buf_init(&b, BOOTSTRAP_MAX);
	rc = mcpx_buf_addf(&b, "%s%s_MCPX_FORK = %s\n_MCPX_PRELOAD = [", boot_head,
			   fork_server ? boot_zygote : "", fork_server ? "True" : "False");
	while (!rc && *p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		rc = mcpx_buf_addf(&b, "'%.*s',", (int)len, p);
		p += len + (comma ? 1 : 0);
	}
	if (!rc)
		rc = mcpx_buf_adds(&b, "]\n");
	/* The runner and the support modules are installed before the preload
	 * starts, so a zygote's children inherit them. */
	if (!rc)
		rc = mcpx_runner_append(&b);
	if (!rc)
		rc = mcpx_buf_adds(&b, "_mcpx_run(*_mcpx_boot(_MCPX_PRELOAD, _MCPX_FORK))\n");
	if (rc) {
		mcpx_buf_free(&b);
		return NULL;
	}
	return mcpx_buf_take(&b, NULL);
}

size_t mcpx_warm_header(char *buf, size_t len, size_t code_len, unsigned cpu_s)
{
	int n = snprintf(buf, len, "%020zu %010u\n", code_len, cpu_s);
	return n == MCPX_WARM_HEADER_LEN && (size_t)n < len ? (size_t)n : 0;
}
