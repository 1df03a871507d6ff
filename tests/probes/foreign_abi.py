# Syscalls through a foreign ABI must kill the process (SIGSYS): the filter
# only describes the native table. stdin: "x32" or "i386".
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
    # mov eax, 20 (i386 getpid); int 0x80; ret
    code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])
    buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(code)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    print("i386=returned:%d" % ctypes.CFUNCTYPE(ctypes.c_int)(addr)())
