// Every node the Console draws is made here: text goes in as text nodes
// (textContent), never as HTML, so nothing the API answers is ever parsed
// as markup.

/**
 * h('tag.class', {attrs}, ...children): an element. Children are nodes,
 * strings (as text), numbers, arrays of those, or null/false (skipped).
 * Attributes: `on*` functions become listeners; `class`, `dataset`-free
 * plain attributes otherwise. No attribute ever takes HTML.
 */
export function h(tag, attrs, ...children) {
  const [name, ...classes] = tag.split('.');
  const el = document.createElement(name || 'div');
  if (classes.length) el.className = classes.join(' ');
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === 'class') {
      el.className = [el.className, value].filter(Boolean).join(' ');
    } else if (key === 'value') {
      el.value = value;
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces the children of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A link inside the Console (hash routes: nothing but the page in the URL). */
export function link(route, ...children) {
  return h('a', { href: `#${route}` }, ...children);
}

/** A time as the reader's locale shows it, with the exact RFC 3339 in the title. */
export function time(value) {
  if (!value) return h('span.muted', '—');
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return h('span', String(value));
  return h('time', { datetime: value, title: value }, date.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z'));
}

const GOOD = new Set(['provisioned', 'completed', 'approved', 'active', 'not_required']);
const BAD = new Set(['failed', 'refused', 'at_risk', 'expired', 'deleted']);
const BUSY = new Set(['queued', 'running', 'applying', 'deleting', 'pending_approval']);

/** A status as a coloured badge. */
export function badge(status) {
  const s = String(status ?? '');
  const kind = GOOD.has(s) ? 'good' : BAD.has(s) ? 'bad' : BUSY.has(s) ? 'busy' : 'plain';
  return h(`span.badge.${kind}`, { 'data-status': s }, s.replaceAll('_', ' '));
}

/** A table from column titles and rows of cells (cells as `h` children). */
export function table(columns, rows, empty = 'Nothing here yet.') {
  if (!rows.length) return h('p.empty', empty);
  return h(
    'table',
    h('thead', h('tr', columns.map((c) => h('th', c)))),
    h('tbody', rows.map((cells) => h('tr', cells.map((c) => h('td', c))))),
  );
}

/** Definition list of [label, value] pairs. */
export function facts(pairs) {
  return h(
    'dl.facts',
    pairs.filter(Boolean).map(([label, value]) => [h('dt', label), h('dd', value ?? h('span.muted', '—'))]),
  );
}

/** JSON as preformatted text (shown as the API answered it). */
export function json(value) {
  if (value === undefined || value === null) return h('span.muted', '—');
  return h('pre.json', JSON.stringify(value, null, 2));
}

/** A short form of a long id, the whole id in the title. */
export function shortId(id) {
  const s = String(id ?? '');
  return h('code', { title: s }, s.length > 13 ? `${s.slice(0, 8)}…` : s);
}
