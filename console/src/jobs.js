import { get, seg } from './api.js';
import { badge, facts, h, json, link, replace, time } from './dom.js';
import { errorBox, heading, pagedTable } from './common.js';
import { JOB_COLUMNS, jobRow } from './resources.js';

/** Every job, a page at a time, the newest first (the API pages them in that order). */
export async function jobsPage() {
  const list = await pagedTable(JOB_COLUMNS, '/v1/jobs', { order: 'newest' }, (j) => jobRow(j), { limit: 100, empty: 'No jobs yet.' });
  return h('section', heading('Jobs'), h('p.muted', 'Newest first.'), list);
}

const RUNNING = new Set(['queued', 'running']);
/** How often a queued or running job and its log are asked for again. */
const FOLLOW_MS = 1500;

/** A job and its log; while it is queued or running, polls both until it ends. */
export async function jobPage({ id }, ctx) {
  const [job, log] = await Promise.all([get(`/v1/jobs/${seg(id)}`), get(`/v1/jobs/${seg(id)}/log`)]);
  const info = h('div');
  const pre = h('pre.log', { 'aria-label': 'Job log' });
  const note = h('p.muted.follow');
  const problem = h('div');
  const draw = (j, l) => {
    replace(
      info,
      heading(`Job ${j.id}`, badge(j.status)),
      facts([
        ['Resource', link(`/resources/${j.resource_id}`, j.request?.resource_name ?? j.resource_id)],
        ['Operation', j.operation],
        ['Revision', String(j.request?.revision ?? '')],
        ['Environment', j.request?.environment],
        ['Attempts', `${j.attempts} of ${j.max_attempts}`],
        ['Agent', j.agent],
        j.reason ? ['Reason', h('span.bad', j.reason)] : null,
        ['Queued', time(j.queued_at)],
        ['Started', time(j.started_at)],
        ['Finished', time(j.finished_at)],
      ]),
      h('details', h('summary', 'Request'), json(j.request)),
    );
    const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.textContent = l.content || '';
    if (atBottom) pre.scrollTop = pre.scrollHeight;
    note.textContent = RUNNING.has(j.status)
      ? `Following: the job is ${j.status}; the log refreshes every ${FOLLOW_MS / 1000}s.`
      : l.truncated
        ? 'The log was truncated.'
        : '';
  };
  draw(job, log);
  const follow = async (current) => {
    if (!RUNNING.has(current.status)) return;
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_MS));
    if (!ctx.alive()) return;
    try {
      const [j, l] = await Promise.all([get(`/v1/jobs/${seg(id)}`), get(`/v1/jobs/${seg(id)}/log`)]);
      if (!ctx.alive()) return;
      replace(problem);
      draw(j, l);
      follow(j);
    } catch (e) {
      if (!ctx.alive()) return;
      replace(problem, errorBox(e));
      if (e.status !== 401) follow(current);
    }
  };
  follow(job);
  return h('section', info, h('h2', 'Log'), note, problem, pre);
}
