/*
 * test_buf.c - the shared building blocks: the capped buffer (buf.h), base64
 * and base64url (base64.h), /proc stat parsing (procstat.h) and fd chores (fdutil.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base64.h"
#include "buf.h"
#include "check.h"
#include "fdutil.h"
#include "procstat.h"

static void test_buf(void)
{
	struct mcpx_buf b;
	char *p;
	size_t n;

	mcpx_buf_init(&b, 10);
	CHECK(strcmp(mcpx_buf_str(&b), "") == 0);
	CHECK(mcpx_buf_add(&b, "hello", 5) == 0);
	CHECK(mcpx_buf_addf(&b, "%d", 1234) == 0);
	CHECK(b.len == 9 && strcmp(mcpx_buf_str(&b), "hello1234") == 0);
	/* The cap holds: nothing of an append that would pass it is kept. */
	CHECK(mcpx_buf_add(&b, "ab", 2) == -E2BIG);
	CHECK(mcpx_buf_addf(&b, "%s", "xy") == -E2BIG);
	CHECK(b.len == 9);
	/* add_some keeps what fits and says how much. */
	CHECK(mcpx_buf_add_some(&b, "xyz", 3) == 1);
	CHECK(b.len == 10 && strcmp(mcpx_buf_str(&b), "hello1234x") == 0);
	CHECK(mcpx_buf_add_some(&b, "z", 1) == 0);
	CHECK(b.alloc <= 11);
	p = mcpx_buf_take(&b, &n);
	CHECK(p && n == 10 && memcmp(p, "hello1234x", 10) == 0 && p[10] == '\0');
	free(p);
	CHECK(b.len == 0 && b.data == NULL && b.max == 10);
	/* Binary data with NULs is kept as (data, len). */
	CHECK(mcpx_buf_add(&b, "a\0b", 3) == 0 && b.len == 3 && b.data[1] == '\0');
	mcpx_buf_reset(&b);
	CHECK(b.len == 0 && strcmp(mcpx_buf_str(&b), "") == 0);
	mcpx_buf_free(&b);
	CHECK(mcpx_buf_take(&b, &n) == NULL && n == 0);

	/* Growth over many small appends up to a large cap. */
	mcpx_buf_init(&b, 1 << 20);
	{
		int bad = 0;
		for (int i = 0; i < 110000; i++)
			bad += mcpx_buf_add(&b, "0123456789", 10) != (i < 104857 ? 0 : -E2BIG);
		CHECK_INT(bad, 0);
	}
	CHECK_INT(b.len, 1048570);
	mcpx_buf_free(&b);
}

static void test_base64(void)
{
	static const struct {
		const char *plain, *enc;
	} v[] = {{"", ""},
	         {"f", "Zg=="},
	         {"fo", "Zm8="},
	         {"foo", "Zm9v"},
	         {"foob", "Zm9vYg=="},
	         {"fooba", "Zm9vYmE="},
	         {"foobar", "Zm9vYmFy"}};
	char out[64];
	ssize_t n;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		size_t len = strlen(v[i].plain);
		CHECK(mcpx_base64_encoded_len(len) == strlen(v[i].enc));
		CHECK(mcpx_base64_encode(v[i].plain, len, out) == strlen(v[i].enc));
		CHECK(strcmp(out, v[i].enc) == 0);
		n = mcpx_base64_decode(v[i].enc, strlen(v[i].enc), out, sizeof(out));
		CHECK(n == (ssize_t)len && memcmp(out, v[i].plain, len) == 0);
	}
	/* Unpadded input is accepted; malformed input is refused. */
	CHECK(mcpx_base64_decode("Zm8", 3, out, sizeof(out)) == 2);
	CHECK(mcpx_base64_decode("Z", 1, out, sizeof(out)) == -EINVAL);
	CHECK(mcpx_base64_decode("Zm9v!", 5, out, sizeof(out)) == -EINVAL);
	CHECK(mcpx_base64_decode("Zm 9v", 5, out, sizeof(out)) == -EINVAL);
	CHECK(mcpx_base64_decode("Zm8==", 5, out, sizeof(out)) == -EINVAL);
	CHECK(mcpx_base64_decode("Zh==", 4, out, sizeof(out)) == -EINVAL); /* non-zero tail bits */
	CHECK(mcpx_base64_decode("Zm9vYmFy", 8, out, 5) == -EINVAL);       /* over cap */
	/* Every byte value survives a round trip. */
	{
		unsigned char all[256], back[256];
		char enc[400];
		for (int i = 0; i < 256; i++)
			all[i] = (unsigned char)i;
		mcpx_base64_encode(all, sizeof(all), enc);
		CHECK(mcpx_base64_decode(enc, strlen(enc), back, sizeof(back)) == 256);
		CHECK(memcmp(all, back, 256) == 0);
	}
}

/* base64url (RFC 4648 section 5, unpadded): the session ids' encoding. */
static void test_base64url(void)
{
	const unsigned char bytes[] = {0xfb, 0xff, 0xbf, 0x66};
	unsigned char all[256], back[256];
	char enc[400];

	CHECK(mcpx_base64url_encoded_len(4) == 6);
	CHECK(mcpx_base64url_encode(bytes, sizeof(bytes), enc) == 6);
	CHECK(strcmp(enc, "-_-_Zg") == 0); /* standard: "+/+/Zg==" */
	CHECK(mcpx_base64url_decode("-_-_Zg", 6, back, sizeof(back)) == 4);
	CHECK(memcmp(back, bytes, 4) == 0);
	/* Neither padding nor the standard alphabet's characters. */
	CHECK(mcpx_base64url_decode("-_-_Zg==", 8, back, sizeof(back)) == -EINVAL);
	CHECK(mcpx_base64url_decode("+/+/Zg", 6, back, sizeof(back)) == -EINVAL);
	/* Canonical only: the unused low bits of the last character are zero. */
	CHECK(mcpx_base64url_decode("-_-_Zh", 6, back, sizeof(back)) == -EINVAL);
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	CHECK(mcpx_base64url_encode(all, sizeof(all), enc) == mcpx_base64url_encoded_len(256));
	CHECK(strchr(enc, '=') == NULL && strchr(enc, '+') == NULL && strchr(enc, '/') == NULL);
	CHECK(mcpx_base64url_decode(enc, strlen(enc), back, sizeof(back)) == 256);
	CHECK(memcmp(all, back, 256) == 0);
}

static int find_self(const struct mcpx_procstat *ps, void *arg)
{
	return ps->pid == *(pid_t *)arg;
}

/* mcpx_proc_each_file's callback: counts the status files naming our pid. */
static void count_self(const char *text, void *arg)
{
	char want[64];

	snprintf(want, sizeof(want), "\nPid:\t%d\n", (int)getpid());
	if (strstr(text, want))
		(*(int *)arg)++;
}

static void test_proc_each_file(void)
{
	int seen = 0;

	/* Our own thread is in our task/ directory, exactly once. */
	CHECK(mcpx_proc_each_file("/proc/self/task", "status", count_self, &seen) == 0);
	CHECK(seen == 1);
	seen = 0;
	CHECK(mcpx_proc_each_file("/proc", "status", count_self, &seen) == 0);
	CHECK(seen == 1);
	CHECK(mcpx_proc_each_file("/proc/0x0/none", "status", count_self, &seen) == -ENOENT);
}

static void test_procstat(void)
{
	struct mcpx_procstat ps;
	pid_t self = getpid();
	volatile unsigned long spin = 0;

	while (spin < 50000000ul)
		spin++;
	CHECK(mcpx_procstat_read(self, &ps) == 0);
	CHECK(ps.pid == self && ps.ppid == getppid() && ps.pgrp == getpgrp());
	CHECK(ps.session == getsid(0));
	CHECK(ps.state == 'R');
	CHECK(ps.rss_kb > 0);
	CHECK(ps.cpu_ms > 0);
	CHECK(mcpx_procstat_scan(find_self, &self) == 1);
	CHECK(mcpx_procstat_read(0x7ffffff0, &ps) == -ENOENT);
	/* A child's CPU shows as the parent's children_cpu_ms once reaped. */
	CHECK(ps.children_cpu_ms == 0);
	{
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			volatile unsigned long n = 0;

			while (n < 100000000ul)
				n++;
			_exit(0);
		}
		CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
		CHECK(mcpx_procstat_read(self, &ps) == 0);
		CHECK(ps.children_cpu_ms > 0);
	}
}

static void test_fdutil(void)
{
	int p[2], fd;

	CHECK(pipe(p) == 0);
	CHECK(mcpx_set_nonblock(p[0]) == 0 && (fcntl(p[0], F_GETFL) & O_NONBLOCK));
	CHECK(mcpx_set_cloexec(p[0]) == 0 && (fcntl(p[0], F_GETFD) & FD_CLOEXEC));
	fd = p[0];
	mcpx_close_fd(&p[0]);
	CHECK(p[0] == -1 && fcntl(fd, F_GETFD) < 0);
	mcpx_close_fd(&p[0]);
	mcpx_close_fd(&p[1]);
	CHECK(mcpx_set_nonblock(-1) == -EBADF);
}

int main(void)
{
	test_buf();
	test_base64();
	test_base64url();
	test_procstat();
	test_proc_each_file();
	test_fdutil();
	CHECK_DONE();
}
