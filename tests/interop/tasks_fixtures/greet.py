# The conformance suite's "greet": answers at once (the policy makes it a
# tool that never runs as a task).
def handler(args, ctx):
    return "Hello, %s!" % args.get("name", "world")
