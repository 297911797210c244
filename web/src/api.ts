// The one way the dashboard calls the API: same-origin fetches with the
// session cookie, JSON bodies, and the CSRF header on every mutation (the
// server also checks Origin, which the browser sends).

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

// onUnauthorized is called on a 401: the session module refreshes the
// session (true: the call is tried once more) or sends the user to log in.
let onUnauthorized: (() => Promise<boolean>) | null = null;
export function setUnauthorizedHandler(fn: () => Promise<boolean>): void {
  onUnauthorized = fn;
}

export interface CallOptions {
  body?: unknown;
  raw?: BodyInit;
  contentType?: string;
  signal?: AbortSignal;
}

export async function call<T>(method: string, path: string, opts: CallOptions = {}, retried = false): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  let body: BodyInit | undefined;
  if (opts.raw !== undefined) {
    body = opts.raw;
    headers['Content-Type'] = opts.contentType ?? 'application/octet-stream';
  } else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['Content-Type'] = 'application/json';
  }
  if (method !== 'GET' && method !== 'HEAD') headers['X-Drover-CSRF'] = '1';
  const resp = await fetch(path, { method, headers, body, credentials: 'same-origin', signal: opts.signal });
  if (resp.status === 401 && onUnauthorized && !retried && (await onUnauthorized())) {
    return call<T>(method, path, opts, true);
  }
  if (!resp.ok) {
    let code = 'internal';
    let message = resp.statusText || `HTTP ${resp.status}`;
    let details: Record<string, unknown> | undefined;
    try {
      const e = await resp.json();
      code = e.code ?? code;
      message = e.message ?? message;
      details = e.details;
    } catch {
      // a body that is not an API error: keep the status text
    }
    throw new ApiError(resp.status, code, message, details);
  }
  if (resp.status === 204) return undefined as T;
  const text = await resp.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export const get = <T>(path: string, signal?: AbortSignal) => call<T>('GET', path, { signal });
export const post = <T>(path: string, body?: unknown) => call<T>('POST', path, { body: body ?? {} });
export const patch = <T>(path: string, body: unknown) => call<T>('PATCH', path, { body });
export const del = <T>(path: string, body?: unknown) => call<T>('DELETE', path, { body });

// qs builds a query string from the non-empty values, in key order, so the
// same filters always give the same URL.
export function qs(params: Record<string, string | number | boolean | undefined | null>): string {
  const u = new URLSearchParams();
  for (const k of Object.keys(params).sort()) {
    const v = params[k];
    if (v === undefined || v === null || v === '' || v === false) continue;
    u.set(k, String(v));
  }
  const s = u.toString();
  return s ? `?${s}` : '';
}

export const enc = encodeURIComponent;

// wsURL is the websocket URL of an API path on this origin.
export function wsURL(path: string, loc: Location = location): string {
  const proto = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${proto}//${loc.host}${path}`;
}

// errorText is what a view shows for a failed call.
export function errorText(e: unknown): string {
  if (e instanceof ApiError) return `${e.message} (${e.code})`;
  if (e instanceof Error) return e.message;
  return String(e);
}
