# Allocates past RLIMIT_AS: Python must raise MemoryError, not get killed.
blocks = []
try:
    big = bytearray(4 * 1024**3)
    print("big=ok")
except MemoryError:
    print("big=MemoryError")
try:
    while True:
        blocks.append(bytearray(16 * 1024**2))
except MemoryError:
    print("loop=MemoryError")
    print("loop_mib=%d" % (16 * len(blocks)))
