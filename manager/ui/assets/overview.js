// The overview's live part: the same rows the server rendered, redrawn from each update of /live/overview.
'use strict';

function browserRow(b) {
  const tr = el('tr');
  tr.dataset.key = b.key;
  tr.append(
    el('td', 'store', null, link(b.href, b.name), ' ', el('span', 'slug', b.slug)),
    el('td', 'backend', b.backend),
    el('td', 'status', null, el('span', 'pill ' + b.status, b.status)),
    el('td', 'pid num', b.pid),
    el('td', 'uptime', b.uptime),
    el('td', 'relaunches' + (b.spent ? ' spent' : ''), b.relaunches),
    el('td', 'clients num', b.clients),
    el('td', 'tabs num', b.tabs),
  );
  return tr;
}

function taskRow(t) {
  const tr = el('tr');
  tr.dataset.id = t.id;
  tr.append(
    el('td', 'id', null, el('code', '', t.id)),
    el('td', 'store', null, link(t.href, t.store)),
    el('td', 'status', null, el('span', 'pill ' + t.status, t.status)),
    el('td', 'lease', t.lease),
  );
  return tr;
}

function eventRow(e) {
  const tr = el('tr', e.alert ? 'alert' : '');
  tr.append(el('td', 'time', e.time), el('td', 'kind', e.kind), el('td', 'store', e.store),
    el('td', 'message', e.message));
  return tr;
}

// handoffCard is a pending handoff, as the template draws it.
function handoffCard(h) {
  const art = el('article', 'handoff');
  art.id = 'handoff-' + h.id;
  art.dataset.id = h.id;
  const store = link(h.store_href, h.store);
  store.className = 'store';
  const form = el('form', 'answer');
  form.method = 'post';
  form.action = '/handoffs/' + encodeURIComponent(h.id) + '/answer';
  const note = el('input');
  Object.assign(note, { type: 'text', name: 'note', maxLength: 4000,
    placeholder: 'Note for the agent (optional): what you did, a code it needs…' });
  note.setAttribute('aria-label', 'Note for the agent');
  const done = el('button', '', 'Done');
  Object.assign(done, { type: 'submit', name: 'status', value: 'done' });
  const cant = el('button', 'danger', "Can't help");
  Object.assign(cant, { type: 'submit', name: 'status', value: 'cant_help' });
  form.append(note, ' ', done, ' ', cant);
  art.append(el('p', 'reason', h.reason),
    el('p', 'who', null, store, ' · task ', el('code', 'task', h.task), ' · session ', el('code', '', h.session),
      ' · asked ', el('span', 'asked', h.asked), ' · ', el('span', 'left', h.left), ' · ', el('span', 'nowrap', 'id ', el('code', '', h.id))),
    el('ul', 'handoff-tabs'), el('p', 'no-tabs empty'), form, el('p', 'answer-error'));
  art.lastChild.hidden = true;
  updateHandoff(art, h);
  return art;
}

// updateHandoff redraws what changes in a card, never its form: the person may be typing a note.
function updateHandoff(art, h) {
  art.querySelector('.asked').textContent = h.asked;
  art.querySelector('.left').textContent = h.left;
  art.querySelector('.handoff-tabs').replaceChildren(...h.tabs.map((t) =>
    el('li', '', null, link(t.href, t.title || '(no title)'), ' ', el('span', 'url', t.url))));
  const none = art.querySelector('.no-tabs');
  none.textContent = h.no_tabs || '';
  none.hidden = !h.no_tabs;
}

// renderHandoffs keeps the cards already shown in place (moving one would take the focus from its note),
// appends new ones (they are the newest, so the order stays oldest first) and drops answered ones.
function renderHandoffs(list) {
  const box = document.getElementById('handoffs');
  const shown = new Map([...box.children].map((a) => [a.dataset.id, a]));
  const live = new Set(list.map((h) => h.id));
  for (const [id, art] of shown) if (!live.has(id)) art.remove();
  for (const h of list) {
    const art = shown.get(h.id);
    if (art) updateHandoff(art, h);
    else box.append(handoffCard(h));
  }
  document.getElementById('handoffs-section').hidden = list.length === 0;
  document.getElementById('handoffs-count').textContent = list.length + ' waiting';
  document.title = (list.length ? '(' + list.length + ') ' : '') + 'Overview · vibe-browser';
}

// answer sends a card's form (vibePost, forms.js) and shows a refusal in the card itself.
function answer(e) {
  e.preventDefault();
  const form = e.target;
  const error = form.closest('.handoff').querySelector('.answer-error');
  const buttons = form.querySelectorAll('button');
  const sent = vibePost(form, e.submitter); // before the buttons are disabled: a disabled one is not sent
  for (const b of buttons) b.disabled = true;
  sent.then((url) => location.assign(url), (err) => {
    error.textContent = err.message;
    error.hidden = false;
    for (const b of buttons) b.disabled = false;
  });
}

function render(ov) {
  document.getElementById('version').textContent = ov.version;
  document.getElementById('home').textContent = ov.home;
  const error = document.getElementById('error');
  error.textContent = ov.error || '';
  error.hidden = !ov.error;
  document.getElementById('attention').hidden = !ov.attention;
  document.getElementById('attention-text').textContent = ov.latest;
  renderHandoffs(ov.handoffs);
  document.getElementById('summary').textContent = ov.summary;
  document.getElementById('no-stores').hidden = ov.stores > 0;
  fill('browsers', null, ov.browsers, browserRow);
  document.getElementById('tasks-count').textContent = ov.tasks.length;
  document.getElementById('tasks').hidden = ov.tasks.length === 0;
  fill('tasks', 'no-tasks', ov.tasks, taskRow);
  document.getElementById('events').hidden = ov.events.length === 0;
  fill('events', 'no-events', ov.events, eventRow);
}

document.getElementById('handoffs').addEventListener('submit', answer);
vibeLive('/live/overview', 'overview', render);
