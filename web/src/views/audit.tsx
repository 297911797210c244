import { useEffect, useState } from 'preact/hooks';
import { get } from '../api';
import { AUDIT_FILTERS, auditExportURL, auditListURL, filtersFrom, fmtTime, toRFC3339, type AuditFilters } from '../lib/audit';
import { route, setQuery } from '../router';
import { Drawer, ErrorBox, Loading, Status, VirtualTable } from '../components';
import type { AuditEntry } from '../types';

// The audit log (GET /v1/audit): filters in the URL, sent to the server;
// newest first, keyset paging with the answer's `next` cursor ("older");
// a detail drawer per entry; export links with the same filters.

const LABELS: Record<string, string> = {
  since: 'Since', until: 'Until', user: 'User', actor: 'Actor', org: 'Organization', controller: 'Controller',
  model: 'Model', operation: 'Operation', result: 'Result', q: 'Text',
};

function toLocalInput(iso: string, utc: boolean): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  if (utc) return d.toISOString().slice(0, 16);
  const off = d.getTimezoneOffset() * 60_000;
  return new Date(d.getTime() - off).toISOString().slice(0, 16);
}

export default function Audit() {
  const q = route.value.query;
  const utc = q.get('tz') !== 'local';
  const filters = filtersFrom(q);
  const key = JSON.stringify(filters);
  const [draft, setDraft] = useState<AuditFilters>(filters);
  const [pages, setPages] = useState<{ entries: AuditEntry[]; next: string }>({ entries: [], next: '' });
  const [loading, setLoading] = useState(true);
  const [err, setErr] = useState<unknown>(null);
  const [open, setOpen] = useState<AuditEntry | null>(null);
  useEffect(() => {
    setDraft(filters);
    const ac = new AbortController();
    setLoading(true);
    setErr(null);
    get<{ entries: AuditEntry[]; next?: string }>(auditListURL(filters), ac.signal).then(
      (r) => {
        setPages({ entries: r.entries, next: r.next ?? '' });
        setLoading(false);
      },
      (e) => {
        if (!ac.signal.aborted) {
          setErr(e);
          setLoading(false);
        }
      },
    );
    return () => ac.abort();
  }, [key]);
  const older = async () => {
    setLoading(true);
    try {
      const r = await get<{ entries: AuditEntry[]; next?: string }>(auditListURL(filters, pages.next));
      setPages((p) => ({ entries: p.entries.concat(r.entries), next: r.next ?? '' }));
    } catch (e) {
      setErr(e);
    }
    setLoading(false);
  };
  const apply = (e: Event) => {
    e.preventDefault();
    setQuery({ ...draft, tz: utc ? undefined : 'local' }, false);
  };
  const field = (k: (typeof AUDIT_FILTERS)[number]) => {
    const id = `audit-${k}`;
    if (k === 'since' || k === 'until') {
      return (
        <label for={id}>
          {LABELS[k]} ({utc ? 'UTC' : 'local'})
          <input
            id={id}
            type="datetime-local"
            value={draft[k] ? toLocalInput(draft[k]!, utc) : ''}
            onInput={(e) => setDraft({ ...draft, [k]: toRFC3339(e.currentTarget.value, utc) })}
            data-testid={`audit-filter-${k}`}
          />
        </label>
      );
    }
    if (k === 'result') {
      return (
        <label for={id}>
          {LABELS[k]}
          <select id={id} value={draft.result ?? ''} onChange={(e) => setDraft({ ...draft, result: e.currentTarget.value })} data-testid="audit-filter-result">
            <option value="">any</option>
            <option value="ok">ok</option>
            <option value="denied">denied</option>
            <option value="error">error</option>
            <option value="pending">pending</option>
          </select>
        </label>
      );
    }
    return (
      <label for={id}>
        {LABELS[k]}
        <input id={id} value={draft[k] ?? ''} onInput={(e) => setDraft({ ...draft, [k]: e.currentTarget.value })} data-testid={`audit-filter-${k}`} />
      </label>
    );
  };
  return (
    <section>
      <h1>Audit log</h1>
      <form class="filters" onSubmit={apply} role="search" aria-label="Audit filters">
        {AUDIT_FILTERS.map(field)}
        <button type="submit" data-testid="audit-apply">
          Apply
        </button>
        <label class="inline">
          <input type="checkbox" checked={utc} onChange={(e) => setQuery({ ...filters, tz: e.currentTarget.checked ? undefined : 'local' })} data-testid="audit-utc" />
          UTC
        </label>
      </form>
      <p class="exports">
        Export the filtered entries:{' '}
        <a href={auditExportURL(filters, 'csv')} download data-testid="audit-export-csv">
          CSV
        </a>{' '}
        ·{' '}
        <a href={auditExportURL(filters, 'json')} download data-testid="audit-export-json">
          JSON
        </a>
      </p>
      <ErrorBox error={err} />
      <VirtualTable
        rows={pages.entries}
        testId="audit-table"
        rowTestId="audit-row"
        caption="Audit entries, newest first"
        rowKey={(e) => String(e.id)}
        onRow={setOpen}
        columns={[
          { title: 'Time', cell: (e) => <time dateTime={e.at}>{fmtTime(e.at, utc)}</time> },
          { title: 'User', cell: (e) => e['identity-id'] ?? e.actor ?? '' },
          { title: 'Operation', cell: (e) => <button type="button" class="link" onClick={(ev) => (ev.stopPropagation(), setOpen(e))}>{e.operation}</button> },
          { title: 'Result', cell: (e) => <Status value={e.result} /> },
          { title: 'Organization', cell: (e) => e.org ?? '' },
          { title: 'Controller', cell: (e) => e.controller ?? '' },
          { title: 'Model', cell: (e) => e.model ?? '' },
        ]}
      />
      {loading ? (
        <Loading />
      ) : (
        pages.next && (
          <button type="button" onClick={older} data-testid="audit-older">
            Older
          </button>
        )
      )}
      {open && (
        <Drawer title={`Audit entry ${open.id}`} onClose={() => setOpen(null)} testId="audit-detail">
          <dl class="kv">
            {(
              [
                ['Time', fmtTime(open.at, utc)], ['Identity', open['identity-id']], ['Actor', open.actor], ['Organization', open.org],
                ['Operation', open.operation], ['Request', open.method && `${open.method} ${open.path ?? ''}`], ['Result', open.result],
                ['HTTP status', open.status ? String(open.status) : ''], ['Controller', open.controller], ['Model', open.model],
                ['Model UUID', open['model-uuid']], ['Address', open['remote-addr']],
              ] as [string, string | undefined][]
            )
              .filter(([, v]) => v)
              .map(([k, v]) => (
                <>
                  <dt>{k}</dt>
                  <dd>{v}</dd>
                </>
              ))}
          </dl>
          {open.details && (
            <>
              <h3>Details</h3>
              <pre data-testid="audit-details">{JSON.stringify(open.details, null, 2)}</pre>
            </>
          )}
        </Drawer>
      )}
    </section>
  );
}
