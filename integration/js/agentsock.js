// The agents' socket as a hostile agent uses it (issue 37), run as a store's agent user by the quotas test;
// one JSON object per stdout line.
//
//   node agentsock.js flood SOCKET TOKEN   for each request of the plan on stdin ([{method, path, body,
//                                          times}]), send it times times, one after another, and print
//                                          {statuses: {status: count}, first: the first answer, refusal: the
//                                          first non-2xx answer}
//   node agentsock.js hold SOCKET N        open N connections and keep those the manager keeps, idle: print
//                                          {held, refused: closed by the manager, answered: of those, with an
//                                          answer, errors, refusal: the first answer} once all were tried, then
//                                          {held} each second; exit when stdin closes
'use strict';
const http = require('http');
const net = require('net');

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function request(socketPath, token, method, path, body) {
  return new Promise((resolve) => {
    const data = body === undefined ? '' : JSON.stringify(body);
    const headers = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data), Connection: 'close' };
    if (token !== '-') headers.Authorization = 'Bearer ' + token;
    const req = http.request({ socketPath, method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, body: text }));
    });
    req.on('error', (err) => resolve({ status: 0, body: String(err) }));
    req.end(data);
  });
}

async function flood(socketPath, token) {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  for (const step of JSON.parse(input)) {
    const statuses = {};
    let first = null;
    let refusal = null;
    for (let i = 0; i < (step.times || 1); i++) {
      const r = await request(socketPath, token, step.method || 'POST', step.path, step.body);
      statuses[r.status] = (statuses[r.status] || 0) + 1;
      if (!first) first = r;
      if (!refusal && (r.status < 200 || r.status > 299)) refusal = r;
    }
    out({ statuses, first, refusal });
  }
}

async function hold(socketPath, n) {
  let summarized = false;
  const open = new Set();
  let refused = 0;
  let answered = 0;
  let errors = 0;
  let refusal = null;
  const connectOne = () => new Promise((resolve) => {
    const s = net.createConnection({ path: socketPath });
    let said = '';
    s.on('connect', () => { open.add(s); resolve(true); });
    s.on('data', (d) => { said += d; });
    s.on('error', (err) => {
      open.delete(s);
      if (err.code === 'EAGAIN' || err.code === 'ECONNREFUSED') resolve(false); // the backlog is full: again
      else { errors++; resolve(true); }
    });
    s.on('close', () => {
      if (!open.delete(s) || summarized) return; // after the summary, a close is the idle time's
      refused++;
      if (said) {
        answered++;
        if (!refusal) refusal = said;
      }
    });
  });
  let tried = 0;
  const worker = async () => {
    while (tried < n) {
      tried++;
      while (!(await connectOne())) await new Promise((r) => setTimeout(r, 5));
    }
  };
  await Promise.all(Array.from({ length: 200 }, worker));
  await new Promise((r) => setTimeout(r, 1000)); // the refusals of the last ones arrive
  summarized = true;
  out({ held: open.size, refused, answered, errors, refusal });
  const tick = setInterval(() => out({ held: open.size }), 1000);
  process.stdin.resume();
  process.stdin.on('end', () => { clearInterval(tick); for (const s of open) s.destroy(); process.exit(0); });
}

const [mode, socketPath, arg] = process.argv.slice(2);
(mode === 'flood' ? flood(socketPath, arg) : hold(socketPath, Number(arg))).catch((err) => {
  out({ error: String(err && err.stack || err) });
  process.exit(1);
});
