import { all, get } from './api.js';
import { badge, h, json, table, time } from './dom.js';
import { errorBox, heading } from './common.js';

export async function membersPage() {
  const members = await all('/v1/members');
  return h(
    'section',
    heading('Members'),
    table(
      ['Email', 'Role', 'Since'],
      members.map((m) => [m.email, badge(m.role), time(m.created_at)]),
    ),
  );
}

/** The audit feed, newest first; "Older" asks for the events before the last one shown. */
export async function eventsPage() {
  const body = h('tbody');
  const more = h('button.secondary', { type: 'button' }, 'Older');
  const problem = h('div');
  const LIMIT = 50;
  let before;
  const load = async () => {
    more.disabled = true;
    try {
      const events = await get('/v1/events', { limit: LIMIT, before });
      for (const e of events) {
        body.appendChild(
          h('tr', [time(e.at), e.actor, h('code', e.action), target(e), details(e.detail)].map((c) => h('td', c))),
        );
      }
      if (events.length) before = events[events.length - 1].at;
      more.hidden = events.length < LIMIT;
      replace(problem);
    } catch (e) {
      if (e.status === 401) throw e;
      replace(problem, errorBox(e));
    }
    more.disabled = false;
  };
  more.addEventListener('click', () => load().catch(() => {}));
  await load();
  return h(
    'section',
    heading('Events'),
    h('table.events', h('thead', h('tr', ['When', 'Actor', 'Action', 'Target', 'Detail'].map((c) => h('th', c)))), body),
    problem,
    more,
  );
}

/** The target's name when it still has one, its kind and id beside it. */
function target(e) {
  const [kind, id] = e.target.includes(':') ? e.target.split(/:(.*)/s) : ['', e.target];
  if (!e.target_name) return h('code', e.target);
  return h('span.target', h('strong', e.target_name), ' ', h('span.muted', kind), h('br'), h('code.id', id));
}

/** An event's detail as `key value` lines, not raw JSON. */
function details(detail) {
  if (detail === undefined || detail === null) return '';
  if (typeof detail !== 'object' || Array.isArray(detail)) return json(detail);
  const entries = Object.entries(detail).filter(([, v]) => v !== null && v !== undefined && v !== '');
  if (!entries.length) return '';
  return h(
    'ul.kv',
    entries.map(([k, v]) => h('li', h('span.k', k), ' ', typeof v === 'object' ? h('code', JSON.stringify(v)) : String(v))),
  );
}

function replace(el, ...children) {
  el.replaceChildren(...children);
}
