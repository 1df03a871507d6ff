// loopback.mjs - preloaded (node --import) into a server written elsewhere
// that listens on all interfaces at a fixed port (the "everything" server's
// Streamable HTTP mode: app.listen(process.env.PORT || 3001)), so that a
// test can start it on 127.0.0.1 at a port the kernel picks: every
// net.Server.listen(port[, cb]) without a host binds 127.0.0.1, and the port
// it got is printed on stdout as "PORT <n>" once it listens.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || typeof args[0] === "string") {
    const port = Number(args[0]);
    const cb = args.find((a) => typeof a === "function");
    this.once("listening", () => process.stdout.write(`PORT ${this.address().port}\n`));
    return cb ? listen.call(this, port, "127.0.0.1", cb) : listen.call(this, port, "127.0.0.1");
  }
  return listen.apply(this, args);
};
