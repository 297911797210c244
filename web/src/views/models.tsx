import { useMemo } from 'preact/hooks';
import { get } from '../api';
import { federation, fedVersion, markOnce } from '../live';
import { modelStatus } from '../live/federation';
import { navigate, route, setQuery } from '../router';
import { config } from '../session';
import { ErrorBox, Loading, Status, useAsync, VirtualTable } from '../components';
import type { ModelRow } from '../types';

const FILTERS = ['controller', 'region', 'org', 'owner', 'status'] as const;
type FilterKey = (typeof FILTERS)[number];

function value(m: ModelRow, k: FilterKey): string {
  switch (k) {
    case 'status':
      return modelStatus(m);
    case 'region':
      return m.region ?? '';
    default:
      return (m[k] as string | undefined) ?? '';
  }
}

// filterModels applies the URL's filters and search to the rows, all on
// the client: the stream already holds every model the user may read.
export function filterModels(rows: ModelRow[], q: URLSearchParams): ModelRow[] {
  const text = (q.get('q') ?? '').trim().toLowerCase();
  const want = FILTERS.map((k) => [k, q.get(k) ?? ''] as const).filter(([, v]) => v);
  const group = q.get('group') as FilterKey | null;
  const out = rows.filter((m) => {
    for (const [k, v] of want) if (value(m, k) !== v) return false;
    if (!text) return true;
    return `${m.name} ${m.owner} ${m.org ?? ''} ${m.controller ?? ''} ${m.uuid}`.toLowerCase().includes(text);
  });
  out.sort((a, b) => {
    if (group && FILTERS.includes(group)) {
      const ga = value(a, group);
      const gb = value(b, group);
      if (ga !== gb) return ga < gb ? -1 : 1;
    }
    const ka = `${a.org ?? ''}/${a.name}`;
    const kb = `${b.org ?? ''}/${b.name}`;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
  return out;
}

export function Models() {
  if (config.value.mode !== 'hub') return <ControllerModels />;
  const v = fedVersion.value;
  const rows = useMemo(() => [...federation.models.values()], [v]);
  if (!federation.loaded) return <Loading what="Loading models" />;
  return <ModelList rows={rows} />;
}

function ControllerModels() {
  const r = useAsync((s) => get<ModelRow[] | { models: ModelRow[] }>('/v1/models', s), []);
  if (r.error) return <ErrorBox error={r.error} />;
  if (!r.data) return <Loading what="Loading models" />;
  return <ModelList rows={Array.isArray(r.data) ? r.data : r.data.models} />;
}

function ModelList({ rows }: { rows: ModelRow[] }) {
  const q = route.value.query;
  const shown = useMemo(() => filterModels(rows, q), [rows, q.toString()]);
  const options = useMemo(() => {
    const o: Record<string, string[]> = {};
    for (const k of FILTERS) o[k] = [...new Set(rows.map((m) => value(m, k)).filter(Boolean))].sort();
    return o;
  }, [rows]);
  const params = Object.fromEntries(q.entries());
  const set = (k: string, v: string) => setQuery({ ...params, [k]: v || undefined });
  const group = q.get('group') ?? '';
  const groups = useMemo(() => {
    if (!group) return [];
    const c = new Map<string, number>();
    for (const m of shown) c.set(value(m, group as FilterKey), (c.get(value(m, group as FilterKey)) ?? 0) + 1);
    return [...c.entries()];
  }, [shown, group]);
  const hub = config.value.mode === 'hub';
  return (
    <section>
      <h1>
        Models <span class="count" data-testid="model-count">{shown.length}</span>
        {shown.length !== rows.length && <span class="muted"> of {rows.length}</span>}
      </h1>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>
          Search
          <input type="search" value={q.get('q') ?? ''} onInput={(e) => set('q', e.currentTarget.value)} data-testid="model-search" />
        </label>
        {FILTERS.filter((k) => hub || k === 'owner' || k === 'status').map((k) => (
          <label>
            {k[0].toUpperCase() + k.slice(1)}
            <select value={q.get(k) ?? ''} onChange={(e) => set(k, e.currentTarget.value)} data-testid={`filter-${k}`}>
              <option value="">all</option>
              {options[k].map((o) => (
                <option value={o}>{o}</option>
              ))}
            </select>
          </label>
        ))}
        <label>
          Group by
          <select value={group} onChange={(e) => set('group', e.currentTarget.value)} data-testid="group-by">
            <option value="">none</option>
            {FILTERS.map((k) => (
              <option value={k}>{k}</option>
            ))}
          </select>
        </label>
      </form>
      {groups.length > 0 && (
        <ul class="groups" aria-label="Groups">
          {groups.map(([g, n]) => (
            <li>
              <button type="button" class="chip" onClick={() => set(group, g)} data-testid="group-chip">
                {g || '(none)'} <span class="count">{n}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
      <VirtualTable
        rows={shown}
        testId="models-table"
        rowTestId="model-row"
        caption="Models"
        rowKey={(m) => m.uuid}
        onPaint={() => markOnce('drover:models-rendered')}
        onRow={(m) => navigate(`/models/${m.uuid}`)}
        columns={[
          ...(group ? [{ title: group, cell: (m: ModelRow) => value(m, group as FilterKey) }] : []),
          { title: 'Model', cell: (m) => <a href={`/models/${m.uuid}`}>{m.name}</a> },
          ...(hub ? [{ title: 'Organization', cell: (m: ModelRow) => m.org ?? '' }] : []),
          { title: 'Owner', cell: (m) => m.owner },
          ...(hub
            ? [
                { title: 'Controller', cell: (m: ModelRow) => m.controller ?? '' },
                { title: 'Region', cell: (m: ModelRow) => [m.cloud, m.region].filter(Boolean).join('/') },
              ]
            : []),
          { title: 'Status', cell: (m) => <Status value={statusText(m)} /> },
          { title: 'Apps', cell: (m) => String(m['application-count'] ?? ''), class: 'num' },
          { title: 'Units', cell: (m) => String(m['unit-count'] ?? ''), class: 'num' },
          { title: 'Machines', cell: (m) => String(m['machine-count'] ?? ''), class: 'num' },
        ]}
      />
    </section>
  );
}

// statusText is a model's status as the table shows it: with its
// controller's loss, and with the phase of a migration under way.
export function statusText(m: ModelRow): string {
  let s = modelStatus(m);
  if (m['controller-status'] === 'disconnected') s += ' (controller disconnected)';
  const p = m['migration-phase'];
  if (p && !['DONE', 'ABORTED', 'REAPFAILED'].includes(p)) s += ` (migrating: ${p})`;
  return s;
}
