import { all, page } from './api.js';
import { h, replace } from './dom.js';

/** An API error as the API said it: its code and its message (and fields). */
export function errorBox(e) {
  const code = e && e.code ? e.code : 'ERROR';
  const message = e && e.message ? e.message : String(e);
  return h(
    'div.error',
    { role: 'alert' },
    h('strong.code', code),
    ' ',
    h('span.message', message),
    e && Array.isArray(e.fields) && e.fields.length
      ? h('ul', e.fields.map((f) => h('li', h('code', f.field ?? f.path ?? ''), ' ', f.message ?? JSON.stringify(f))))
      : null,
  );
}

/** The catalog's names by id: domains, systems, components, environments. */
export async function catalog() {
  const [domains, systems, components, environments] = await Promise.all(
    ['domains', 'systems', 'components', 'environments'].map((kind) => all(`/v1/${kind}`)),
  );
  const byId = new Map();
  for (const entry of [...domains, ...systems, ...components, ...environments]) byId.set(entry.id, entry);
  const name = (id) => (byId.get(id) ? byId.get(id).name : id);
  return { domains, systems, components, environments, byId, name };
}

export function heading(title, ...rest) {
  return h('header.page', h('h1', title), ...rest);
}

/**
 * A table of a list the API pages with `Heimdall-Next-After` (→ `after=`):
 * the first page, then "More" for each next one. Resolves once the first
 * page is in (its errors are thrown, as a page's would be).
 */
export async function pagedTable(columns, route, query, row, { limit = 50, empty = 'Nothing here yet.', className = '' } = {}) {
  const body = h('tbody');
  const more = h('button.secondary', { type: 'button', hidden: true }, 'More');
  const note = h('p.muted');
  const problem = h('div');
  let after;
  let count = 0;
  const load = async () => {
    more.disabled = true;
    const p = await page(route, { ...query, limit, after });
    for (const item of p.items) body.appendChild(h('tr', row(item).map((c) => h('td', c))));
    count += p.items.length;
    after = p.next;
    more.hidden = !after;
    more.disabled = false;
    note.textContent = count ? `${count} shown${after ? ', more to load' : ''}` : empty;
  };
  more.addEventListener('click', () =>
    load().then(
      () => replace(problem),
      (e) => {
        more.disabled = false;
        replace(problem, errorBox(e));
      },
    ),
  );
  await load();
  return h(`div.paged${className ? `.${className}` : ''}`, h('table', h('thead', h('tr', columns.map((c) => h('th', c)))), body), note, problem, more);
}
