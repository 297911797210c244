import { signal } from '@preact/signals';

// The route is the URL: path for the view, query for its filters, so
// back/forward and reload give the same view.
export interface Route {
  path: string;
  query: URLSearchParams;
}

function current(): Route {
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

export const route = signal<Route>(current());

export function navigate(to: string, replace = false): void {
  const here = location.pathname + location.search;
  if (to === here) return;
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  route.value = current();
}

// setQuery replaces the query of the current path (filters: replace, so
// typing in a filter box does not fill the history).
export function setQuery(params: Record<string, string | undefined>, replace = true): void {
  const q = new URLSearchParams();
  for (const k of Object.keys(params).sort()) {
    const v = params[k];
    if (v) q.set(k, v);
  }
  const s = q.toString();
  navigate(location.pathname + (s ? `?${s}` : ''), replace);
}

export function startRouter(): void {
  route.value = current();
  addEventListener('popstate', () => {
    route.value = current();
  });
  // Same-origin links navigate in place.
  document.addEventListener('click', (ev) => {
    if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    const a = (ev.target as Element | null)?.closest?.('a');
    if (!a || a.target || a.hasAttribute('download') || a.dataset.external !== undefined) return;
    const href = a.getAttribute('href');
    if (!href || !href.startsWith('/') || href.startsWith('/v1/') || href.startsWith('/auth/')) return;
    ev.preventDefault();
    navigate(href);
  });
}

// match returns the parameters of path against a pattern like
// "/models/:uuid", or null.
export function match(pattern: string, path: string): Record<string, string> | null {
  const ps = pattern.split('/');
  const xs = path.replace(/\/+$/, '').split('/');
  if (ps.length !== xs.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < ps.length; i++) {
    if (ps[i].startsWith(':')) out[ps[i].slice(1)] = decodeURIComponent(xs[i]);
    else if (ps[i] !== xs[i]) return null;
  }
  return out;
}
