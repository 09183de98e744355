// The Console in a real browser (Debian's chromium, driven by playwright-core)
// against a real `heimdall dev` whose data the CLI made, as
// bindings/python/tests/conftest.py does: free ports, a temp --data dir and a
// temp HOME / HEIMDALL_CONFIG_DIR, real Terraform (.venv/bin/terraform) on the
// offline module tests/fixtures/modules/bucket.
//
// It signs in, walks every page, approves a Resource as a second member (the
// requester may not: SELF_APPROVAL) and checks through the API that the
// revision was approved and the Resource applied, and it asserts that a
// secret's value (a marker set with `heimdall secret set` and read once with
// `heimdall secret get`) appears in no page, no request and no response the
// browser saw. Screenshots go to $CARGO_TARGET_DIR/console-test/.
//
// Plain node; exits non-zero on the first failure; never skips: anything
// missing (a binary, Terraform, chromium) is a failure.
//   node console/tests/console.test.mjs    (bash scripts/console.sh test)
// HEIMDALL_CONSOLE_DOCS_SCREENSHOT=docs/console.png also writes the screenshot in docs/api-and-sdk.md.

import { spawn, execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TARGET = process.env.CARGO_TARGET_DIR || '/var/tmp/heimdall-target';
const BIN_DIR = process.env.HEIMDALL_BIN_DIR || path.join(TARGET, 'debug');
const HEIMDALL = path.join(BIN_DIR, 'heimdall');
const TERRAFORM = path.join(REPO, '.venv/bin/terraform');
const CHROMIUM = process.env.HEIMDALL_CHROMIUM || '/usr/bin/chromium';
const OUT = path.join(TARGET, 'console-test');
/** The secret's value: it must never reach the browser, in any form. */
const MARKER = `console-marker-${randomBytes(8).toString('hex')}`;

const started = Date.now();
const log = (...args) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s]`, ...args);

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

async function eventually(what, fn, { timeout = 120_000, every = 500 } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

function portFree(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port with the next two free too (API, Agent channel, Agent local API). */
async function freePorts() {
  for (;;) {
    const port = await new Promise((resolve) => {
      const server = net.createServer();
      server.listen(0, '127.0.0.1', () => {
        const p = server.address().port;
        server.close(() => resolve(p));
      });
    });
    if (port + 2 > 65535) continue;
    if ((await portFree(port)) && (await portFree(port + 1)) && (await portFree(port + 2))) return port;
  }
}

// ---- heimdall dev and the CLI ------------------------------------------------

const root = mkdtempSync(path.join(os.tmpdir(), 'heimdall-console-'));
const data = path.join(root, 'data');
const home = path.join(root, 'home');
mkdirSync(home);
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith('HEIMDALL_') && k !== 'TF_CLI_CONFIG_FILE'),
);
Object.assign(env, { HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), HEIMDALL_CONFIG_DIR: path.join(root, 'config') });

function cli(args, { input = '', json = false } = {}) {
  const argv = json ? [...args, '--output', 'json'] : args;
  return new Promise((resolve, reject) => {
    const child = execFile(HEIMDALL, argv, { env, cwd: REPO, timeout: 180_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`heimdall ${args.join(' ')} failed (${err.code ?? err.signal}):\n${stdout}\n${stderr}`));
      else resolve(json ? JSON.parse(stdout) : stdout);
    });
    // A command that reads no input may exit before its stdin is written: the
    // EPIPE that follows says nothing; its exit status says what happened.
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}

let dev = null;
let apiUrl = null;
let ca = null;

async function startDev() {
  const port = await freePorts();
  const stderr = path.join(root, 'dev.stderr');
  const child = spawn(HEIMDALL, ['dev', '--data', data, '--listen', `127.0.0.1:${port}`], {
    cwd: REPO, // the default module allowlist is the directory it runs in
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let banner = '';
  let errors = '';
  child.stderr.on('data', (d) => {
    errors += d;
    writeFileSync(stderr, errors);
  });
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`heimdall dev did not come up:\n${banner}\n${errors}`)), 120_000);
    child.stdout.on('data', (d) => {
      banner += d;
      if (banner.includes('Press Ctrl-C')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`heimdall dev exited ${code}:\n${banner}\n${errors}`));
    });
  });
  dev = child;
  await ready;
  check(banner.includes('Agent "dev" enrolled and running'), `the dev Agent runs:\n${banner}`);
  apiUrl = `https://127.0.0.1:${port}`;
  ca = readFileSync(path.join(data, 'ca/ca.pem'));
  log(`heimdall dev at ${apiUrl}`);
}

async function stopDev() {
  if (!dev || dev.exitCode !== null) return;
  const exited = new Promise((resolve) => dev.once('exit', resolve));
  dev.kill('SIGTERM');
  const timer = setTimeout(() => dev.kill('SIGKILL'), 45_000);
  await exited;
  clearTimeout(timer);
}

function devLogs() {
  return ['api.log', 'agent.log']
    .map((name) => path.join(data, name))
    .filter((p) => existsSync(p))
    .map((p) => `--- ${path.basename(p)} ---\n${readFileSync(p, 'utf8').slice(-4000)}`)
    .join('\n');
}

/** The API, from node (trusting the installation CA only): `{ status, body, headers }`. */
function api(method, route, token, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = https.request(
      `${apiUrl}${route}`,
      {
        method,
        ca,
        headers: {
          Authorization: `Bearer ${token}`,
          ...(payload ? { 'Content-Type': 'application/json' } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : null }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function apiOk(route, token) {
  const r = await api('GET', route, token);
  check(r.status === 200, `GET ${route}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

// ---- the data, made with the CLI ----------------------------------------------

async function makeWorld() {
  await cli(['domain', 'create', 'payments', '--description', 'Money in, money out']);
  await cli(['system', 'create', 'checkout', '--domain', 'payments']);
  await cli(['component', 'create', 'receipts', '--system', 'checkout']);
  await cli(['component', 'create', 'ledger', '--system', 'checkout']);
  await cli(['domain', 'create', 'identity']);
  await cli(['system', 'create', 'login', '--domain', 'identity']);
  await cli(['component', 'create', 'sessions', '--system', 'login']);
  await cli(['environment', 'create', 'dev', '--description', 'the dev Agent holds it']);
  await cli(['environment', 'create', 'prod']);
  await cli(['environment', 'assign-agent', 'dev', 'dev']);

  await cli(['secret', 'create', 'aws-dev', '--type', 'aws-keys']);
  await cli(['secret', 'set', 'aws-dev', '--environment', 'dev'], { input: '{"access_key_id":"dev","secret_access_key":"dev"}' });
  await cli(['cloud-account', 'create', 'local', '--provider', 'aws', '--region', 'us-east-1',
    '--state-bucket', 'local-state', '--auth', 'static', '--secret', 'aws-dev']); // prettier-ignore
  await cli(['cloud-account', 'link', 'local', '--scope', 'organization', '--environment', 'dev']);

  const module = ['--module-source', path.join(REPO, 'tests/fixtures/modules/bucket'), '--module-version', '1.0.0'];
  await cli(['schema', 'create', '--type', 'bucket', '--input-schema', path.join(REPO, 'examples/schemas/bucket.json'), ...module]);
  // Under approval: the fixture's `sleep_seconds` too, so the apply runs
  // long enough for the job page to follow it.
  const approvedSchema = path.join(root, 'approved-bucket.json');
  const bucket = JSON.parse(readFileSync(path.join(REPO, 'examples/schemas/bucket.json'), 'utf8'));
  bucket.title = 'approved-bucket';
  bucket.properties.sleep_seconds = { type: 'integer', minimum: 0, maximum: 30 };
  writeFileSync(approvedSchema, JSON.stringify(bucket));
  await cli(['schema', 'create', '--type', 'approved-bucket', '--input-schema', approvedSchema, '--requires-approval', ...module]);

  await cli(['secret', 'create', 'db-password', '--type', 'password', '--tag', 'team=payments', '--component', 'receipts']);
  const stored = await cli(['secret', 'set', 'db-password', '--environment', 'dev'], { input: MARKER });
  check(stored.includes('db-password version 1 stored in dev'), `secret set: ${stored}`);
  const read = await cli(['secret', 'get', 'db-password', '--environment', 'dev']);
  check(read === MARKER, 'secret get prints the value exactly as stored');

  const receipts = await cli(
    ['resource', 'create', '--component', 'receipts', '--schema', 'bucket', '--environment', 'dev', '--name', 'recibos',
      '--input', '{"bucket":"checkout-recibos","tags":{"team":"payments"}}', '--wait'], // prettier-ignore
    { json: true },
  );
  const ledger = await cli(
    ['resource', 'create', '--component', 'ledger', '--schema', 'approved-bucket', '--environment', 'dev', '--name', 'ledger',
      '--input', '{"bucket":"checkout-ledger","sleep_seconds":4}'], // prettier-ignore
    { json: true },
  );
  const scratch = await cli(
    ['resource', 'create', '--component', 'ledger', '--schema', 'approved-bucket', '--environment', 'dev', '--name', 'scratch',
      '--input', '{"bucket":"checkout-scratch"}'], // prettier-ignore
    { json: true },
  );
  const added = await cli(['member', 'add', 'ana@example.com', '--role', 'admin'], { json: true });
  check(typeof added.token === 'string' && added.token.length > 10, 'member add prints the token');
  const idOf = (r) => (r.resource ?? r).id;
  const ids = { receipts: idOf(receipts), ledger: idOf(ledger), scratch: idOf(scratch) };
  check(ids.receipts && ids.ledger && ids.scratch, `resource ids: ${JSON.stringify(ids)}`);
  return { ids, anaToken: added.token };
}

// ---- the browser ---------------------------------------------------------------

const requests = [];
const responses = [];
const pending = [];
const snapshots = [];
const pageErrors = [];
let shot = 0;

function watch(page) {
  page.on('request', (r) => requests.push({ url: r.url(), method: r.method(), body: r.postData() ?? '', headers: r.headers() }));
  page.on('response', (r) => {
    pending.push(
      r
        .text()
        .catch(() => '')
        .then((body) => responses.push({ url: r.url(), status: r.status(), body, headers: r.headers() })),
    );
  });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  // A refused request logs "Failed to load resource" (the tests make some on purpose); anything else is a bug.
  page.on('console', (m) => m.type() === 'error' && !m.text().startsWith('Failed to load resource') && pageErrors.push(`console: ${m.text()}`));
}

/** The page's HTML and text, kept for the value check, and a screenshot. */
async function capture(page, name) {
  snapshots.push({ name, html: await page.content(), text: await page.evaluate(() => document.body.innerText) });
  shot += 1;
  const file = path.join(OUT, `${String(shot).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

async function signIn(page, token) {
  await page.locator('form.signin input[name=token]').fill(token);
  await page.locator('form.signin button[type=submit]').click();
  await page.locator('nav .who').filter({ hasText: '@' }).waitFor();
}

const heading = (page, text) => page.locator('main#page header.page h1', { hasText: text }).first().waitFor();

async function main() {
  for (const bin of ['heimdall', 'heimdall-api', 'heimdall-agent']) {
    check(existsSync(path.join(BIN_DIR, bin)), `${path.join(BIN_DIR, bin)} is built (cargo build --workspace --bins)`);
  }
  check(existsSync(TERRAFORM), `${TERRAFORM} exists (bash scripts/install-test-tools.sh)`);
  check(existsSync(CHROMIUM), `${CHROMIUM} exists (apt-get install chromium; bash scripts/console.sh test does)`);
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });

  await startDev();
  const owner = readFileSync(path.join(data, 'owner.token'), 'utf8').trim();
  const { ids, anaToken } = await makeWorld();
  log('world made with the CLI');

  // The plan job (real Terraform) must report before there is a plan to approve.
  const withPlan = await eventually('the ledger plan', async () => {
    const d = await apiOk(`/v1/resources/${ids.ledger}`, owner);
    const rev = d.revisions.find((r) => r.number === d.resource.revision);
    return rev && rev.state === 'pending_approval' && rev.plan ? d : null;
  });
  const plan = withPlan.revisions.find((r) => r.number === withPlan.resource.revision).plan;
  log(`ledger waits for approval with plan ${plan.sha256.slice(0, 12)}`);

  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  try {
    // The dev API's certificate comes from its own installation CA.
    const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 820 } });
    const page = await context.newPage();
    watch(page);

    // Sign in: /console redirects to /console/; a wrong token is refused with its code.
    await page.goto(`${apiUrl}/console`);
    check(page.url() === `${apiUrl}/console/`, `redirected to /console/: ${page.url()}`);
    await page.locator('form.signin').waitFor();
    await capture(page, 'sign-in');
    await page.locator('form.signin input[name=token]').fill('hmd_not-a-token');
    await page.locator('form.signin button[type=submit]').click();
    await page.locator('form.signin .error .code').waitFor();
    const refused = await page.locator('form.signin .error').innerText();
    check(/UNAUTHENTICATED|UNAUTHORIZED/.test(refused), `a wrong token shows the API's code: ${refused}`);
    check((await page.evaluate(() => sessionStorage.length)) === 0, 'a refused token is not kept');

    await signIn(page, owner);
    const stored = await page.evaluate(() => ({ session: sessionStorage.getItem('heimdall.token'), local: localStorage.length }));
    check(stored.session === owner, 'the token is in sessionStorage');
    check(stored.local === 0, 'nothing in localStorage');
    check((await context.cookies()).length === 0, 'no cookie');
    log('signed in');

    // `heimdall console`: its one-time link signs a fresh browser in as the
    // profile's member, with a session token of its own; the code leaves
    // the address bar and history at once, and a second use is refused.
    {
      const link = await cli(['console', '--no-open'], { json: true });
      check(link.opened === false && link.url.startsWith(`${apiUrl}/console/#sign-in=hcs_`), `a fragment link: ${link.url}`);
      const code = link.url.split('#sign-in=')[1];
      const fresh = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 820 } });
      const linked = await fresh.newPage();
      watch(linked);
      await linked.goto(link.url);
      await linked.locator('nav .who').filter({ hasText: 'dev@localhost' }).waitFor();
      const seen = await linked.evaluate(() => ({
        url: location.href,
        session: sessionStorage.getItem('heimdall.token'),
        local: localStorage.length,
      }));
      check(!seen.url.includes(code) && !seen.url.includes('sign-in'), `the code left the address bar: ${seen.url}`);
      // Back and forward through this tab's history: no entry has the code.
      await linked.goBack();
      check(!linked.url().includes(code), `back: ${linked.url()}`);
      await linked.goForward();
      check(!linked.url().includes(code) && linked.url().startsWith(`${apiUrl}/console/`), `forward: ${linked.url()}`);
      check(seen.session && seen.session.startsWith('hmd_') && seen.session !== owner, 'a session token of its own, not the profile\'s');
      check(!seen.url.includes(seen.session) && !seen.url.includes(owner), 'no token in the URL');
      check(seen.local === 0 && (await fresh.cookies()).length === 0, 'nothing kept beyond the tab');
      await capture(linked, 'signed-in-by-link');
      const again = await fresh.newPage();
      await again.goto(link.url);
      await again.locator('form.signin .error .code').waitFor();
      const reused = await again.locator('form.signin .error').innerText();
      check(/UNAUTHENTICATED/.test(reused) && /heimdall console/.test(reused), `a used link is refused, saying what to do: ${reused}`);
      await fresh.close();
      log('signed in with a heimdall console link');
    }

    // Catalog.
    await heading(page, 'Catalog');
    await page.locator('ul.tree li.component', { hasText: 'receipts' }).locator('a', { hasText: 'recibos' }).waitFor();
    const catalogText = await page.locator('main#page').innerText();
    for (const name of ['payments', 'checkout', 'receipts', 'ledger', 'identity', 'login', 'sessions', 'dev', 'prod']) {
      check(catalogText.includes(name), `the catalog shows ${name}`);
    }
    await capture(page, 'catalog');

    // Resources.
    await page.locator('nav a', { hasText: 'Resources' }).click();
    await heading(page, 'Resources');
    await page.locator('main#page td a', { hasText: 'ledger' }).waitFor();
    const listText = await page.locator('main#page').innerText();
    check(listText.includes('recibos') && listText.includes('provisioned'), 'recibos is provisioned in the list');
    check(listText.includes('pending approval'), 'ledger waits for approval in the list');
    await capture(page, 'resources');

    await page.locator('main#page td a', { hasText: 'recibos' }).click();
    await heading(page, 'recibos');
    const recibos = await page.locator('main#page').innerText();
    check(recibos.includes('checkout-recibos'), 'the revision input and outputs show');
    check(recibos.includes('dev@localhost'), 'who requested shows');
    check(recibos.includes('not required'), 'the revision state shows');
    check(recibos.includes('<sensitive>'), 'a sensitive output shows as the API has it');
    check(await page.locator('main#page h2', { hasText: 'Outputs' }).isVisible(), 'outputs section');
    await capture(page, 'resource');

    // Jobs: the list, and one job with its log.
    await page.locator('nav a', { hasText: 'Jobs' }).click();
    await heading(page, 'Jobs');
    await page.locator('main#page td a', { hasText: 'recibos' }).first().waitFor();
    await capture(page, 'jobs');
    // Newest first: the first row is the job queued last.
    const everyJob = await apiOk('/v1/jobs?limit=1000', owner);
    const newestJob = everyJob[everyJob.length - 1];
    const firstRow = await page.locator('main#page tbody tr').first().locator('td a').first().getAttribute('href');
    check(firstRow.endsWith(`/jobs/${newestJob.id}`), `the newest job is first: ${firstRow} vs ${newestJob.id}`);
    const recibosJobs = await apiOk(`/v1/jobs?resource=${ids.receipts}`, owner);
    const applied = recibosJobs.find((j) => j.operation === 'apply' && j.status === 'completed');
    check(applied, 'recibos has a completed apply job');
    await page.goto(`${apiUrl}/console/#/jobs/${applied.id}`);
    await heading(page, 'Job');
    await eventually('the job log', async () => (await page.locator('pre.log').innerText()).length > 0, { timeout: 20_000 });
    const logText = await page.locator('pre.log').innerText();
    const apiLog = await apiOk(`/v1/jobs/${applied.id}/log`, owner);
    check(logText.trim() === apiLog.content.trim(), 'the page shows the job log as the API has it');
    await capture(page, 'job');

    // Secrets: the list, then db-password with versions, holders and the access log.
    await page.locator('nav a', { hasText: 'Secrets' }).click();
    await heading(page, 'Secrets');
    await page.locator('main#page td a', { hasText: 'db-password' }).waitFor();
    await capture(page, 'secrets');
    await page.locator('main#page td a', { hasText: 'db-password' }).click();
    await heading(page, 'db-password');
    await page.locator('.access-log td', { hasText: 'dev@localhost' }).first().waitFor();
    const secretText = await page.locator('main#page').innerText();
    check(/Versions per environment\s+dev/.test(secretText), 'versions per environment');
    const holders = await page.locator('div.holders').innerText();
    check(/\bdev\b/.test(holders) && holders.includes('https://127.0.0.1:'), `the dev Agent holds it: ${holders}`);
    check(secretText.includes('Not at risk anywhere'), 'at_risk shown (none)');
    await capture(page, 'secret');

    // Members and events.
    await page.locator('nav a', { hasText: 'Members' }).click();
    await heading(page, 'Members');
    await page.locator('main#page td', { hasText: 'ana@example.com' }).waitFor();
    check((await page.locator('main#page').innerText()).includes('dev@localhost'), 'the owner is a member');
    await capture(page, 'members');
    await page.locator('nav a', { hasText: 'Events' }).click();
    await heading(page, 'Events');
    await page.locator('table.events td code', { hasText: 'member.added' }).first().waitFor();
    const apiEvents = await apiOk('/v1/events?limit=50', owner);
    const rows = await page.locator('table.events tbody tr').count();
    check(rows >= Math.min(10, apiEvents.length) && rows <= 50, `the events the API lists (${rows} rows)`);
    // Names beside ids, and details as lines rather than raw JSON.
    const named = apiEvents.find((e) => e.action === 'member.added' && e.target_name);
    check(named && named.target_name === 'ana@example.com', `the API names a member target: ${JSON.stringify(named)}`);
    await page.locator('table.events td .target strong', { hasText: 'ana@example.com' }).first().waitFor();
    check((await page.locator('table.events td ul.kv li').count()) > 0, 'event details are key/value lines');
    await capture(page, 'events');

    // The requester may not approve their own: the API's code and message show.
    await page.goto(`${apiUrl}/console/#/resources/${ids.ledger}`);
    await heading(page, 'ledger');
    await page.locator('.decision .plan code.sha', { hasText: plan.sha256 }).waitFor();
    await page.locator('.decision button.approve').click();
    await page.locator('.decision .error .code', { hasText: 'SELF_APPROVAL' }).waitFor();
    await capture(page, 'self-approval');

    // Sign out clears the session.
    await page.locator('nav button.signout').click();
    await page.locator('form.signin').waitFor();
    check((await page.evaluate(() => sessionStorage.length)) === 0, 'sign out clears sessionStorage');

    // A second member approves the plan the page shows.
    await signIn(page, anaToken);
    await page.goto(`${apiUrl}/console/#/resources/${ids.ledger}`);
    await heading(page, 'ledger');
    const decision = page.locator('.decision');
    await decision.locator('code.sha', { hasText: plan.sha256 }).waitFor();
    const summary = await decision.locator('.plan').innerText();
    check(/1 to add, 0 to change, 0 to destroy, 0 to import/.test(summary), `the plan summary shows: ${summary}`);
    check(summary.includes('terraform_data.bucket'), `the planned changes show: ${summary}`);
    await capture(page, 'approval');
    if (process.env.HEIMDALL_CONSOLE_DOCS_SCREENSHOT) {
      await page.screenshot({ path: path.resolve(REPO, process.env.HEIMDALL_CONSOLE_DOCS_SCREENSHOT) });
    }
    await decision.locator('input[name=reason]').fill('looks right');
    const approveRequest = page.waitForRequest((r) => r.url().endsWith(`/v1/resources/${ids.ledger}/approve`));
    await decision.locator('button.approve').click();
    const sent = JSON.parse((await approveRequest).postData());
    check(sent.revision === 1 && sent.plan === plan.sha256 && sent.reason === 'looks right', `the approval names the revision and plan: ${JSON.stringify(sent)}`);
    await page.locator('.flash .ok').waitFor();
    log('approved in the browser');

    // Through the API: the revision is approved by ana, and the Resource moves on.
    const after = await apiOk(`/v1/resources/${ids.ledger}`, owner);
    const rev = after.revisions.find((r) => r.number === 1);
    check(rev.state === 'approved', `revision 1 is approved: ${rev.state}`);
    check(rev.decided_by === 'ana@example.com', `decided by ana: ${rev.decided_by}`);
    check(rev.decision_reason === 'looks right', 'with her reason');
    check(['queued', 'applying', 'provisioned'].includes(after.resource.status), `the Resource moves on: ${after.resource.status}`);

    // Follow the apply job while it runs (the fixture sleeps 4 s): the page polls the log.
    const applyJob = await eventually('the ledger apply job', async () =>
      (await apiOk(`/v1/jobs?resource=${ids.ledger}`, owner)).find((j) => j.operation === 'apply'),
    );
    const logUrl = `/v1/jobs/${applyJob.id}/log`;
    await page.goto(`${apiUrl}/console/#/jobs/${applyJob.id}`);
    await heading(page, 'Job');
    const firstStatus = await page.locator('header.page .badge').getAttribute('data-status');
    await page.locator('header.page .badge[data-status=completed]').waitFor({ timeout: 180_000 });
    const polls = requests.filter((r) => r.url.endsWith(logUrl)).length;
    if (['queued', 'running'].includes(firstStatus)) {
      check(polls >= 2, `a ${firstStatus} job's log is polled until it ends (${polls} requests)`);
    }
    check((await page.locator('pre.log').innerText()).length > 0, 'the finished job has its log');
    log(`followed the apply job from ${firstStatus} to completed (${polls} log requests)`);
    await capture(page, 'job-followed');
    const done = await eventually('ledger provisioned', async () => {
      const r = (await apiOk(`/v1/resources/${ids.ledger}`, owner)).resource;
      return r.status === 'provisioned' ? r : null;
    });
    check(done.outputs && JSON.stringify(done.outputs).includes('checkout-ledger'), 'ledger has its outputs');
    await page.goto(`${apiUrl}/console/#/resources/${ids.ledger}`);
    await heading(page, 'ledger');
    await page.locator('header.page .badge[data-status=provisioned]').waitFor();
    check((await page.locator('.decision').count()) === 0, 'nothing waits for a decision any more');
    await capture(page, 'resource-approved');

    // Refuse: scratch's revision, with a reason; the API has it refused by ana.
    await eventually('the scratch plan', async () => {
      const d = await apiOk(`/v1/resources/${ids.scratch}`, owner);
      return d.revisions.some((r) => r.state === 'pending_approval' && r.plan);
    });
    await page.goto(`${apiUrl}/console/#/resources/${ids.scratch}`);
    await heading(page, 'scratch');
    await page.locator('.decision .plan code.sha').waitFor();
    await page.locator('.decision input[name=reason]').fill('not this one');
    await page.locator('.decision button.refuse').click();
    await page.locator('.flash .ok', { hasText: 'Refused revision 1' }).waitFor();
    const refusedRev = (await apiOk(`/v1/resources/${ids.scratch}`, owner)).revisions.find((r) => r.number === 1);
    check(refusedRev.state === 'refused' && refusedRev.decided_by === 'ana@example.com', `scratch refused by ana: ${refusedRev.state}`);
    check(refusedRev.decision_reason === 'not this one', 'with her reason');
    await capture(page, 'refused');

    // A token the API refuses returns to the sign-in form with the API's error.
    // On a page load (whoami) and on a page of a signed-in session.
    await page.evaluate(() => sessionStorage.setItem('heimdall.token', 'hmd_revoked'));
    await page.reload();
    await page.locator('form.signin .error .code').waitFor();
    check((await page.evaluate(() => sessionStorage.length)) === 0, 'a refused token is dropped');
    await signIn(page, anaToken);
    await page.evaluate(() => sessionStorage.setItem('heimdall.token', 'hmd_revoked'));
    await page.goto(`${apiUrl}/console/#/secrets`);
    await page.locator('form.signin .error .code').waitFor();
    check((await page.evaluate(() => sessionStorage.length)) === 0, 'a refused token is dropped');
    await capture(page, 'unauthorized');

    await context.close();
  } finally {
    await browser.close();
  }
  await Promise.all(pending);

  // ---- what the browser saw -----------------------------------------------------
  check(pageErrors.length === 0, `no script error in the page: ${pageErrors.join('; ')}`);
  check(requests.length > 20 && responses.length > 20, `requests recorded (${requests.length}, ${responses.length})`);
  const origin = new URL(apiUrl).origin;
  for (const r of requests) {
    if (r.url.startsWith('data:')) continue;
    const url = new URL(r.url);
    check(url.origin === origin, `every request goes to the API's origin (never an Agent, no CDN): ${r.url}`);
    check(url.pathname.startsWith('/console') || url.pathname.startsWith('/v1/'), `only the Console and /v1: ${r.url}`);
    check(!/\/v1\/secrets\/[^/]+\/versions/.test(url.pathname), `never a value route: ${r.url}`);
    check(!r.url.includes(owner) && !r.url.includes(anaToken), 'no token in a URL');
    check(!r.url.includes(MARKER) && !r.body.includes(MARKER), `the value is in no request: ${r.url}`);
    check(!JSON.stringify(r.headers).includes(MARKER), 'nor in any request header');
  }
  for (const r of responses) {
    check(!r.body.includes(MARKER), `the value is in no response body: ${r.url}`);
    check(!JSON.stringify(r.headers).includes(MARKER), `nor in a response header: ${r.url}`);
    if (new URL(r.url).pathname.startsWith('/console')) {
      check(
        (r.headers['content-security-policy'] || '').includes("default-src 'none'"),
        `the Console's files carry the CSP: ${r.url}`,
      );
    }
  }
  for (const s of snapshots) {
    check(!s.html.includes(MARKER) && !s.text.includes(MARKER), `the value is in no page: ${s.name}`);
  }
  check(
    responses.some((r) => r.url.includes('/v1/secrets/db-password/access-log') && r.body.includes('dev@localhost')),
    'the access log the browser saw has the read',
  );
  log(`${requests.length} requests, ${responses.length} responses, ${snapshots.length} pages: no value anywhere`);
  log(`screenshots in ${OUT}`);
}

let failed = false;
try {
  await main();
  log('console test passed');
} catch (e) {
  failed = true;
  console.error(e && e.stack ? e.stack : e);
  console.error(devLogs());
} finally {
  await stopDev().catch(() => {});
  if (!failed) rmSync(root, { recursive: true, force: true });
  else console.error(`kept ${root} for a look`);
}
process.exit(failed ? 1 : 0);
