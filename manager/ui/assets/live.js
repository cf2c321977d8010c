// The live channel every page shares: one EventSource per page, its state shown in #live.
'use strict';

// vibeLive opens the page's stream at path and calls onData with each `event` message's JSON. When the
// stream breaks it says so and retries: the browser retries by itself while the server answered before;
// a refused stream (the manager restarted, the session ended) is closed for good, so it is reopened here.
function vibeLive(path, event, onData) {
  const badge = document.getElementById('live');
  let last = 0;
  const show = (state, text) => {
    badge.className = 'live ' + state;
    badge.textContent = text;
    // What the page shows may be out of date while the stream is down: say so by dimming it.
    document.body.classList.toggle('stale', state === 'lost');
  };
  const open = () => {
    const es = new EventSource(path);
    es.addEventListener('open', () => show('ok', 'live'));
    es.addEventListener(event, (msg) => {
      last = Date.now();
      show('ok', 'live');
      onData(JSON.parse(msg.data));
    });
    es.addEventListener('error', () => {
      show('lost', 'connection lost: retrying… what you see may be out of date (if this lasts, run vibe-browser ui again)');
      if (es.readyState === EventSource.CLOSED) setTimeout(open, 3000);
    });
  };
  open();
  return () => last;
}

// el makes an element with a class and text; children are appended.
function el(tag, cls, text, ...children) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  for (const c of children) e.append(c);
  return e;
}

// link is an <a> with text, or the bare text when there is no href.
function link(href, text) {
  if (!href) return document.createTextNode(text);
  const a = el('a', '', text);
  a.href = href;
  return a;
}

// fill replaces the rows of a table's body, and shows the table or its empty state.
function fill(tableId, emptyId, rows, makeRow) {
  const table = document.getElementById(tableId);
  table.tBodies[0].replaceChildren(...rows.map(makeRow));
  if (emptyId) {
    document.getElementById(emptyId).hidden = rows.length > 0;
  }
}
