import { all, get, post, seg, ApiError } from './api.js';
import { badge, facts, h, json, link, replace, shortId, table, time } from './dom.js';
import { catalog, errorBox, heading, pagedTable } from './common.js';

export async function resourcesPage() {
  const cat = await catalog();
  const list = await pagedTable(
    ['Name', 'Component', 'Environment', 'Status', 'Revision', 'Updated'],
    '/v1/resources',
    {},
    (r) => [
      link(`/resources/${r.id}`, r.name),
      cat.name(r.component_id),
      cat.name(r.environment_id),
      h('span', badge(r.status), r.drifted_at ? h('span.badge.bad', 'drifted') : null),
      String(r.revision),
      time(r.updated_at),
    ],
    { empty: 'No Resources yet.' },
  );
  return h('section', heading('Resources'), list);
}

function planSummary(plan) {
  if (!plan) return h('p.muted', 'No plan yet: the plan job has not reported one.');
  const s = plan.summary || {};
  return h(
    'div.plan',
    h('p', 'Plan ', h('code.sha', plan.sha256)),
    h(
      'p.counts',
      `${s.add ?? 0} to add, ${s.change ?? 0} to change, ${s.remove ?? 0} to destroy, ${s.import ?? 0} to import.`,
    ),
    Array.isArray(s.changes) && s.changes.length ? h('ul.changes', s.changes.map((c) => h('li', h('code', c)))) : null,
  );
}

/** The revision waiting for a decision: its plan, then Approve and Refuse naming exactly it. */
function decisionPanel(resource, revision, rerender) {
  const reason = h('input', { type: 'text', name: 'reason', placeholder: 'Reason (optional)', autocomplete: 'off' });
  const out = h('div.outcome', { 'aria-live': 'polite' });
  const planned = revision.plan ? revision.plan.sha256 : null;
  const decide = async (verb) => {
    replace(out);
    for (const b of buttons) b.disabled = true;
    // Exactly what the page shows: this revision, this plan.
    const body = { revision: revision.number };
    if (planned) body.plan = planned;
    if (reason.value.trim()) body.reason = reason.value.trim();
    try {
      const updated = await post(`/v1/resources/${seg(resource.id)}/${verb}`, body);
      const done = verb === 'approve' ? 'Approved' : 'Refused';
      rerender(h('p.ok', `${done} revision ${revision.number}: the Resource is now `, badge(updated.status), '.'));
    } catch (e) {
      replace(out, errorBox(e));
      for (const b of buttons) b.disabled = false;
      if (!planned) approve.disabled = true;
    }
  };
  const approve = h('button.approve', { type: 'button', disabled: !planned }, 'Approve');
  const refuse = h('button.refuse', { type: 'button' }, 'Refuse');
  const buttons = [approve, refuse];
  approve.addEventListener('click', () => decide('approve'));
  refuse.addEventListener('click', () => decide('refuse'));
  return h(
    'div.decision',
    h('h2', `Revision ${revision.number} waits for a decision`),
    h('p.muted', `Requested by ${revision.requested_by}. Another member decides: the requester may not approve their own.`),
    h('h3', 'Input'),
    json(revision.input),
    h('h3', 'Plan'),
    planSummary(revision.plan),
    h('div.actions', reason, approve, refuse),
    out,
  );
}

export async function resourcePage({ id }, ctx) {
  const [detail, cat, jobs] = await Promise.all([
    get(`/v1/resources/${seg(id)}`),
    catalog(),
    all('/v1/jobs', { resource: id, limit: 1000 }),
  ]);
  const { resource: r, revisions } = detail;
  let schema = null;
  try {
    schema = await get(`/v1/schemas/${seg(r.schema_id)}`);
  } catch (e) {
    if (!(e instanceof ApiError) || e.status === 401) throw e;
  }
  const pending = revisions.filter((v) => v.state === 'pending_approval');
  const newestFirst = [...revisions].sort((a, b) => b.number - a.number);
  return h(
    'section',
    heading(r.name, badge(r.status)),
    facts([
      ['Id', h('code', r.id)],
      ['Component', cat.name(r.component_id)],
      ['Environment', cat.name(r.environment_id)],
      ['Schema', schema ? `${schema.type} v${schema.version}${schema.requires_approval ? ' (requires approval)' : ''}` : h('code', r.schema_id)],
      ['Region', r.region],
      ['Revision', String(r.revision)],
      r.reason ? ['Reason', h('span.bad', r.reason)] : null,
      r.drifted_at ? ['Drifted since', time(r.drifted_at)] : null,
      ['Created', h('span', time(r.created_at), ` by ${r.created_by}`)],
      ['Updated', time(r.updated_at)],
    ]),
    pending.map((v) => decisionPanel(r, v, ctx.rerender)),
    h('h2', 'Outputs'),
    r.outputs && typeof r.outputs === 'object' && Object.keys(r.outputs).length
      ? table(
          ['Output', 'Value'],
          Object.entries(r.outputs).map(([k, v]) => [h('code', k), typeof v === 'string' ? v : json(v)]),
        )
      : h('p.empty', 'No outputs (yet).'),
    h('h2', 'Revisions'),
    table(
      ['#', 'State', 'Input', 'Plan', 'Requested', 'Decided'],
      newestFirst.map((v) => [
        String(v.number),
        badge(v.state),
        json(v.input),
        v.plan ? h('div', h('code.sha', { title: v.plan.sha256 }, v.plan.sha256.slice(0, 12)), h('div.muted', `+${v.plan.summary.add} ~${v.plan.summary.change} -${v.plan.summary.remove}`)) : h('span.muted', '—'),
        h('div', v.requested_by, h('div', time(v.requested_at))),
        v.decided_by
          ? h('div', v.decided_by, h('div', time(v.decided_at)), v.decision_reason ? h('div.muted', v.decision_reason) : null)
          : h('span.muted', '—'),
      ]),
    ),
    h('h2', 'Jobs'),
    jobsTable(jobs),
  );
}

export const JOB_COLUMNS = ['Job', 'Resource', 'Operation', 'Status', 'Revision', 'Attempts', 'Queued', 'Finished', 'Agent'];

/** A job as a row (without its Resource on the Resource's own page). */
export function jobRow(j, withResource = true) {
  return [
    link(`/jobs/${j.id}`, shortId(j.id)),
    withResource ? link(`/resources/${j.resource_id}`, j.request?.resource_name ?? j.resource_id) : null,
    j.operation,
    h('span', badge(j.status), j.reason ? h('div.muted', j.reason) : null),
    String(j.request?.revision ?? ''),
    `${j.attempts}/${j.max_attempts}`,
    time(j.queued_at),
    time(j.finished_at),
    j.agent || h('span.muted', '—'),
  ].filter((c) => c !== null);
}

/** A Resource's jobs, newest first. */
export function jobsTable(jobs) {
  const sorted = [...jobs].sort((a, b) => String(b.queued_at).localeCompare(String(a.queued_at)));
  return table(JOB_COLUMNS.filter((c) => c !== 'Resource'), sorted.map((j) => jobRow(j, false)), 'No jobs.');
}
