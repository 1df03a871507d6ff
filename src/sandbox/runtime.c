/*
 * runtime.c - the kernel beneath the server, and what each layer holds there.
 *
 * What it does: decides, once, whether the server runs on the node's own
 * kernel (runc), under gVisor, or in a VM of its own (Kata, Firecracker):
 * as configured (MCP_EXEC_RUNTIME), or, on auto, gVisor when it is seen and
 * the host otherwise. It writes the per-layer report --check-config prints:
 * which layer holds, which is absent, and what the runtime stands in for.
 *
 * How gVisor is seen, without the kernel log (which a pod may not read):
 * gVisor's Sentry tells the kernel it claims to be in two places it writes
 * itself. /proc/cmdline names the kernel image it "booted",
 * BOOT_IMAGE=/vmlinuz-<release>-gvisor (releases 2022-12 and 2024-07 of
 * Debian's runsc: /vmlinuz-4.4.0-gvisor), and newer releases report that
 * release through uname as well (4.19.0-gvisor). A Linux kernel named that
 * way would have to be built so on purpose. A VM cannot be told from bare
 * metal this way (its guest kernel is an ordinary Linux), so vm is only
 * ever configured.
 *
 * What it does not do: decide whether the server may start; the caller asks
 * mcpx_sandbox_landlock_replaced and makes that judgement.
 */
#include "sandbox.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "seccomp_probe.h"

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* The BOOT_IMAGE word of /proc/cmdline, when it names a -gvisor kernel. */
static bool cmdline_says_gvisor(char *why, size_t len)
{
	char buf[1024];
	const char *img, *end;
	ssize_t n = -1;
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n <= 0)
		return false;
	buf[n] = '\0';
	img = strstr(buf, "BOOT_IMAGE=");
	if (!img)
		return false;
	img += strlen("BOOT_IMAGE=");
	end = img + strcspn(img, " \n");
	if (!ends_with(img, (size_t)(end - img), "-gvisor"))
		return false;
	snprintf(why, len, "seen: /proc/cmdline boots %.*s", (int)(end - img), img);
	return true;
}

static bool uname_says_gvisor(char *why, size_t len)
{
	struct utsname u;

	if (uname(&u) < 0 || !ends_with(u.release, strlen(u.release), "-gvisor"))
		return false;
	snprintf(why, len, "seen: uname's release is %s", u.release);
	return true;
}

void mcpx_sandbox_set_runtime(struct mcpx_sandbox *sb, enum mcpx_runtime_class configured)
{
	if (configured != MCPX_RUNTIME_AUTO) {
		sb->runtime = configured;
		snprintf(sb->runtime_why, sizeof(sb->runtime_why), "configured (MCP_EXEC_RUNTIME)");
		return;
	}
	if (cmdline_says_gvisor(sb->runtime_why, sizeof(sb->runtime_why)) ||
	    uname_says_gvisor(sb->runtime_why, sizeof(sb->runtime_why))) {
		sb->runtime = MCPX_RUNTIME_GVISOR;
		return;
	}
	sb->runtime = MCPX_RUNTIME_HOST;
	snprintf(sb->runtime_why, sizeof(sb->runtime_why),
	         "no gVisor seen; a VM is only configured");
}

bool mcpx_sandbox_landlock_replaced(const struct mcpx_sandbox *sb)
{
	return sb->runtime == MCPX_RUNTIME_GVISOR || sb->runtime == MCPX_RUNTIME_VM;
}

/* What the kernel beneath stands in for, in one sentence. */
static const char *replaces(enum mcpx_runtime_class r)
{
	switch (r) {
	case MCPX_RUNTIME_GVISOR:
		return "the node's kernel: every syscall of the server and its runs is answered by "
		       "gVisor's Sentry, so a kernel bug no longer reaches the node";
	case MCPX_RUNTIME_VM:
		return "the node's kernel: the pod has a guest kernel of its own, so a kernel bug "
		       "stays in the VM; Landlock's ABI and the cgroup version are the guest's";
	default:
		return "nothing: the node's kernel is shared with every pod on the node, and a "
		       "kernel bug is the one way past the layers below";
	}
}

static void landlock_line(const struct mcpx_sandbox *sb, FILE *out)
{
	const struct mcpx_sandbox_layers *l = &sb->layers;

	if (l->landlock) {
		fprintf(out,
		        "  landlock: holds (ABI %d): writes only in the workdir, reads only the "
		        "runtime's directories%s%s\n",
		        l->landlock_abi, l->landlock_net ? ", TCP bind/connect denied" : "",
		        l->landlock_scope ? ", signals and abstract sockets scoped" : "");
		return;
	}
	if (l->fs_view) {
		fprintf(
		    out,
		    "  landlock: absent%s; its file rules replaced by the filesystem view below, "
		    "%s\n",
		    sb->runtime == MCPX_RUNTIME_GVISOR ? " (gVisor implements no Landlock)" : "",
		    mcpx_sandbox_landlock_replaced(sb)
		        ? "accepted under this runtime even with MCP_EXEC_REQUIRE_LANDLOCK"
		        : "refused with MCP_EXEC_REQUIRE_LANDLOCK");
		fprintf(out,
		        "  filesystem view: holds (%s): each run has a mount namespace of its own "
		        "holding only Landlock's paths, the runtime's read-only and the workdir "
		        "read-write; the token file, other runs' files and /tmp are not in it; "
		        "signals and abstract sockets are not scoped\n",
		        sb->fs_view_why);
		return;
	}
	fprintf(out,
	        "  landlock: absent%s; not replaced by the runtime: runs may write wherever "
	        "the run uid may and read what it may read (mounted secrets included: the "
	        "policy refuses credentials), %s\n",
	        sb->runtime == MCPX_RUNTIME_GVISOR ? " (gVisor implements no Landlock)" : "",
	        mcpx_sandbox_landlock_replaced(sb)
	            ? "accepted under this runtime even with MCP_EXEC_REQUIRE_LANDLOCK"
	            : "refused with MCP_EXEC_REQUIRE_LANDLOCK");
	fprintf(out, "  filesystem view: absent (%s)\n",
	        sb->fs_view_why[0] ? sb->fs_view_why : "not tried");
}

void mcpx_sandbox_report(const struct mcpx_sandbox *sb, FILE *out)
{
	const struct mcpx_sandbox_layers *l = &sb->layers;

	fprintf(out, "runtime: %s (%s)\n", mcpx_runtime_name(sb->runtime), sb->runtime_why);
	fprintf(out, "  the runtime replaces %s\n", replaces(sb->runtime));
	if (l->seccomp)
		fprintf(out,
		        "  seccomp: holds (a filter seen to act in a throwaway child; foreign "
		        "ABIs: %s)\n",
		        mcpx_seccomp_kill_name((enum mcpx_seccomp_kill)l->seccomp_kill));
	else
		fprintf(out, "  seccomp: absent (no filter could be seen to act): the server "
		             "refuses to start\n");
	landlock_line(sb, out);
	fprintf(out, "  uid: runs as %u%s\n", (unsigned)sb->run_uid,
	        l->uid_drop ? ", dropped from root, no groups" : ", the server's own uid");
	fprintf(out, "  no_new_privs, rlimits, own process group and kill: %s\n",
	        l->no_new_privs && l->rlimits ? "hold" : "partly absent");
	fprintf(out, "  server non-dumpable: %s%s; child subreaper: %s\n",
	        l->dumpable_off ? "holds" : "absent",
	        sb->runtime == MCPX_RUNTIME_GVISOR
	            ? " (gVisor serves /proc/<pid>/environ and maps to every process anyway: the "
	              "server's environment block is zeroed, its maps stay readable)"
	            : "",
	        l->subreaper ? "holds" : "absent");
	if (sb->runtime == MCPX_RUNTIME_GVISOR)
		fprintf(out,
		        "  run budget under gVisor: pages a run's processes share count once per "
		        "process (its smaps give no proportional size), so fork-heavy runs "
		        "reach MCP_EXEC_MEMORY_MB sooner; socket buffers are not counted (no "
		        "sock_diag): the pod's limit bounds them\n");
	fprintf(out, "  run exits seen through: %s\n",
	        l->pidfd ? "pidfds" : "a waitid thread per run (no pidfds here)");
}
