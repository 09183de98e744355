// Secrets as the API describes them: versions per environment, who holds
// them, where they are at risk, who read them. Never a value: the Console
// has no call that could carry one.
import { all, get, seg } from './api.js';
import { badge, facts, h, link, table, time } from './dom.js';
import { catalog, errorBox, heading, pagedTable } from './common.js';

export async function secretsPage() {
  const cat = await catalog();
  const list = await pagedTable(
    ['Name', 'Type', 'Status', 'Components', 'Tags', 'Updated'],
    '/v1/secrets',
    {},
    (s) => [
      link(`/secrets/${encodeURIComponent(s.name)}`, s.name),
      s.type,
      badge(s.status),
      (s.components || []).map((c) => cat.name(c)).join(', '),
      tags(s.tags),
      time(s.updated_at),
    ],
    { limit: 100, empty: 'No secrets yet.' },
  );
  return h(
    'section',
    heading('Secrets'),
    h('p.muted', 'Names, versions and who read them. The Console never shows or receives a value.'),
    list,
  );
}

function tags(t) {
  const entries = Object.entries(t || {});
  return entries.length ? entries.map(([k, v]) => h('span.tag', `${k}=${v}`)) : '';
}

export async function secretPage({ name }) {
  const [detail, cat] = await Promise.all([get(`/v1/secrets/${seg(name)}`), catalog()]);
  const s = detail.secret;
  const envIds = [...new Set(detail.versions.map((v) => v.environment_id))];
  const byEnv = envIds.map((e) => ({
    id: e,
    name: cat.name(e),
    versions: detail.versions.filter((v) => v.environment_id === e).sort((a, b) => b.version - a.version),
  }));
  const log = await accessLog(s.name);
  const holders = await Promise.all(
    byEnv.map(async (env) => {
      try {
        return { env, list: await all(`/v1/secrets/${seg(s.name)}/holders`, { environment: env.name }) };
      } catch (e) {
        if (e.status === 401) throw e;
        return { env, error: e };
      }
    }),
  );
  return h(
    'section',
    heading(s.name, badge(s.status)),
    facts([
      ['Type', s.type],
      ['Description', s.description],
      ['Components', (s.components || []).map((c) => cat.name(c)).join(', ')],
      ['Tags', tags(s.tags)],
      s.personal_owner ? ['Personal secret of', s.personal_owner] : null,
      ['Created', h('span', time(s.created_at), ` by ${s.created_by}`)],
      ['Updated', time(s.updated_at)],
    ]),
    h('h2', 'At risk'),
    table(
      ['Environment', 'Removed member', 'Versions read', 'Marked'],
      (s.at_risk || []).map((a) => [a.environment, a.email, a.versions.join(', '), time(a.marked_at)]),
      'Not at risk anywhere: no removed member read a current version.',
    ),
    h('h2', 'Versions per environment'),
    byEnv.length
      ? byEnv.map((env) =>
          h(
            'div.env',
            h('h3', env.name),
            table(
              ['Version', 'Created', 'By', 'Deactivated'],
              env.versions.map((v) => [String(v.version), time(v.created_at), v.created_by, time(v.deactivated_at)]),
            ),
          ),
        )
      : h('p.empty', 'No version anywhere yet.'),
    h('h2', 'Holders'),
    h('div.holders', holders.length
      ? holders.map(({ env, list, error }) =>
          h(
            'div.env',
            h('h3', env.name),
            error
              ? errorBox(error)
              : table(
                  ['Agent', 'Local API', 'Certificates'],
                  list.map((a) => [a.agent, a.url ? h('code', a.url) : h('span.muted', 'not synced yet'), String((a.certificates || []).length)]),
                  'No Agent holds this environment.',
                ),
          ),
        )
      : h('p.empty', 'No environment has a version.')),
    h('h2', 'What the Agents report holding'),
    table(
      ['Agent', 'Environment', 'Version', 'Deactivated', 'Reported'],
      (detail.holdings || []).map((x) => [x.agent, x.environment, String(x.version), x.deactivated ? 'yes' : 'no', time(x.reported_at)]),
      'No Agent has reported this secret yet.',
    ),
    (detail.environment_deletions || []).length
      ? [
          h('h2', 'Deletions'),
          table(
            ['Environment', 'Status', 'Started', 'Deleted'],
            detail.environment_deletions.map((d) => [d.environment, badge(d.status), time(d.started_at), time(d.deleted_at)]),
          ),
        ]
      : null,
    h('h2', 'Access log'),
    log,
  );
}

/** The access log, a page at a time (`Heimdall-Next-After` → `after=`). */
function accessLog(name) {
  return pagedTable(
    ['When', 'Who', 'Environment', 'Version', 'Served by', 'From', 'Reads'],
    `/v1/secrets/${seg(name)}/access-log`,
    {},
    (e) => [time(e.accessed_at), e.accessor, e.environment, String(e.version), e.served_by, h('code', e.from), String(e.reads)],
    { limit: 25, empty: 'Nobody has read it yet.', className: 'access-log' },
  ).catch((e) => {
    if (e.status === 401) throw e;
    return errorBox(e);
  });
}
