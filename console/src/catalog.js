import { all } from './api.js';
import { badge, h, link, table, time } from './dom.js';
import { catalog, heading } from './common.js';

/** Domains → systems → components, each component with its Resources; and the environments. */
export async function catalogPage() {
  const [cat, resources] = await Promise.all([catalog(), all('/v1/resources')]);
  const children = (list, parent) => list.filter((e) => e.parent_id === parent);
  const resourcesOf = (component) => resources.filter((r) => r.component_id === component);
  const entry = (e, kind, nested) =>
    h(
      `li.${kind}`,
      h('span.kind', kind),
      ' ',
      h('strong', e.name),
      e.description ? h('span.muted', ` — ${e.description}`) : null,
      nested,
    );
  const component = (c) => {
    const rs = resourcesOf(c.id);
    return entry(
      c,
      'component',
      rs.length
        ? h(
            'ul.resources',
            rs.map((r) =>
              h('li', link(`/resources/${r.id}`, r.name), ' ', h('span.muted', cat.name(r.environment_id)), ' ', badge(r.status)),
            ),
          )
        : null,
    );
  };
  const tree = cat.domains.length
    ? h(
        'ul.tree',
        cat.domains.map((d) =>
          entry(
            d,
            'domain',
            h(
              'ul',
              children(cat.systems, d.id).map((s) => entry(s, 'system', h('ul', children(cat.components, s.id).map(component)))),
            ),
          ),
        ),
      )
    : h('p.empty', 'No domains yet: `heimdall domain create NAME`.');
  const orphans = cat.components.filter((c) => !cat.systems.some((s) => s.id === c.parent_id));
  return h(
    'section',
    heading('Catalog'),
    h('div.columns',
      h('div', h('h2', 'Domains, systems and components'), tree,
        orphans.length ? [h('h3', 'Components outside a system'), h('ul.tree', orphans.map(component))] : null),
      h(
        'div',
        h('h2', 'Environments'),
        table(
          ['Name', 'Description', 'Created'],
          cat.environments.map((e) => [h('strong', e.name), e.description || '', time(e.created_at)]),
          'No environments yet.',
        ),
      ),
    ),
  );
}
