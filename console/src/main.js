// The Heimdall Console: read-only first. Sign in with an API token (kept in
// sessionStorage only), then read the catalog, Resources, jobs, secrets,
// members and events through the API's documented routes; approve or refuse
// a Resource's revision naming the plan shown.
import './console.css';
import { get, post, setToken, signOut, token, whenUnauthorized } from './api.js';
import { h, replace } from './dom.js';
import { errorBox } from './common.js';
import { catalogPage } from './catalog.js';
import { resourcePage, resourcesPage } from './resources.js';
import { jobPage, jobsPage } from './jobs.js';
import { secretPage, secretsPage } from './secrets.js';
import { eventsPage, membersPage } from './people.js';

const app = document.getElementById('app');

const NAV = [
  ['/catalog', 'Catalog'],
  ['/resources', 'Resources'],
  ['/jobs', 'Jobs'],
  ['/secrets', 'Secrets'],
  ['/members', 'Members'],
  ['/events', 'Events'],
];

const ROUTES = [
  [/^\/catalog$/, () => catalogPage()],
  [/^\/resources$/, () => resourcesPage()],
  [/^\/resources\/([^/]+)$/, (m, ctx) => resourcePage({ id: m[1] }, ctx)],
  [/^\/jobs$/, () => jobsPage()],
  [/^\/jobs\/([^/]+)$/, (m, ctx) => jobPage({ id: m[1] }, ctx)],
  [/^\/secrets$/, () => secretsPage()],
  [/^\/secrets\/([^/]+)$/, (m) => secretPage({ name: m[1] })],
  [/^\/members$/, () => membersPage()],
  [/^\/events$/, () => eventsPage()],
];

let me = null;
/** A message for the next page drawn (what a decision did), shown once above it. */
let flash = null;
/** Bumped on every navigation: a page still loading or polling for an older one stops. */
let generation = 0;

function route() {
  const hash = location.hash.replace(/^#/, '');
  return hash && hash.startsWith('/') ? hash : '/catalog';
}

function signInForm(problem) {
  me = null;
  const input = h('input', {
    type: 'password',
    name: 'token',
    id: 'token',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'hmd_…',
    required: true,
  });
  const out = h('div', problem ? errorBox(problem) : null);
  const button = h('button', { type: 'submit' }, 'Sign in');
  const form = h(
    'form.signin',
    { novalidate: true },
    h('h1', 'Heimdall Console'),
    h('p', 'From a terminal, ', h('code', 'heimdall console'), ' opens this page signed in. Or sign in with an API token: make one with ', h('code', 'heimdall token create --name console'), ' (it is printed once); under ', h('code', 'heimdall dev'), ' the owner\'s is in ', h('code', '.heimdall-dev/owner.token'), ', and ', h('code', 'heimdall member add'), ' prints a new member\'s first one.'),
    h('p.hint', 'The token stays in this tab only (sessionStorage) and goes to this API alone.'),
    h('label', { for: 'token' }, 'API token'),
    input,
    button,
    out,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const value = input.value.trim();
    if (!value) return;
    button.disabled = true;
    setToken(value);
    try {
      me = await get('/v1/whoami');
      input.value = '';
      render();
    } catch (e) {
      signOut();
      replace(out, errorBox(e));
      button.disabled = false;
    }
  });
  replace(app, h('main.signin-page', form));
  input.focus();
}

// Why the API last turned the token away: a form drawn again before the
// next sign-in (another page's request raced the first 401) still says it.
let refused = null;

whenUnauthorized((e) => {
  generation += 1;
  refused = e;
  signOut();
  signInForm(e);
});

function shell(current) {
  const nav = h(
    'nav',
    h('span.brand', 'Heimdall'),
    NAV.map(([path, label]) =>
      h('a', { href: `#${path}`, class: current.startsWith(path) ? 'current' : null }, label),
    ),
    h('span.spacer'),
    h('span.who', me ? `${me.member.email} (${me.member.role}) · ${me.organization.name}` : ''),
    h('button.secondary.signout', { type: 'button', onclick: () => { generation += 1; refused = null; signOut(); signInForm(); } }, 'Sign out'),
  );
  const main = h('main', { id: 'page' }, h('p.muted', 'Loading…'));
  replace(app, nav, main);
  return main;
}

async function render() {
  if (!token()) return signInForm(refused);
  refused = null;
  const mine = ++generation;
  const alive = () => mine === generation;
  try {
    if (!me) me = await get('/v1/whoami');
  } catch (e) {
    if (e.status !== 401 && alive()) replace(app, h('main', errorBox(e)));
    return;
  }
  if (!alive()) return;
  const path = route();
  const main = shell(path);
  const found = ROUTES.map(([re, page]) => [path.match(re), page]).find(([m]) => m);
  if (!found) {
    replace(main, errorBox({ code: 'NOT_FOUND', message: `no page ${path}` }));
    return;
  }
  const [m, page] = found;
  const decoded = m.map((part) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  });
  const ctx = {
    alive,
    rerender: (message) => {
      if (!alive()) return;
      flash = message || null;
      render();
    },
  };
  const shown = flash;
  flash = null;
  try {
    const node = await page(decoded, ctx);
    if (alive()) replace(main, shown ? h('div.flash', { role: 'status' }, shown) : null, node);
  } catch (e) {
    if (alive() && e.status !== 401) replace(main, errorBox(e));
  }
}

/**
 * `heimdall console`'s link, `#sign-in=CODE`: the code leaves the address
 * bar and this history entry before anything else, then is traded, once,
 * for a session token of this tab. A refused code shows the sign-in form
 * with the API's reason.
 */
async function signInFromLink() {
  const m = location.hash.match(/^#sign-in=([A-Za-z0-9_-]+)$/);
  if (!m) return render();
  history.replaceState(null, '', `${location.pathname}#/catalog`);
  signOut();
  try {
    const session = await post('/v1/console/sessions', { code: m[1] });
    setToken(session.token);
  } catch (e) {
    if (e.status !== 401) signInForm(e);
    return undefined;
  }
  return render();
}

window.addEventListener('hashchange', render);
signInFromLink();
