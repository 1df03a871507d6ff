# Writes past RLIMIT_FSIZE: Python ignores SIGXFSZ, so write fails with EFBIG.
written = 0
try:
    with open("big.bin", "wb") as f:
        chunk = b"x" * 65536
        for _ in range(256):
            f.write(chunk)
            f.flush()
            written += len(chunk)
    print("fill=ok")
except OSError as e:
    print("fill=errno:%d" % e.errno)
print("written_kib=%d" % (written // 1024))
