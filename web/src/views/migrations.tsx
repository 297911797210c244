import { useState } from 'preact/hooks';
import { enc, get, post, qs } from '../api';
import { federation, fedVersion } from '../live';
import { navigate, route, setQuery } from '../router';
import { ErrorBox, Field, Loading, Status, useAsync, VirtualTable } from '../components';
import type { ModelRow, Migration, MigrationEvent } from '../types';

// Migrations (GET/POST /v1/migrations, events, abort): a list, a start
// form, and one migration's phase timeline with its agents' counts. A
// migration is read again whenever the federation stream changes its
// model's row (its controller switches at SUCCESS) or on request.

export const PHASES = ['PRECHECK', 'QUIESCE', 'EXPORT', 'IMPORT', 'VALIDATION', 'SUCCESS', 'LOGTRANSFER', 'REAP', 'DONE'];

// timeline says, for each phase of the happy path, whether the migration
// has passed it, is in it, or has not reached it; an aborted migration
// ends where it stopped.
export function timeline(m: Migration, events: MigrationEvent[]): { phase: string; state: 'done' | 'current' | 'todo' | 'failed' }[] {
  const seen = new Set(events.filter((e) => e.kind === 'phase').map((e) => e.phase));
  const at = PHASES.indexOf(m.phase);
  const aborted = ['ABORTING', 'ABORTED', 'REAPFAILED'].includes(m.phase);
  let last = at;
  if (aborted) last = Math.max(-1, ...PHASES.map((p, i) => (seen.has(p) ? i : -1)));
  return PHASES.map((phase, i) => ({
    phase,
    state: m.phase === 'DONE' || i < last ? 'done' : i === last ? (aborted ? 'failed' : 'current') : 'todo',
  }));
}

function StartForm() {
  const [mdl, setModel] = useState(route.value.query.get('model') ?? '');
  const [target, setTarget] = useState('');
  const [err, setErr] = useState<unknown>(null);
  fedVersion.value;
  const controllers = [...federation.controllers.keys()].sort();
  const models = [...federation.models.values()].sort((a, b) => (`${a.org}/${a.name}` < `${b.org}/${b.name}` ? -1 : 1));
  const submit = async (e: Event) => {
    e.preventDefault();
    setErr(null);
    try {
      const m = await post<Migration>('/v1/migrations', { model: mdl, 'target-controller': target });
      navigate(`/migrations/${m.id}`);
    } catch (x) {
      setErr(x);
    }
  };
  return (
    <form class="card row wrap" onSubmit={submit} data-testid="migrate-form">
      <h2>Start a migration</h2>
      <Field label="Model" id="mig-model">
        <select id="mig-model" value={mdl} onChange={(e) => setModel(e.currentTarget.value)} required data-testid="migrate-model">
          <option value="">choose…</option>
          {models.map((m) => (
            <option value={m.uuid}>{`${m.org ? `${m.org}/` : ''}${m.name} (${m.controller})`}</option>
          ))}
        </select>
      </Field>
      <Field label="Target controller" id="mig-target">
        <select id="mig-target" value={target} onChange={(e) => setTarget(e.currentTarget.value)} required data-testid="migrate-target">
          <option value="">choose…</option>
          {controllers
            .filter((c) => c !== federation.models.get(mdl)?.controller)
            .map((c) => (
              <option value={c}>{c}</option>
            ))}
        </select>
      </Field>
      <button type="submit" data-testid="migrate">
        Migrate
      </button>
      <ErrorBox error={err} />
    </form>
  );
}

function List() {
  const active = route.value.query.get('active') === 'true';
  const list = useAsync((s) => get<Migration[] | { migrations: Migration[] }>(`/v1/migrations${qs({ active })}`, s), [active]);
  const rows = Array.isArray(list.data) ? list.data : list.data?.migrations ?? [];
  return (
    <section>
      <h1>Migrations</h1>
      <StartForm />
      <label class="inline">
        <input type="checkbox" checked={active} onChange={(e) => setQuery({ active: e.currentTarget.checked ? 'true' : undefined })} /> active only
      </label>
      {list.error ? (
        <ErrorBox error={list.error} />
      ) : !list.data ? (
        <Loading />
      ) : (
        <VirtualTable
          rows={rows}
          testId="migrations-table"
          rowTestId="migration-row"
          caption="Migrations, newest first"
          rowKey={(m) => m.id}
          onRow={(m) => navigate(`/migrations/${m.id}`)}
          columns={[
            { title: 'Model', cell: (m) => <a href={`/migrations/${m.id}`}>{m['model-name']}</a> },
            { title: 'From', cell: (m) => m['source-controller'] },
            { title: 'To', cell: (m) => m['target-controller'] },
            { title: 'Phase', cell: (m) => <Status value={m.phase.toLowerCase()} /> },
            { title: 'Started', cell: (m) => m['started-at'].slice(0, 19).replace('T', ' ') },
            { title: 'By', cell: (m) => m['requested-by'] },
          ]}
        />
      )}
    </section>
  );
}

// reloadKey names what of a model's row a migration's page reloads on:
// the row's migration phase changes with every phase of the migration (the
// hub writes it there), its controller at SUCCESS.
export function reloadKey(row: ModelRow): string {
  return `${row.controller}|${row['migration-phase'] ?? ''}|${JSON.stringify(row.status)}|${row.life}`;
}

function Detail({ id }: { id: string }) {
  fedVersion.value; // re-read when the stream changes the model's row
  const [uuid, setUUID] = useState('');
  const row = uuid ? federation.models.get(uuid) : undefined;
  const rowKey = row ? reloadKey(row) : '';
  const both = useAsync(
    async (s) => {
      const [mig, events] = await Promise.all([get<Migration>(`/v1/migrations/${enc(id)}`, s), get<MigrationEvent[]>(`/v1/migrations/${enc(id)}/events`, s)]);
      setUUID(mig['model-uuid']);
      return { mig, events };
    },
    [id, rowKey],
  );
  const m = { data: both.data?.mig, error: both.error, reload: both.reload };
  const ev = { data: both.data?.events, error: undefined as unknown, reload: () => undefined };
  const [err, setErr] = useState<unknown>(null);
  if (m.error) return <ErrorBox error={m.error} />;
  if (!m.data) return <Loading />;
  const mig = m.data;
  const abort = async () => {
    if (!confirm(`Abort the migration of ${mig['model-name']}?`)) return;
    setErr(null);
    try {
      await post(`/v1/migrations/${enc(id)}/abort`);
      m.reload();
      ev.reload();
    } catch (x) {
      setErr(x);
    }
  };
  const final = ['DONE', 'ABORTED', 'REAPFAILED'].includes(mig.phase);
  const pastSuccess = PHASES.indexOf(mig.phase) >= PHASES.indexOf('SUCCESS');
  return (
    <section>
      <p>
        <a href="/migrations">Migrations</a>
      </p>
      <h1>
        Migration of {mig['model-name']}: {mig['source-controller']} → {mig['target-controller']}
      </h1>
      <ol class="timeline" data-testid="migration-timeline">
        {timeline(mig, ev.data ?? []).map((t) => (
          <li class={`phase phase-${t.state}`} data-testid="migration-phase" data-state={t.state} aria-current={t.state === 'current' ? 'step' : undefined}>
            {t.phase}
          </li>
        ))}
      </ol>
      <p>
        Phase <strong data-testid="migration-phase-now">{mig.phase}</strong>
        {mig.message && ` — ${mig.message}`}
      </p>
      {mig.failure && (
        <p class="error" role="alert">
          {mig.failure}
        </p>
      )}
      <p data-testid="migration-agents">
        Agents: {mig.agents.ok} ok, {mig.agents.pending} pending, {mig.agents.failed} failed
      </p>
      {mig.agents.reasons && (
        <ul>
          {Object.keys(mig.agents.reasons)
            .sort()
            .map((k) => (
              <li>
                {k}: {mig.agents.reasons![k]}
              </li>
            ))}
        </ul>
      )}
      <p>
        <button type="button" onClick={() => (m.reload(), ev.reload())} data-testid="migration-refresh">
          Refresh
        </button>{' '}
        {!final && !pastSuccess && !mig['abort-requested'] && (
          <button type="button" class="danger" onClick={abort} data-testid="abort-migration">
            Abort
          </button>
        )}
      </p>
      <ErrorBox error={err} />
      <h2>History</h2>
      {ev.error ? (
        <ErrorBox error={ev.error} />
      ) : (
        <VirtualTable
          rows={ev.data ?? []}
          testId="migration-events"
          rowTestId="migration-event"
          caption="Migration history"
          rowKey={(e) => String(e.seq)}
          columns={[
            { title: 'Time', cell: (e) => e.at.slice(0, 19).replace('T', ' ') },
            { title: 'Kind', cell: (e) => e.kind },
            { title: 'Phase', cell: (e) => e.phase },
            { title: 'Attempt', cell: (e) => String(e.attempt), class: 'num' },
            { title: 'Detail', cell: (e) => e.detail ?? '', class: 'wrap' },
          ]}
        />
      )}
    </section>
  );
}

export default function Migrations({ id }: { id?: string }) {
  return id ? <Detail id={id} /> : <List />;
}
