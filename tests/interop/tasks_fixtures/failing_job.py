# The conformance suite's "failing_job": a tool error after a second (the
# policy makes it run only as a task).
import time


def handler(args, ctx):
    time.sleep(1)
    raise RuntimeError("failing_job always fails")
