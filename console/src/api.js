// The one way the Console talks to the API: same origin, the documented
// people-facing routes under /v1 only, the token in the Authorization
// header. The token lives in sessionStorage: never in localStorage, a cookie
// or a URL. The Console never calls an Agent and has no route that carries a
// secret value (it never asks for /v1/secrets/{key}/versions).

const TOKEN_KEY = 'heimdall.token';

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
}

export function signOut() {
  sessionStorage.clear();
}

/** An error the API answered (`{"error":{"code","message"}}`), or a transport failure. */
export class ApiError extends Error {
  constructor(status, code, message, fields) {
    super(message);
    this.status = status;
    this.code = code;
    this.fields = fields || null;
  }
}

let onUnauthorized = () => {};

/** What to do when the API answers 401: the token is gone or wrong. */
export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

function path(route, query) {
  if (!route.startsWith('/v1/')) throw new Error(`not an API route: ${route}`);
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  }
  const qs = params.toString();
  return qs ? `${route}?${qs}` : route;
}

/** A path segment, escaped. */
export function seg(value) {
  return encodeURIComponent(String(value));
}

/**
 * Calls the API; answers `{ body, headers }` or throws ApiError. A 401 signs
 * out and returns to the sign-in form.
 */
export async function call(method, route, { query, body } = {}) {
  const headers = { Accept: 'application/json' };
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(path(route, query), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
      redirect: 'error',
      referrerPolicy: 'no-referrer',
    });
  } catch (e) {
    throw new ApiError(0, 'NETWORK', `the API did not answer: ${e.message}`);
  }
  const text = await response.text();
  let parsed = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
  }
  if (!response.ok) {
    const err = parsed && parsed.error;
    const apiError = err
      ? new ApiError(response.status, err.code, err.message, err.fields)
      : new ApiError(response.status, `HTTP_${response.status}`, response.statusText || 'request failed');
    if (response.status === 401) onUnauthorized(apiError);
    throw apiError;
  }
  return { body: parsed, headers: response.headers };
}

export async function get(route, query) {
  return (await call('GET', route, { query })).body;
}

/** One page of a list paginated with `Heimdall-Next-After` → `after=`. */
export async function page(route, query) {
  const { body, headers } = await call('GET', route, { query });
  return { items: body || [], next: headers.get('Heimdall-Next-After') };
}

/** Every page of such a list. */
export async function all(route, query) {
  const items = [];
  let after;
  for (;;) {
    const p = await page(route, { ...query, after });
    items.push(...p.items);
    if (!p.next) return items;
    after = p.next;
  }
}

export async function post(route, body) {
  return (await call('POST', route, { body })).body;
}
