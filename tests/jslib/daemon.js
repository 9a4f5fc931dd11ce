'use strict';
// Waiting for a spawned rmqcoord daemon's READY line (node built-ins only),
// shared by tests/e2e and tests/browser. Once it listens, `rmqcoord serve`
// prints on stdout:
//
//   READY remoting=HOST:PORT[,HOST:PORT...] http=HOST:PORT|off
//
// The harnesses spawn the daemon themselves (their own arguments, log file
// and bookkeeping of live processes) and hand the child to waitReady.

const READY_RE = /^READY remoting=(\S+) http=(\S+)\s*$/;

// Number of the port at the end of HOST:PORT.
function portOf(addr) {
  return Number(addr.slice(addr.lastIndexOf(':') + 1));
}

// The parsed READY line: { remoting: [HOST:PORT...], port (of the first),
// http: HOST:PORT or null (off), httpPort: number or null }; null when line
// is not a READY line.
function parseReady(line) {
  const m = READY_RE.exec(line);
  if (!m) return null;
  const remoting = m[1].split(',');
  const http = m[2] === 'off' ? null : m[2];
  return { remoting, port: portOf(remoting[0]), http, httpPort: http ? portOf(http) : null };
}

// Resolves to parseReady's result once the child cp prints its READY line
// on stdout (which must be a pipe). Rejects, after a SIGKILL so that a failed
// start leaves no process behind, when the child exits or fails to spawn
// first, or after timeoutMs; what names the daemon in the error, and
// detail() (optional) is appended to it (e.g. the tail of its log). Only
// reads stdout: other listeners see every chunk too.
function waitReady(cp, { timeoutMs = 10000, what = 'daemon', detail = () => '' } = {}) {
  return new Promise((resolve, reject) => {
    let out = '';
    let timer = null;
    const done = (err, ready) => {
      clearTimeout(timer);
      cp.stdout.off('data', onData);
      cp.off('exit', onExit);
      cp.off('error', onError);
      if (err) {
        try { cp.kill('SIGKILL'); } catch (_) { /* already gone */ }
        const more = detail();
        err.message += more ? '\n' + more : '';
        reject(err);
      } else {
        resolve(ready);
      }
    };
    const onData = (chunk) => {
      out += chunk;
      const lines = out.split('\n');
      out = lines.pop(); // an unfinished line waits for its end
      for (const line of lines) {
        const r = parseReady(line);
        if (r) return done(null, r);
      }
    };
    const onExit = (code, signal) => done(new Error(`${what} exited before READY (code ${code}, signal ${signal})`));
    const onError = (err) => done(err);
    cp.stdout.setEncoding('utf8');
    cp.stdout.on('data', onData);
    cp.once('exit', onExit);
    cp.once('error', onError);
    timer = setTimeout(() => done(new Error(`timeout after ${timeoutMs} ms: ${what} READY line`)), timeoutMs);
  });
}

module.exports = { READY_RE, parseReady, waitReady };
