# Leaves behind what a hostile run would: symlinks to files outside the
# workdir, a directory it made unreadable, a very deep tree and a file in
# /dev/shm. Cleanup must remove all of it without touching the targets.
# stdin: the victim file and the victim directory, one per line.
import os
import sys

victim_file, victim_dir = sys.stdin.read().split("\n")[:2]
os.symlink(victim_file, "link_to_file")
os.symlink(victim_dir, "link_to_dir")
os.makedirs("locked/inner")
with open("locked/inner/f", "w") as f:
    f.write("x")
os.chmod("locked/inner", 0)
os.chmod("locked", 0o500)
os.mkdir("deep")
os.chdir("deep")
for _ in range(100):
    os.mkdir("d")
    os.chdir("d")
os.symlink(victim_dir, "deep_link")
with open("leaf", "w") as f:
    f.write("x")
with open("/dev/shm/mcpx-test-leftover-%d" % os.getpid(), "w") as f:
    f.write("x")
print("shm=mcpx-test-leftover-%d" % os.getpid())
print("made=1")
