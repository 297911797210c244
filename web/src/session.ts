import { signal } from '@preact/signals';
import { ApiError, get, setUnauthorizedHandler } from './api';
import type { Capabilities, RuntimeConfig, WhoAmI } from './types';

// The session: the runtime config the server gives (/config.json), who is
// logged in and what they may do. Tokens stay in HttpOnly cookies: nothing
// here ever sees one.

export const config = signal<RuntimeConfig>({ mode: 'hub' });
export const me = signal<WhoAmI | null>(null);
// needLogin: the controller's login form is shown (controller mode).
export const needLogin = signal(false);

// The hub's web session lasts 15 minutes (hub.Config.SessionTTL): refresh
// well before.
const REFRESH_EVERY = 10 * 60 * 1000;
let refreshTimer: ReturnType<typeof setInterval> | null = null;

export function can(): Capabilities {
  const c = me.value?.can;
  return {
    superuser: c?.superuser ?? me.value?.access === 'superuser',
    'audit-viewer': c?.['audit-viewer'] ?? false,
    'admin-orgs': c?.['admin-orgs'] ?? [],
    'add-model': c?.['add-model'] ?? false,
  };
}

export function loginURL(returnTo: string = location.pathname + location.search): string {
  return `/auth/login?return_to=${encodeURIComponent(returnTo)}`;
}

function toLogin(): void {
  if (config.value.mode === 'controller') {
    me.value = null;
    needLogin.value = true;
  } else {
    location.assign(loginURL());
  }
}

let refreshing: Promise<boolean> | null = null;

// refresh rotates the hub's session cookies; false when the session is
// gone (the user logs in again).
export function refresh(): Promise<boolean> {
  if (config.value.mode !== 'hub') return Promise.resolve(false);
  refreshing ??= fetch('/auth/refresh', { method: 'POST', credentials: 'same-origin', headers: { 'X-Drover-CSRF': '1' } })
    .then((r) => r.ok)
    .catch(() => false)
    .finally(() => {
      refreshing = null;
    });
  return refreshing;
}

export async function boot(): Promise<void> {
  try {
    const r = await fetch('/config.json', { credentials: 'same-origin' });
    if (r.ok) config.value = await r.json();
  } catch {
    // no config: a hub, the default
  }
  setUnauthorizedHandler(async () => {
    if (await refresh()) return true;
    toLogin();
    return false;
  });
  try {
    me.value = await get<WhoAmI>('/v1/whoami');
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      if (config.value.mode === 'controller') needLogin.value = true;
      return;
    }
    throw e;
  }
  if (config.value.mode === 'hub' && !refreshTimer) {
    refreshTimer = setInterval(() => void refresh(), REFRESH_EVERY);
  }
}

// controllerLogin posts a standalone controller's user and password; the
// controller answers with a session cookie.
export async function controllerLogin(user: string, password: string): Promise<string> {
  const r = await fetch('/auth/login', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'X-Drover-CSRF': '1' },
    body: JSON.stringify({ user, password }),
  });
  if (!r.ok) {
    try {
      const e = await r.json();
      return e.message ?? 'login refused';
    } catch {
      return `login refused (HTTP ${r.status})`;
    }
  }
  needLogin.value = false;
  me.value = await get<WhoAmI>('/v1/whoami');
  return '';
}

export async function logout(): Promise<void> {
  await fetch('/auth/logout', { method: 'POST', credentials: 'same-origin', headers: { 'X-Drover-CSRF': '1' } }).catch(() => undefined);
  if (refreshTimer) clearInterval(refreshTimer);
  refreshTimer = null;
  me.value = null;
  if (config.value.mode === 'controller') needLogin.value = true;
  else location.assign('/');
}
