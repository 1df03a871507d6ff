# Syscalls through a foreign ABI must kill the process (SIGSYS): the filter
# only describes the native table. stdin: "x32", "i386" or "int80-socket".
import ctypes
import mmap
import sys

mode = sys.stdin.readline().strip()
libc = ctypes.CDLL(None, use_errno=True)
if mode == "x32":
    libc.syscall.restype = ctypes.c_long
    r = libc.syscall(ctypes.c_long(0x40000000 | 39))  # x32 getpid
    print("x32=returned:%d" % r)
else:
    if mode == "i386":
        # mov eax, 20 (i386 getpid); int 0x80; ret
        code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])
    else:
        # "int80-socket": eax 41 with AF_INET, SOCK_STREAM in both calling
        # conventions. Linux's i386 table reads dup(2); a runtime that runs
        # int 0x80 through the native table (gVisor 2022-12) reads
        # socket(AF_INET, SOCK_STREAM, 0), which the filter must deny.
        code = bytes([0xB8, 41, 0, 0, 0, 0xBB, 2, 0, 0, 0, 0xB9, 1, 0, 0, 0, 0x31, 0xD2,
                      0xBF, 2, 0, 0, 0, 0xBE, 1, 0, 0, 0, 0xCD, 0x80, 0xC3])
    buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(code)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    print("%s=returned:%d" % (mode, ctypes.CFUNCTYPE(ctypes.c_int)(addr)()))
