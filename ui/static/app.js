// The Agent NAS control room: one more client of the control API.
// Every datum reaches the page through textContent (el), never as
// markup; every call sends the session's CSRF token.
'use strict';

// gen counts the views shown: a view that finishes loading after the
// user moved on is dropped (show).
const state = { csrf: '', gen: 0 };

// show replaces the view with node if the view of generation gen is still
// the one shown.
function show(gen, node) {
  if (gen !== state.gen) return false;
  $('view').replaceChildren(node);
  return true;
}

// el builds an element: attrs are attributes ("text" sets textContent,
// "on" an object of listeners), children are nodes or strings.
function el(tag, attrs, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') n.textContent = String(v);
    else if (k === 'on') for (const [ev, fn] of Object.entries(v)) n.addEventListener(ev, fn);
    else n.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return n;
}

const $ = (id) => document.getElementById(id);

class APIError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

// api calls POST /_nas/v1/op with the cookie and the CSRF token.
async function api(op, body) {
  const res = await fetch('/_nas/v1/' + op, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-nas-csrf': state.csrf },
    body: JSON.stringify(body || {}),
  });
  let doc = {};
  try { doc = await res.json(); } catch (e) { doc = {}; }
  if (!res.ok) {
    const e = doc.error || {};
    const err = new APIError(res.status, e.code || 'Error', e.message || res.statusText, e.details);
    if (e.code === 'Unauthenticated') signedOut('Your session ended. Sign in again.');
    throw err;
  }
  return doc;
}

function banner(msg, kind) {
  const b = $('banner');
  b.textContent = msg || '';
  b.className = kind || 'error';
  b.hidden = !msg;
}

function showError(err) {
  banner((err.code ? err.code + ': ' : '') + err.message, 'error');
}

// Times.
function ago(t) {
  const s = Math.round((Date.now() - new Date(t).getTime()) / 1000);
  return span(Math.abs(s)) + (s >= 0 ? ' ago' : ' from now');
}
function until(t) {
  const s = Math.round((new Date(t).getTime() - Date.now()) / 1000);
  return s <= 0 ? 'passed' : 'in ' + span(s);
}
function span(s) {
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm';
  if (s < 86400) return Math.floor(s / 3600) + 'h ' + Math.floor((s % 3600) / 60) + 'm';
  return Math.floor(s / 86400) + 'd ' + Math.floor((s % 86400) / 3600) + 'h';
}
function when(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? '' : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}
function bytes(n) {
  if (n === undefined || n === null) return '';
  if (n < 0) return 'no limit';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : v) + ' ' + u[i];
}
const short = (h) => (h || '').slice(0, 12);

function kv(pairs) {
  const dl = el('dl', { class: 'kv' });
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === '') continue;
    dl.append(el('dt', { text: k }), el('dd', {}, v));
  }
  return dl;
}

function badge(text, kind) {
  return el('span', { class: 'badge ' + (kind || text), text: text });
}

// Sign-in and session.
function signedOut(msg) {
  state.csrf = '';
  $('nav').hidden = true;
  state.gen++;
  $('view').replaceChildren();
  $('signin').hidden = false;
  $('signin-error').textContent = msg || '';
}

async function signIn(ev) {
  ev.preventDefault();
  const form = new URLSearchParams();
  form.set('access_key', $('access_key').value);
  form.set('secret_key', $('secret_key').value);
  $('signin-submit').disabled = true;
  try {
    const res = await fetch('/_nas/ui/signin', {
      method: 'POST', credentials: 'same-origin',
      headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString(),
    });
    const doc = await res.json().catch(() => ({}));
    if (!res.ok) {
      $('signin-error').textContent = (doc.error && doc.error.message) || 'Sign-in failed.';
      return;
    }
    $('secret_key').value = '';
    started(doc.csrf);
  } finally {
    $('signin-submit').disabled = false;
  }
}

function started(csrf) {
  state.csrf = csrf;
  $('signin').hidden = true;
  $('nav').hidden = false;
  route();
}

async function signOut() {
  await fetch('/_nas/ui/signout', { method: 'POST', credentials: 'same-origin', headers: { 'x-nas-csrf': state.csrf } });
  banner('');
  signedOut('Signed out.');
}

async function boot() {
  $('signin-form').addEventListener('submit', signIn);
  $('signout').addEventListener('click', signOut);
  window.addEventListener('hashchange', route);
  const res = await fetch('/_nas/ui/session', { credentials: 'same-origin' });
  if (res.ok) {
    const doc = await res.json();
    started(doc.csrf);
  } else {
    signedOut('');
  }
}

// Routing: #/ inbox, #/gate/ID, #/leases, #/branches, #/records, #/run/RUN.
async function route() {
  if (!state.csrf) return;
  banner('');
  const gen = ++state.gen;
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  const view = $('view');
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', a.dataset.view === (parts[0] || 'inbox') ||
      (parts[0] === 'gate' && a.dataset.view === 'inbox') || (parts[0] === 'run' && a.dataset.view === 'records'));
  }
  view.replaceChildren(el('p', { class: 'muted', text: 'Loading…' }));
  try {
    let node;
    switch (parts[0]) {
      case 'gate': node = await gateView(parts[1]); break;
      case 'leases': node = await leasesView(); break;
      case 'branches': node = await branchesView(); break;
      case 'records': node = await recordsView({}); break;
      case 'run': node = await recordsView({ run: parts[1] }); break;
      default: node = await inboxView();
    }
    show(gen, node);
  } catch (err) {
    if (show(gen, el('div'))) showError(err);
  }
}

// The gate inbox: pending first, each with its age and timeout.
async function inboxView() {
  const { gates } = await api('gate/list', {});
  gates.sort((a, b) => (a.status === 'pending') !== (b.status === 'pending')
    ? (a.status === 'pending' ? -1 : 1) : new Date(b.created) - new Date(a.created));
  const pending = gates.filter((g) => g.status === 'pending').length;
  const list = el('ul', { class: 'cards', id: 'inbox' });
  for (const g of gates) {
    const c = g.card;
    const a = c.action || {};
    list.append(el('li', { class: 'card gate ' + g.status },
      el('a', { href: '#/gate/' + encodeURIComponent(g.gate_id), class: 'stretch' },
        el('div', { class: 'row' }, badge(g.status), el('span', { class: 'op', text: a.op }),
          el('span', { class: 'muted right', text: ago(g.created) })),
        el('div', { class: 'title', text: c.why || a.op + ' ' + (a.from || '') }),
        el('div', { class: 'muted' }, g.repo + ': ', el('code', { text: a.from || '' }), ' → ', el('code', { text: a.into || '' })),
        el('div', { class: 'row muted' }, el('span', { text: (a.files_changed || 0) + ' file(s)' }),
          g.status === 'pending' ? el('span', { class: 'right', text: 'times out ' + until(c.expires_at) }) : el('span', { class: 'right', text: g.decided_by ? 'by ' + g.decided_by : '' })))));
  }
  return el('div', {}, el('h1', { text: 'Gate inbox' }),
    el('p', { class: 'muted', text: pending + ' pending, ' + gates.length + ' in all' }),
    gates.length ? list : el('p', { text: 'No gates.' }));
}

function counts(changes) {
  const n = { A: 0, M: 0, D: 0 };
  for (const c of changes || []) n[c.kind] = (n[c.kind] || 0) + 1;
  return n.A + ' added, ' + n.M + ' modified, ' + n.D + ' deleted';
}

// The Gate Card, its diff and the decisions.
async function gateView(id) {
  const { gate: g } = await api('gate/get', { gate_id: id });
  const c = g.card;
  const a = c.action || {};
  let role = '';
  if (c.lease) {
    try {
      const { lease } = await api('lease/get', { lease_id: c.lease });
      role = lease.role + (lease.principal ? ' (' + lease.principal + ')' : '');
    } catch (e) { role = ''; }
  }
  const root = el('div', { class: 'gatecard', id: 'card', 'data-gate': g.gate_id, 'data-status': g.status });
  root.append(el('p', {}, el('a', { href: '#/', text: '← Inbox' })),
    el('h1', { text: c.why || a.op }),
    el('div', { class: 'row' }, badge(g.status), el('span', { class: 'op', text: a.op }),
      c.risk && c.risk.destructive ? badge('destructive', 'warn') : null,
      c.risk && c.risk.egress ? badge('egress', 'warn') : null),
    kv([
      ['Gate', g.gate_id], ['Repository', g.repo],
      ['Merge', a.from ? el('span', {}, el('code', { text: a.from }), ' → ', el('code', { text: a.into })) : ''],
      ['Run', c.run ? el('a', { href: '#/run/' + encodeURIComponent(c.run), text: c.run }) : ''],
      ['Lease', c.lease], ['Role', role],
      ['Session taint', c.risk && c.risk.session_taint && c.risk.session_taint.length ? c.risk.session_taint.join(', ') : 'clean'],
      ['Guard', c.risk && c.risk.guard],
      ['Changes', a.changes ? counts(a.changes) : ''],
      ['Digest', a.diff_sha256 ? el('code', { title: a.diff_sha256, text: short(a.diff_sha256) }) : ''],
      ['Opened', when(g.created) + ' (' + ago(g.created) + ')'],
      ['Times out', g.status === 'pending' ? when(c.expires_at) + ' (' + until(c.expires_at) + ')' : ''],
      ['Decided', g.decided_at ? when(g.decided_at) + ' by ' + (g.decided_by || '') : ''],
      ['Reason', g.reason], ['Merge commit', g.merge_commit ? el('code', { text: short(g.merge_commit) }) : ''],
      ['Approved paths', g.approved_paths ? g.approved_paths.join(', ') : ''],
    ]));
  if (c.read_manifest) {
    const m = c.read_manifest;
    root.append(el('h2', { text: 'What the run read' }), kv([
      ['Reads', m.entries], ['Bytes', bytes(m.bytes)], ['Pages', m.pages],
      ['First', when(m.first)], ['Last', when(m.last)], ['Manifest hash', el('code', { text: short(m.hash) })],
    ]));
  }
  if (c.checks && c.checks.length) root.append(el('h2', { text: 'Checks' }), checkList(c.checks, a.diff_sha256));
  if (a.requested && a.requested.length) {
    root.append(el('h2', { text: 'Requested authority' }),
      el('ul', {}, ...a.requested.map((r) => el('li', {}, el('code', { text: r.path }), ' ' + (r.actions || []).join(', ')))));
  }
  if (a.paths && a.paths.length) {
    root.append(el('h2', { text: 'Paths' }), el('ul', {}, ...a.paths.map((p) => el('li', {}, el('code', { text: p })))));
  }
  const pending = g.status === 'pending';
  const merge = a.op === 'merge';
  if (a.changes && a.changes.length) root.append(el('h2', { text: 'Diff' }), changeList(g, pending && merge));
  if (pending) root.append(decisionForm(g, merge));
  return root;
}

// checkList shows each pre-merge check's word on the card's digest; a
// required one that has not passed holds the approval back.
function checkList(checks, digest) {
  const kinds = { pass: 'allow', fail: 'denied', error: 'denied', pending: 'pending' };
  const ul = el('ul', { class: 'checks', id: 'checks' });
  for (const r of checks) {
    const stale = r.diff_sha256 && digest && r.diff_sha256 !== digest;
    ul.append(el('li', { class: 'check state-' + r.state, 'data-check': r.name },
      el('div', { class: 'row' }, badge(r.state, kinds[r.state] || 'warn'), el('code', { text: r.name }),
        el('span', { class: 'muted', text: (r.required ? 'required' : 'asked') + (r.attempts ? ', ' + r.attempts + ' attempt(s)' : '') +
          (r.finished ? ', ' + ago(r.finished) : '') + (stale ? ', for another digest' : '') })),
      r.message ? el('pre', { class: 'message', text: r.message }) : null));
  }
  return ul;
}

function changeList(g, choose) {
  const ul = el('ul', { class: 'changes', id: 'changes' });
  for (const ch of g.card.action.changes) {
    const box = choose ? el('input', { type: 'checkbox', class: 'pick', value: ch.key, 'aria-label': 'choose ' + ch.key }) : null;
    const out = el('div', { class: 'diff', hidden: true });
    const toggle = el('button', { type: 'button', class: 'link', text: 'show diff' });
    toggle.addEventListener('click', async () => {
      if (!out.hidden) { out.hidden = true; toggle.textContent = 'show diff'; return; }
      toggle.textContent = 'hide diff';
      out.hidden = false;
      if (!out.childNodes.length) out.append(await diffOf(g.gate_id, ch.key));
    });
    ul.append(el('li', { class: 'change kind-' + ch.kind },
      el('div', { class: 'row' }, box, badge(ch.kind, 'kind-' + ch.kind), el('code', { class: 'key', text: ch.key }),
        el('span', { class: 'muted', text: ch.kind !== 'D' ? bytes(ch.new_size || 0) : '' }), el('span', { class: 'right' }, toggle)),
      out));
  }
  return ul;
}

async function diffOf(gateID, path) {
  try {
    const d = await api('gate/diff', { gate_id: gateID, path: path });
    if (d.text) {
      const pre = el('pre', { class: 'unified' });
      for (const line of d.unified.split('\n')) {
        let cls = '';
        if (line.startsWith('+++') || line.startsWith('---')) cls = 'file';
        else if (line.startsWith('@@')) cls = 'hunk';
        else if (line.startsWith('+')) cls = 'add';
        else if (line.startsWith('-')) cls = 'del';
        pre.append(el('span', { class: cls, text: line + '\n' }));
      }
      return pre;
    }
    const side = (s) => s.present ? bytes(s.size) + (s.sha256 ? ', sha256 ' + short(s.sha256) : '') + (s.etag ? ', etag ' + s.etag : '') : 'absent';
    return kv([['Not shown', d.reason], ['Before', side(d.old)], ['After', side(d.new)]]);
  } catch (err) {
    return el('p', { class: 'error', text: err.code + ': ' + err.message });
  }
}

function decisionForm(g, merge) {
  const reason = el('input', { id: 'reason', placeholder: 'Reason (optional)', maxlength: 500 });
  const msg = el('p', { id: 'decision-msg', role: 'status' });
  const decide = async (op, body) => {
    banner('');
    msg.textContent = 'Working…';
    const gen = state.gen;
    let text;
    let kind = 'ok';
    try {
      const { gate: d } = await api(op, Object.assign({ gate_id: g.gate_id, reason: reason.value }, body));
      text = 'Gate ' + d.status + (d.merge_commit ? ': merged as ' + short(d.merge_commit) : '') + '.';
    } catch (err) {
      msg.textContent = '';
      if (err.code !== 'ApprovalVoid') { showError(err); return; }
      text = 'Approval void: the diff changed since this card was made, so nothing merged. ' + err.message;
      kind = 'error';
    }
    // The card again, as decided, then what happened.
    const node = await gateView(g.gate_id).catch(() => null);
    if (node && show(gen, node)) banner(text, kind);
  };
  const bound = merge ? { diff_sha256: g.card.action.diff_sha256 } : {};
  const buttons = el('div', { class: 'buttons' },
    el('button', { type: 'button', id: 'approve', class: 'approve', text: 'Approve', on: { click: () => decide('gate/approve', bound) } }),
    el('button', { type: 'button', id: 'deny', class: 'deny', text: 'Deny', on: { click: () => decide('gate/deny', {}) } }));
  if (merge) {
    buttons.append(el('button', {
      type: 'button', id: 'approve-narrowed', text: 'Approve selected', on: {
        click: () => {
          const paths = [...document.querySelectorAll('#changes input.pick:checked')].map((b) => b.value);
          if (!paths.length) { banner('Choose the paths to approve first.', 'error'); return; }
          decide('gate/approve', Object.assign({ paths: paths }, bound));
        },
      },
    }));
  }
  return el('div', { class: 'decide' }, el('h2', { text: 'Decide' }),
    merge ? el('p', { class: 'muted', text: 'Approve merges the whole diff above; Approve selected merges only the checked paths. Both are bound to digest ' + short(g.card.action.diff_sha256) + '.' }) : null,
    reason, buttons, msg);
}

// Runs and leases: live, expired, revoked, with what is left; revoke.
function leaseStatus(l) {
  if (l.revoked) return 'revoked';
  return new Date(l.expires_at) <= Date.now() ? 'expired' : 'live';
}

async function leasesView() {
  const { leases } = await api('lease/list', {});
  const root = el('div', {}, el('h1', { text: 'Runs and leases' }));
  const filter = el('select', { id: 'lease-filter', 'aria-label': 'show' },
    el('option', { value: 'all', text: 'all' }), el('option', { value: 'live', text: 'live' }),
    el('option', { value: 'expired', text: 'expired' }), el('option', { value: 'revoked', text: 'revoked' }));
  const list = el('ul', { class: 'cards', id: 'leases' });
  filter.addEventListener('change', () => {
    for (const li of list.children) li.hidden = filter.value !== 'all' && li.dataset.status !== filter.value;
  });
  root.append(el('div', { class: 'row' }, el('label', {}, 'Show ', filter),
    el('span', { class: 'muted right', text: leases.length + ' lease(s)' })), list);
  for (const l of leases) {
    const st = leaseStatus(l);
    const left = el('div', { class: 'muted remaining' });
    const li = el('li', { class: 'card lease ' + st, 'data-status': st, 'data-lease': l.lease_id },
      el('div', { class: 'row' }, badge(st), el('code', { text: l.lease_id }), el('span', { class: 'muted right', text: st === 'live' ? 'ends ' + until(l.expires_at) : when(l.revoked_at || l.expires_at) })),
      kv([['Run', el('a', { href: '#/run/' + encodeURIComponent(l.run), text: l.run })], ['Role', l.role], ['Principal', l.principal],
        ['Branch', l.repo + ' / ' + l.branch], ['Paths', (l.paths || []).join(', ')], ['Actions', (l.actions || []).join(', ')],
        ['Parent', l.parent]]),
      left);
    if (st === 'live') {
      const btn = el('button', { type: 'button', class: 'deny revoke', text: 'Revoke' });
      btn.addEventListener('click', async () => {
        if (btn.dataset.armed !== '1') { btn.dataset.armed = '1'; btn.textContent = 'Confirm revoke'; return; }
        try {
          const gen = state.gen;
          const { revoked } = await api('lease/revoke', { lease_id: l.lease_id });
          const node = await leasesView();
          if (show(gen, node)) banner('Revoked ' + revoked.join(', ') + '.', 'ok');
        } catch (err) { showError(err); }
      });
      li.append(el('div', { class: 'buttons' }, btn));
      api('lease/get', { lease_id: l.lease_id }).then((r) => {
        const m = r.remaining;
        left.textContent = 'Remaining: ' + bytes(m.bytes_read) + ' to read, ' + bytes(m.bytes_written) + ' to write, ' +
          (m.requests < 0 ? 'no limit on' : m.requests) + ' requests' + (r.session_taint && r.session_taint.length ? '; taint ' + r.session_taint.join(', ') : '');
      }).catch(() => { left.textContent = 'Remaining: unknown'; }).finally(() => { left.dataset.loaded = '1'; });
    }
    list.append(li);
  }
  if (!leases.length) root.append(el('p', { text: 'No leases.' }));
  return root;
}

// Branches, with what each changed since its fork point.
async function branchesView() {
  const { repos } = await api('repo/list', {});
  const root = el('div', { id: 'branches' }, el('h1', { text: 'Branches' }));
  for (const r of repos) {
    const { branches } = await api('branch/list', { repo: r.name });
    const ul = el('ul', { class: 'cards' });
    for (const b of branches) {
      const out = el('div', { class: 'changes-since' });
      const btn = el('button', { type: 'button', class: 'link', text: 'changes since fork' });
      btn.addEventListener('click', async () => {
        try {
          const { changes } = await api('changes/list', { repo: r.name, branch: b.name, limit: 200 });
          out.replaceChildren(changes.length ? el('ul', { class: 'changes' }, ...changes.map((c) =>
            el('li', { class: 'row' }, badge(c.kind, 'kind-' + c.kind), el('code', { text: c.key })))) : el('p', { class: 'muted', text: 'No changes.' }));
        } catch (err) { out.replaceChildren(el('p', { class: 'error', text: err.code + ': ' + err.message })); }
      });
      ul.append(el('li', { class: 'card' },
        el('div', { class: 'row' }, el('code', { class: 'title', text: b.name }), b.protected ? badge('protected', 'warn') : null,
          el('span', { class: 'muted right', text: 'head ' + short(b.head) })),
        kv([['Forked at', b.base ? short(b.base) : ''], ['Created', when(b.created)], ['Expires', b.expires_at ? when(b.expires_at) : '']]),
        b.name !== r.default_branch ? btn : null, out));
    }
    root.append(el('h2', { text: r.name }), ul);
  }
  if (!repos.length) root.append(el('p', { text: 'No repositories.' }));
  return root;
}

// The flight recorder, a page at a time, filterable; a run's timeline.
async function recordsView(f) {
  const root = el('div', {}, el('h1', { text: f.run ? 'Run ' + f.run : 'Flight recorder' }));
  const status = el('p', { id: 'verify', class: 'muted', text: 'Verifying the chain…' });
  api('record/verify', {}).then((v) => {
    status.className = v.ok ? 'ok' : 'error';
    status.textContent = v.ok ? 'Chain verified: ' + v.report.records + ' records, head #' + v.report.head.seq + ' ' + short(v.report.head.hash.replace('sha256:', ''))
      : 'Chain verification found ' + v.report.problems + ' problem(s): ' + v.problems.map((p) => p.kind + ' ' + p.detail).join('; ');
  }).catch((err) => { status.className = 'error'; status.textContent = err.message; });
  const run = el('input', { id: 'f-run', placeholder: 'run', value: f.run || '' });
  const lease = el('input', { id: 'f-lease', placeholder: 'lease' });
  const repo = el('input', { id: 'f-repo', placeholder: 'repository' });
  const kinds = el('input', { id: 'f-kinds', placeholder: 'kinds, e.g. merge,gate.decided' });
  const list = el('ol', { class: 'timeline', id: 'records' });
  const more = el('button', { type: 'button', text: 'Older', hidden: true });
  let cursor = '';
  const load = async (fresh) => {
    if (fresh) { list.replaceChildren(); cursor = ''; }
    const req = { run: run.value.trim(), lease: lease.value.trim(), repo: repo.value.trim(), limit: 50, cursor: cursor };
    const k = kinds.value.split(',').map((s) => s.trim()).filter(Boolean);
    if (k.length) req.kinds = k;
    try {
      const res = await api('record/list', req);
      for (const e of res.records) list.append(recordItem(e));
      cursor = res.next_cursor;
      more.hidden = !cursor;
      if (!list.children.length) list.append(el('li', { class: 'muted', text: 'No records.' }));
    } catch (err) { showError(err); }
  };
  more.addEventListener('click', () => load(false));
  const form = el('form', { class: 'filters', on: { submit: (ev) => { ev.preventDefault(); load(true); } } },
    run, lease, repo, kinds, el('button', { type: 'submit', text: 'Filter' }));
  root.append(status, form, list, more);
  await load(true);
  return root;
}

function recordItem(e) {
  const d = e.decision || {};
  const s = e.subject || {};
  return el('li', { class: 'event ' + (d.effect || '') },
    el('div', { class: 'row' }, el('span', { class: 'muted', text: '#' + e.seq }), el('strong', { text: e.kind }),
      d.effect ? badge(d.effect, d.effect === 'deny' ? 'denied' : 'approved') : null,
      el('span', { class: 'muted right', text: when(e.time) })),
    el('div', { class: 'muted' },
      [e.principal, e.run ? 'run ' + e.run : '', e.lease ? 'lease ' + e.lease : '', e.repo ? e.repo + (e.branch ? '/' + e.branch : '') : '']
        .filter(Boolean).join(' · ')),
    s.path || s.commit ? el('div', {}, el('code', { text: (s.path || '') + (s.commit ? '@' + short(s.commit) : '') })) : null,
    d.rule || d.reason ? el('div', { class: 'muted', text: [d.rule, d.reason].filter(Boolean).join(': ') }) : null);
}

document.addEventListener('DOMContentLoaded', () => { boot().catch(showError); });
