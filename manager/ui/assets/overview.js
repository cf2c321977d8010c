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

function render(ov) {
  document.getElementById('version').textContent = ov.version;
  document.getElementById('home').textContent = ov.home;
  const error = document.getElementById('error');
  error.textContent = ov.error || '';
  error.hidden = !ov.error;
  document.getElementById('attention').hidden = !ov.attention;
  document.getElementById('attention-text').textContent = ov.latest;
  document.getElementById('summary').textContent = ov.summary;
  document.getElementById('no-stores').hidden = ov.stores > 0;
  fill('browsers', null, ov.browsers, browserRow);
  document.getElementById('tasks-count').textContent = ov.tasks.length;
  document.getElementById('tasks').hidden = ov.tasks.length === 0;
  fill('tasks', 'no-tasks', ov.tasks, taskRow);
  document.getElementById('events').hidden = ov.events.length === 0;
  fill('events', 'no-events', ov.events, eventRow);
}

vibeLive('/live/overview', 'overview', render);
