// gpuq's dashboard: reads gpuqd's read-only JSON API (/api/v1/) with the viewer's bearer token
// and draws queues, jobs, the GPU map and usage. Everything a job or a user wrote is put on the
// page as text (textContent), never as markup.
'use strict';

const REFRESH_MS = 30000;
const MAX_JOBS = 500;
const params = new URLSearchParams(location.hash.slice(1));
if (params.has('token')) {
  sessionStorage.setItem('gpuq-token', params.get('token'));
  params.delete('token');
  history.replaceState(null, '', location.pathname + (params.toString() ? '#' + params.toString() : ''));
}
let selectedJob = params.get('job') || '';

function token() { return sessionStorage.getItem('gpuq-token') || ''; }

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

async function api(path) {
  const headers = {};
  if (token()) headers.Authorization = 'Bearer ' + token();
  const res = await fetch('/api/v1/' + path, { headers });
  let body = null;
  try { body = await res.json(); } catch (e) { body = { message: res.statusText }; }
  if (!res.ok) throw Object.assign(new Error(body.message || res.statusText), { status: res.status });
  return body;
}

// Every page of a list, up to `cap` items.
async function paged(path, key, cap) {
  let items = [], next = '', more = false;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page = await api(path + (next ? sep + 'page_token=' + encodeURIComponent(next) : ''));
    items = items.concat(page[key] || []);
    next = page.next_page_token || '';
  } while (next && items.length < cap);
  if (next || items.length > cap) more = true;
  return { items: items.slice(0, cap), more };
}

function showError(id, err) {
  const p = document.getElementById(id);
  p.hidden = !err;
  if (!err) return;
  p.textContent = err.status === 401 || err.status === 403
    ? 'Not shown to you: ' + err.message + (token() ? '' : ' Sign in with a token to see more.')
    : 'Could not load: ' + err.message;
}

const num = (v) => Number(v || 0);
const gpus = (milli) => { const g = num(milli) / 1000; return Number.isInteger(g) ? String(g) : g.toFixed(2); };
const stateName = (s) => String(s || '').replace('JOB_STATE_', '').toLowerCase();
function when(unix) {
  const t = num(unix);
  return t ? new Date(t * 1000).toISOString().replace('T', ' ').slice(0, 16) : '';
}
function duration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 3600) return Math.floor(s / 60) + 'm';
  if (s < 86400) return Math.floor(s / 3600) + 'h' + String(Math.floor(s % 3600 / 60)).padStart(2, '0') + 'm';
  return Math.floor(s / 86400) + 'd' + Math.floor(s % 86400 / 3600) + 'h';
}

// ---- queues: nominal, used, borrowed and lent GPUs per flavor, and the share

function queueBar(u, scale) {
  const W = 220, H = 16, x = (v) => Math.round(W * v / scale);
  const used = num(u.used), nominal = num(u.nominal), borrowed = num(u.borrowed), lent = num(u.lent);
  const within = Math.min(used, nominal);
  const s = svg('svg', { width: W + 2, height: H, class: 'bar', 'data-flavor': u.flavor, 'data-used': used,
    'data-nominal': nominal, 'data-borrowed': borrowed, 'data-lent': lent });
  s.append(svg('rect', { x: 0, y: 2, width: x(within), height: H - 4, class: 'used' }));
  s.append(svg('rect', { x: x(within), y: 2, width: x(Math.min(lent, Math.max(0, nominal - within))), height: H - 4, class: 'lent' }));
  s.append(svg('rect', { x: x(nominal), y: 2, width: x(borrowed), height: H - 4, class: 'borrowed' }));
  s.append(svg('line', { x1: x(nominal) + 1, x2: x(nominal) + 1, y1: 0, y2: H, class: 'nominal' }));
  return s;
}

async function loadQueues() {
  const { items } = await paged('queues', 'queues', 1000);
  let scale = 1000;
  for (const q of items) for (const u of q.usage || [])
    if (u.resource === 'gpu') scale = Math.max(scale, num(u.nominal), num(u.used));
  const body = document.querySelector('#queues tbody');
  body.replaceChildren();
  const select = document.getElementById('f-queue');
  const chosen = select.value;
  select.replaceChildren(el('option', { value: '', text: 'all' }));
  for (const q of items) {
    const bars = el('div');
    for (const u of q.usage || []) {
      if (u.resource !== 'gpu') continue;
      bars.append(el('div', {}, queueBar(u, scale), el('span', { class: 'barlabel',
        text: `${u.flavor}: ${gpus(u.used)} / ${gpus(u.nominal)}` +
          (num(u.borrowed) ? `, borrowed ${gpus(u.borrowed)}` : '') + (num(u.lent) ? `, lent ${gpus(u.lent)}` : '') })));
    }
    const share = q.share === 'Infinity' ? '∞' : (100 * num(q.share)).toFixed(1) + '%';
    body.append(el('tr', { 'data-queue': q.spec.name },
      el('td', { text: q.spec.name }), el('td', { text: q.spec.cohort || '' }),
      el('td', { class: 'num', text: String(q.pending) }), el('td', { class: 'num', text: String(q.admitted) }),
      el('td', { class: 'num', text: String(q.running) }), el('td', { class: 'num', text: share }), el('td', {}, bars)));
    select.append(el('option', { value: q.spec.name, text: q.spec.name }));
  }
  select.value = chosen;
  return items;
}

// ---- jobs, with the filters and the explanation of the one chosen

function jobGpus(job) {
  let total = 0;
  for (const ps of job.spec.pod_sets || []) {
    const g = Number((ps.resources || {}).gpu || 0);
    total += g * Math.max(1, ps.count || 1);
  }
  return total ? String(total) : '';
}

async function loadJobs() {
  const q = [], f = (id) => document.getElementById(id).value.trim();
  if (f('f-queue')) q.push('queue=' + encodeURIComponent(f('f-queue')));
  if (f('f-state')) q.push('state=' + encodeURIComponent(f('f-state')));
  if (f('f-owner')) q.push('owner=' + encodeURIComponent(f('f-owner')));
  const { items, more } = await paged('jobs' + (q.length ? '?' + q.join('&') : ''), 'jobs', MAX_JOBS);
  const body = document.querySelector('#jobs tbody');
  body.replaceChildren();
  const now = Date.now() / 1000;
  for (const j of items) {
    const state = j.stopping ? 'stopping' : j.held ? 'held' : stateName(j.state);
    let why = j.reason || '';
    if (state === 'pending' && num(j.estimated_start))
      why = `est. start in ${duration(num(j.estimated_start) - now)}` + (why ? ' — ' + why : '');
    const tr = el('tr', { class: 'job' + (j.spec.id === selectedJob ? ' selected' : ''), 'data-job': j.spec.id,
      'data-state': state },
      el('td', { text: j.spec.id }), el('td', { text: j.spec.name || '' }), el('td', { text: j.spec.queue }),
      el('td', { text: j.spec.owner }), el('td', { text: state }), el('td', { class: 'num', text: jobGpus(j) }),
      el('td', { text: when(j.submitted_at) }), el('td', { text: why }));
    tr.addEventListener('click', () => { selectedJob = j.spec.id; loadExplain(); markSelected(); });
    body.append(tr);
  }
  if (more) body.append(el('tr', {}, el('td', { colspan: 8, class: 'muted',
    text: `The first ${MAX_JOBS} shown; narrow the filters to see the rest.` })));
}

function markSelected() {
  for (const tr of document.querySelectorAll('#jobs tr.job'))
    tr.classList.toggle('selected', tr.dataset.job === selectedJob);
}

function explainText(job, e) {
  const lines = [`${job.spec.id} (${job.spec.queue}, ${stateName(job.state)}): ${e.reason || job.reason || ''}`];
  if (e.queue_pending) lines.push(`Place in its queue: ${e.queue_position} of ${e.queue_pending} pending`);
  if (e.cycle_queues) lines.push(`Its queue is offered ${e.cycle_rank} of ${e.cycle_queues} in the admission cycle`);
  const o = e.order;
  if (o && e.cycle_queues) {
    lines.push('Order (first to last): ' + (o.within_nominal ? 'within nominal quota' : 'borrowing') +
      `; share${o.flavor ? ' on ' + o.flavor : ''} after admission ${o.share_infinite ? '∞' : num(o.share).toFixed(1) + '‰'}` +
      ` (usage history ${num(o.history).toFixed(1)}‰, weight ${o.weight})` +
      `; priority ${o.priority}; submitted ${when(o.submitted_at)}`);
  }
  if ((e.quota || []).length) {
    lines.push('', 'Quota        flavor/resource    asks   nominal   used  borrowed  headroom  reachable');
    for (const q of e.quota) {
      const f = (v) => (q.resource === 'gpu' || q.resource === 'cpu' ? gpus(v) : String(num(v))).padStart(9);
      lines.push(`             ${(q.flavor + '/' + q.resource).padEnd(16)}${f(q.requested)}${f(q.nominal)}${f(q.used)}` +
        `${f(q.borrowed)}${f(q.headroom)}${f(q.reachable)}` + (q.cohort ? `  cohort ${q.cohort}: ${gpus(q.cohort_used)}` +
        ` of ${gpus(q.cohort_lendable)} lent drawn` : ''));
    }
  }
  if ((e.room || []).length) {
    lines.push('', 'Room         flavor   nodes  open  fitting  GPUs free  largest block  stranded');
    for (const r of e.room)
      lines.push(`             ${r.flavor.padEnd(8)}${String(r.nodes).padStart(6)}${String(r.open).padStart(6)}` +
        `${String(r.fitting).padStart(9)}${gpus(r.gpu_free).padStart(11)}${String(r.largest_free_block).padStart(15)}` +
        `${gpus(r.gpu_stranded).padStart(10)}`);
  }
  const p = e.preempted;
  if (p && p.by) lines.push('', `Last preempted by ${p.by} (${p.by_queue}) under ${p.reason}` + (num(p.at) ? ` at ${when(p.at)}` : ''));
  return lines.join('\n');
}

async function loadExplain() {
  const box = document.getElementById('explain');
  if (!selectedJob) { box.hidden = true; return; }
  box.hidden = false;
  document.getElementById('explain-title').textContent = 'Why: ' + selectedJob;
  const text = document.getElementById('explain-text');
  try {
    const r = await api('jobs/' + encodeURIComponent(selectedJob) + '/explain');
    text.textContent = explainText(r.job, r.explanation || {});
  } catch (err) {
    text.textContent = 'Cannot explain ' + selectedJob + ': ' + err.message;
  }
}

// ---- nodes as a GPU map: which job holds which GPU

async function loadNodes() {
  const { items: nodes } = await paged('nodes', 'nodes', 5000);
  let held = [];
  try {
    held = (await paged('jobs?state=admitted,running,preempting', 'jobs', 5000)).items;
  } catch (err) { /* an anonymous viewer sees the nodes without their jobs */ }
  const byNode = new Map();
  for (const j of held) for (const p of j.placement || []) {
    const m = byNode.get(p.node) || new Map();
    for (const g of p.gpus || []) {
      const cell = m.get(g) || { jobs: [], milli: 0 };
      cell.jobs.push(j.spec.id);
      cell.milli += num(p.gpu_milli) || 1000;
      m.set(g, cell);
    }
    byNode.set(p.node, m);
  }
  const box = document.getElementById('nodes');
  box.replaceChildren();
  for (const n of nodes) {
    const name = n.spec.name, count = num(n.gpus), mine = byNode.get(name) || new Map();
    let seenMilli = 0;
    for (const c of mine.values()) seenMilli += c.milli;
    let others = Math.max(0, Math.round((num((n.used || {}).gpu) - seenMilli) / 1000));
    // Which of the GPUs not held by jobs this viewer sees are free is known only when every
    // job is seen; otherwise they are drawn as counts: free ones, then the others' ones.
    const exact = others === 0;
    let free = num(n.gpus_free);
    const row = el('div', { class: 'gpus' });
    for (let i = 0; i < count; i++) {
      const c = mine.get(i);
      if (c) {
        row.append(el('span', { class: 'gpu ' + (c.milli < 1000 ? 'part' : 'held'), 'data-gpu': i,
          'data-job': c.jobs.join(' '), title: `GPU ${i}: ${c.jobs.join(', ')}`, text: c.jobs.join(',') }));
      } else if (exact) {
        row.append(el('span', { class: 'gpu free', 'data-gpu': i, title: `GPU ${i}: free`, text: String(i) }));
      } else if (free > 0) {
        free--;
        row.append(el('span', { class: 'gpu free', title: 'a free GPU', text: '' }));
      } else if (others > 0) {
        others--;
        row.append(el('span', { class: 'gpu other', title: 'in use by a job you may not see', text: '' }));
      } else {
        row.append(el('span', { class: 'gpu part', title: 'partly in use by jobs you may not see', text: '' }));
      }
    }
    const flavor = n.spec.flavor ? ` (${n.spec.flavor})` : '';
    box.append(el('div', { class: 'node', 'data-node': name },
      el('span', { class: 'name', title: name + flavor, text: name + flavor }), row));
  }
}

// ---- usage charts

function usageChart(rows) {
  const W = 420, ROW = 20, LABEL = 110;
  const top = rows.slice().sort((a, b) => num(b.gpu_hours) - num(a.gpu_hours)).slice(0, 15);
  const max = Math.max(1e-9, ...top.map((r) => num(r.gpu_hours)));
  const s = svg('svg', { width: W, height: Math.max(ROW, top.length * ROW), class: 'usage' });
  top.forEach((r, i) => {
    const y = i * ROW, w = Math.round((W - LABEL - 70) * num(r.gpu_hours) / max);
    const label = svg('text', { x: 0, y: y + 14 }); label.textContent = r.key || '(none)';
    const bar = svg('rect', { x: LABEL, y: y + 3, width: w, height: ROW - 6, class: 'used', 'data-key': r.key,
      'data-gpu-hours': num(r.gpu_hours) });
    const value = svg('text', { x: LABEL + w + 6, y: y + 14 }); value.textContent = num(r.gpu_hours).toFixed(num(r.gpu_hours) < 10 ? 2 : 1);
    s.append(label, bar, value);
  });
  if (!top.length) { const t = svg('text', { x: 0, y: 14 }); t.textContent = 'nothing in this period'; s.append(t); }
  return s;
}

async function loadUsage(by) {
  const since = Math.floor(Date.now() / 1000) - 7 * 86400;
  const { items } = await paged(`usage?by=${by}&since=${since}`, 'rows', 1000);
  document.getElementById('usage-' + by).replaceChildren(usageChart(items));
}

// ---- the whole page

async function panel(errorId, load) {
  try { await load(); showError(errorId, null); } catch (err) { showError(errorId, err); }
}

async function refresh() {
  document.getElementById('who').textContent = token() ? 'signed in with a token' : 'anonymous';
  document.getElementById('signout').hidden = !token();
  await panel('queues-error', loadQueues);
  await Promise.all([panel('jobs-error', loadJobs), panel('nodes-error', loadNodes),
    panel('usage-error', () => Promise.all([loadUsage('queue'), loadUsage('user')])), loadExplain()]);
  document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  document.body.dataset.loaded = '1';
}

document.getElementById('signin').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const t = document.getElementById('token');
  if (t.value.trim()) sessionStorage.setItem('gpuq-token', t.value.trim());
  t.value = '';
  refresh();
});
document.getElementById('signout').addEventListener('click', () => { sessionStorage.removeItem('gpuq-token'); refresh(); });
for (const id of ['f-queue', 'f-state', 'f-owner'])
  document.getElementById(id).addEventListener('change', () => panel('jobs-error', loadJobs));
refresh();
setInterval(refresh, REFRESH_MS);
