import { describe, expect, it } from 'vitest';
import { auditExportURL, auditListURL, filtersFrom, toRFC3339 } from './audit';

describe('audit links', () => {
  it('the export link carries the same filters as the list', () => {
    const f = filtersFrom(new URLSearchParams('model=prod&operation=deploy&result=denied&q=a%20b&ignored=x&user='));
    expect(f).toEqual({ model: 'prod', operation: 'deploy', result: 'denied', q: 'a b' });
    expect(auditExportURL(f, 'csv')).toBe('/v1/audit/export?model=prod&operation=deploy&result=denied&q=a+b&format=csv');
    expect(auditExportURL(f, 'json')).toBe('/v1/audit/export?model=prod&operation=deploy&result=denied&q=a+b&format=json');
    expect(auditListURL(f, 'CUR', 50)).toBe('/v1/audit?model=prod&operation=deploy&result=denied&q=a+b&after=CUR&limit=50');
  });

  it('escapes values', () => {
    expect(auditExportURL({ user: 'a+b@x.com', since: '2026-01-01T00:00:00Z' }, 'csv')).toBe(
      '/v1/audit/export?since=2026-01-01T00%3A00%3A00Z&user=a%2Bb%40x.com&format=csv',
    );
  });

  it('times from the form become RFC 3339', () => {
    expect(toRFC3339('2026-03-04T05:06', true)).toBe('2026-03-04T05:06:00Z');
    expect(toRFC3339('', true)).toBe('');
    expect(toRFC3339('garbage', true)).toBe('');
  });
});
