// The tab page's live view: one WebSocket; binary messages are JPEG frames, text messages are JSON
// (meta: size, URL, title, who controls the tab; error: a refused or failed input; end: the view is over).
// On a human tab, and on an agent's tab this viewer took over, pointer, wheel, keys, paste and the address
// bar go back on the same socket as JSON; so do Take over ("hold") and Release.
'use strict';

const root = document.getElementById('tab');
const human = root.dataset.human === 'true';
// controlling: this viewer's input goes to the tab (its own human tab, or an agent's tab it holds).
let controlling = human || root.dataset.hold === 'you';
const screen = document.getElementById('screen');
const badge = document.getElementById('live');
const noteBox = document.getElementById('note');
let meta = { width: 0, height: 0 };
let ws = null;
let lastURL = null;
let noteTimer = 0;

function show(state, text) {
  badge.className = 'live ' + state;
  badge.textContent = text;
  document.body.classList.toggle('stale', state === 'lost');
}

function note(text, sticky) {
  noteBox.textContent = text;
  noteBox.hidden = false;
  clearTimeout(noteTimer);
  if (!sticky) noteTimer = setTimeout(() => { noteBox.hidden = true; }, 6000);
}

// fit sizes the picture to the tab's aspect: as wide as the page allows, short enough that the whole tab
// shows without scrolling to reach its bottom, and never larger than the frame's own pixels nor the tab's
// own size: a tab smaller than the view shows at 1:1 in its middle, sharp, instead of stretched and blurred.
function fit() {
  if (!meta.width || !meta.height) return;
  const avail = screen.parentElement.clientWidth - 12;
  const tall = Math.max(240, window.innerHeight - screen.parentElement.getBoundingClientRect().top - 24);
  let w = Math.min(avail, tall * meta.width / meta.height, meta.width);
  if (screen.naturalWidth) w = Math.min(w, screen.naturalWidth);
  screen.style.width = Math.floor(w) + 'px';
}
window.addEventListener('resize', fit);
// A frame of another size (the tab resized, or the first frame) fits the picture again.
let naturalWidth = 0;
screen.addEventListener('load', () => {
  if (screen.naturalWidth === naturalWidth) return;
  naturalWidth = screen.naturalWidth;
  fit();
});

// hidden matches the characters a page's title or URL may hide things with, as untrusted.Escaped (Go) does:
// controls, bidi controls, zero-width characters. setText shows each as its escape, marked, as the server's
// pages do, so a title cannot turn the page's text around or hide part of itself.
const hidden = /[\u0000-\u001f\u007f-\u009f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;
function setText(el, text) {
  el.textContent = '';
  let at = 0;
  for (const m of text.matchAll(hidden)) {
    el.append(text.slice(at, m.index));
    const esc = document.createElement('span');
    esc.className = 'esc';
    const c = m[0].charCodeAt(0);
    esc.textContent = c < 0x80 ? '\\x' + c.toString(16).padStart(2, '0') : '\\u' + c.toString(16).padStart(4, '0');
    el.append(esc);
    at = m.index + m[0].length;
  }
  el.append(text.slice(at));
  el.title = text;
}

function onMeta(m) {
  meta = m;
  fit();
  // The frame's size in CSS pixels of the tab, for whoever maps a point of the picture (tests too).
  screen.dataset.width = m.width;
  screen.dataset.height = m.height;
  setText(document.getElementById('title'), m.title || '(no title)');
  document.title = (m.title || 'Tab').replace(hidden, '') + ' · vibe-browser';
  if (!human) {
    setText(document.getElementById('url'), m.url);
    setHold(m.hold);
  }
  // The takeover's human tab opens where this tab is now.
  const humanURL = document.getElementById('human-url');
  if (humanURL) humanURL.value = m.url;
  const address = document.getElementById('address');
  // The address bar follows the tab unless the person is typing in it.
  if (m.url !== lastURL && document.activeElement !== address) address.value = m.url;
  lastURL = m.url;
}

// setHold shows who controls an agent's tab: "you" (this viewer took it over), "other" (another viewer
// did) or "" (its agent).
function setHold(state) {
  controlling = state === 'you';
  root.classList.toggle('held', controlling);
  screen.classList.toggle('input', controlling);
  document.getElementById('nav').hidden = !controlling;
  document.getElementById('url-line').hidden = controlling;
  document.getElementById('hold-none').hidden = state !== '';
  document.getElementById('hold-you').hidden = state !== 'you';
  document.getElementById('hold-other').hidden = state !== 'other';
  document.getElementById('hold').hidden = state !== '';
  document.getElementById('release').hidden = state !== 'you';
}

function connect() {
  // The frames are scaled to what this page shows, never wider than 1280 device pixels.
  const w = Math.min(1280, Math.round(screen.parentElement.clientWidth * (window.devicePixelRatio || 1)));
  // The socket's path is relative to the session's base, as every link of the page is.
  const url = new URL(root.dataset.socket + '?w=' + w, document.baseURI);
  url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  ws = new WebSocket(url);
  ws.binaryType = 'blob';
  let ended = false;
  ws.addEventListener('open', () => show('ok', 'live'));
  ws.addEventListener('message', (msg) => {
    if (typeof msg.data !== 'string') {
      const url = URL.createObjectURL(msg.data);
      screen.addEventListener('load', () => URL.revokeObjectURL(url), { once: true });
      screen.src = url;
      document.getElementById('waiting').hidden = true;
      return;
    }
    const m = JSON.parse(msg.data);
    if (m.type === 'meta') onMeta(m);
    else if (m.type === 'error') note(m.message, false);
    else if (m.type === 'end') { ended = true; note(m.message, true); show('lost', 'view ended'); }
  });
  ws.addEventListener('close', () => {
    if (ended) return;
    show('lost', 'view lost: reconnecting… (if this lasts, go back to the store page, or run vibe-browser ui again)');
    setTimeout(connect, 2000);
  });
}

function send(m) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m));
}

function mods(e) {
  return (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);
}

// point maps a position on the scaled picture to the frame's CSS pixels.
function point(e) {
  const r = screen.getBoundingClientRect();
  return {
    x: Math.max(0, Math.min(meta.width, (e.clientX - r.left) * meta.width / r.width)),
    y: Math.max(0, Math.min(meta.height, (e.clientY - r.top) * meta.height / r.height)),
  };
}

const buttonNames = ['left', 'middle', 'right', 'back', 'forward'];

function mouse(event, e) {
  if (!meta.width) return;
  const p = point(e);
  send({ type: 'mouse', event, x: p.x, y: p.y, button: event === 'move' ? 'none' : buttonNames[e.button] || 'none',
    buttons: e.buttons, clicks: event === 'move' ? 0 : (e.detail || 1), mods: mods(e) });
}

// text is what a keydown types: printable keys, Enter as a carriage return (it submits forms).
function text(e) {
  if (e.ctrlKey || e.metaKey) return '';
  if (e.key === 'Enter') return '\r';
  return e.key.length === 1 ? e.key : '';
}

if (!human) {
  document.getElementById('hold').addEventListener('click', () => send({ type: 'hold' }));
  document.getElementById('release').addEventListener('click', () => send({ type: 'release' }));
}

// Input goes to the tab only while this viewer controls it; otherwise the picture is only a picture.
{
  let lastMove = 0;
  screen.addEventListener('mousedown', (e) => {
    if (!controlling) return;
    e.preventDefault();
    mouse('down', e);
    // Without preventScroll, focusing a picture taller than the window scrolls it under the pointer.
    screen.focus({ preventScroll: true });
  });
  screen.addEventListener('mouseup', (e) => {
    if (!controlling) return;
    e.preventDefault();
    mouse('up', e);
  });
  screen.addEventListener('mousemove', (e) => {
    if (!controlling) return;
    const now = Date.now();
    if (now - lastMove < 30 && e.buttons === 0) return; // hover needs no more than ~30 moves a second
    lastMove = now;
    mouse('move', e);
  });
  screen.addEventListener('contextmenu', (e) => { if (controlling) e.preventDefault(); });
  screen.addEventListener('wheel', (e) => {
    if (!controlling) return;
    e.preventDefault();
    if (!meta.width) return;
    const p = point(e);
    send({ type: 'wheel', x: p.x, y: p.y, dx: e.deltaX, dy: e.deltaY, mods: mods(e) });
  }, { passive: false });
  screen.addEventListener('keydown', (e) => {
    if (!controlling) return;
    // Paste is the browser's own (the paste event below); everything else goes to the tab.
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'v') return;
    e.preventDefault();
    send({ type: 'key', event: 'down', key: e.key, code: e.code, keyCode: e.keyCode, text: text(e), mods: mods(e) });
  });
  screen.addEventListener('keyup', (e) => {
    if (!controlling) return;
    e.preventDefault();
    send({ type: 'key', event: 'up', key: e.key, code: e.code, keyCode: e.keyCode, mods: mods(e) });
  });
  // A paste goes to the focused element or the body; only one aimed at the picture is the tab's.
  document.addEventListener('paste', (e) => {
    if (!controlling || document.activeElement !== screen) return;
    e.preventDefault();
    const t = e.clipboardData.getData('text/plain');
    if (t) send({ type: 'text', text: t });
  });
  document.getElementById('nav').addEventListener('submit', (e) => {
    e.preventDefault();
    send({ type: 'navigate', url: document.getElementById('address').value });
    screen.focus();
  });
  for (const id of ['back', 'forward', 'reload']) {
    document.getElementById(id).addEventListener('click', () => send({ type: id }));
  }
}

connect();
