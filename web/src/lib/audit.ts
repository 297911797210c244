// Audit filters as the URL holds them and as GET /v1/audit and its export
// take them (docs/hub/audit.md): the view's query string, the API's query
// and the export link are built from the same object, so a download is
// exactly the filtered set on screen.

export const AUDIT_FILTERS = ['since', 'until', 'user', 'actor', 'org', 'controller', 'model', 'operation', 'result', 'q'] as const;
export type AuditFilterKey = (typeof AUDIT_FILTERS)[number];
export type AuditFilters = Partial<Record<AuditFilterKey, string>>;

export function filtersFrom(q: URLSearchParams): AuditFilters {
  const f: AuditFilters = {};
  for (const k of AUDIT_FILTERS) {
    const v = q.get(k)?.trim();
    if (v) f[k] = v;
  }
  return f;
}

function query(f: AuditFilters, extra: Record<string, string>): string {
  const u = new URLSearchParams();
  for (const k of AUDIT_FILTERS) {
    const v = f[k]?.trim();
    if (v) u.set(k, v);
  }
  for (const k of Object.keys(extra).sort()) if (extra[k]) u.set(k, extra[k]);
  return u.toString();
}

export function auditListURL(f: AuditFilters, after = '', limit = 100): string {
  return `/v1/audit?${query(f, { after, limit: String(limit) })}`;
}

export function auditExportURL(f: AuditFilters, format: 'csv' | 'json'): string {
  return `/v1/audit/export?${query(f, { format })}`;
}

// toRFC3339 turns a datetime-local input's value (the browser's local
// time, or UTC when utc is set) into the RFC 3339 time the API takes.
export function toRFC3339(local: string, utc: boolean): string {
  if (!local) return '';
  const d = new Date(utc ? `${local}Z` : local);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString().replace(/\.000Z$/, 'Z');
}

export function fmtTime(iso: string, utc: boolean): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  if (utc) return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  return d.toLocaleString();
}
