# The conformance suite's "slow_compute": sleeps `seconds`, then answers.
import time


def handler(args, ctx):
    time.sleep(args.get("seconds", 0))
    return {"label": args.get("label", ""), "slept_s": args.get("seconds", 0)}
