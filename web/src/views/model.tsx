import { useMemo } from 'preact/hooks';
import { enc, get } from '../api';
import { federation, markOnce, model, modelVersion } from '../live';
import { appStatus, type AppRow, type MachineRow, type RelationRow, type UnitRow } from '../live/model';
import { route, setQuery } from '../router';
import { config, me } from '../session';
import { Drawer, ErrorBox, lazy, Loading, Status, Tabs, useAsync, VirtualTable } from '../components';
import type { Access } from '../types';
import { DebugLog } from './logs';

const Graph = lazy(() => import('./graph'));
const Operate = lazy(() => import('./operate'));

export const relLabel = (r: RelationRow) => r.ends.map((e) => `${e.app}:${e.endpoint}`).join(' ↔ ');

// useModelAccess is what the caller may do on the model: the hub answers
// GET /v1/access; a standalone controller's superuser may do anything.
export function useModelAccess(uuid: string): Access | null {
  const hub = config.value.mode === 'hub';
  const r = useAsync(
    (s) => (hub ? get<Access>(`/v1/access?object=${enc(`model:${uuid}`)}`, s) : Promise.resolve({ object: `model:${uuid}`, read: true, write: me.value?.access === 'superuser', admin: me.value?.access === 'superuser' })),
    [uuid, hub],
  );
  return r.data ?? null;
}

const TABS: [string, string][] = [
  ['apps', 'Applications'],
  ['units', 'Units'],
  ['machines', 'Machines'],
  ['relations', 'Integrations'],
  ['graph', 'Graph'],
  ['logs', 'Debug log'],
  ['operate', 'Operate'],
];

export function ModelView({ uuid }: { uuid: string }) {
  const v = modelVersion.value;
  const q = route.value.query;
  const tab = q.get('tab') ?? 'apps';
  const access = useModelAccess(uuid);
  const s = model.uuid === uuid ? model : null;
  const apps = useMemo(() => (s ? [...s.apps.values()].sort((a, b) => (a.name < b.name ? -1 : 1)) : []), [v, s]);
  const units = useMemo(() => (s ? [...s.units.values()].sort(unitOrder) : []), [v, s]);
  const machines = useMemo(() => (s ? [...s.machines.values()].sort((a, b) => Number(a.id) - Number(b.id) || (a.id < b.id ? -1 : 1)) : []), [v, s]);
  const relations = useMemo(() => (s ? [...s.relations.values()].sort((a, b) => a.id - b.id) : []), [v, s]);
  const row = federation.models.get(uuid);
  const name = s?.name || row?.name || uuid;
  const href = (t: string) => `/models/${uuid}${t === 'apps' ? '' : `?tab=${t}`}`;
  const unit = q.get('unit');
  if (s?.loaded) markOnce('drover:model-rendered');
  return (
    <section>
      <h1>
        Model {name} {s?.status && <Status value={s.status} />}
      </h1>
      <p class="muted">
        {[row?.org, s?.controller || row?.controller, s?.region || row?.region].filter(Boolean).join(' · ')}
        {access && !access.write && <span data-testid="read-only"> · read only</span>}
      </p>
      {s?.gone && (
        <p class="error" role="alert">
          This model was destroyed.
        </p>
      )}
      <Tabs tabs={access?.write ? TABS : TABS.filter(([id]) => id !== 'operate')} current={tab} href={href} />
      {!s?.loaded ? (
        <Loading what="Loading the model" />
      ) : tab === 'units' ? (
        <Units units={units} uuid={uuid} leaders={s.leaders} />
      ) : tab === 'machines' ? (
        <Machines machines={machines} />
      ) : tab === 'relations' ? (
        <Relations relations={relations} />
      ) : tab === 'graph' ? (
        <Graph apps={apps} relations={relations} units={units} version={v} />
      ) : tab === 'logs' ? (
        <DebugLog uuid={uuid} />
      ) : tab === 'operate' ? (
        access?.write ? <Operate uuid={uuid} apps={apps} relations={relations} units={units} tasks={s.tasks} version={v} /> : <p class="muted">You may not change this model.</p>
      ) : (
        <>
          <Apps apps={apps} uuid={uuid} />
          <Offers offers={s.offers} />
        </>
      )}
      {unit && s?.loaded && <UnitDrawer uuid={uuid} name={unit} canRead={!!access?.write} />}
    </section>
  );
}

// Offers lists the model's offers when its status carries any.
function Offers({ offers }: { offers: Record<string, Record<string, unknown>> }) {
  const names = Object.keys(offers).sort();
  if (!names.length) return null;
  const show = (v: unknown) => (v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  return (
    <>
      <h2>Offers</h2>
      <VirtualTable
        rows={names}
        testId="offers-table"
        rowTestId="offer-row"
        caption="Offers"
        rowKey={(n) => n}
        columns={[
          { title: 'Offer', cell: (n) => n },
          { title: 'Application', cell: (n) => show(offers[n].application) },
          { title: 'Endpoints', cell: (n) => show(offers[n].endpoints) },
          { title: 'Connections', cell: (n) => show(offers[n]['active-connected-count'] ?? offers[n].connections) },
        ]}
      />
    </>
  );
}

function unitOrder(a: UnitRow, b: UnitRow): number {
  if (a.app !== b.app) return a.app < b.app ? -1 : 1;
  return Number(a.name.slice(a.name.lastIndexOf('/') + 1)) - Number(b.name.slice(b.name.lastIndexOf('/') + 1));
}

function Apps({ apps, uuid }: { apps: AppRow[]; uuid: string }) {
  const counts = new Map<string, number>();
  for (const u of model.units.values()) counts.set(u.app, (counts.get(u.app) ?? 0) + 1);
  return (
    <VirtualTable
      rows={apps}
      testId="apps-table"
      rowTestId="app-row"
      caption="Applications"
      rowKey={(a) => a.name}
      columns={[
        { title: 'Application', cell: (a) => <a href={`/models/${uuid}?tab=units&app=${enc(a.name)}`}>{a.name}</a> },
        { title: 'Status', cell: (a) => <Status value={appStatus(model, a)} /> },
        { title: 'Charm', cell: (a) => a.charm },
        { title: 'Rev', cell: (a) => String(a.rev), class: 'num' },
        { title: 'Units', cell: (a) => String(counts.get(a.name) ?? 0), class: 'num' },
        { title: 'Exposed', cell: (a) => (a.exposed ? 'yes' : 'no') },
        { title: 'Message', cell: (a) => a.message, class: 'wrap' },
      ]}
    />
  );
}

function Units({ units, uuid, leaders }: { units: UnitRow[]; uuid: string; leaders: Map<string, string> }) {
  const app = route.value.query.get('app');
  const rows = app ? units.filter((u) => u.app === app) : units;
  const open = (u: UnitRow) => setQuery({ ...Object.fromEntries(route.value.query.entries()), unit: u.name }, false);
  return (
    <>
      {app && (
        <p>
          Units of {app} · <a href={`/models/${uuid}?tab=units`}>all units</a>
        </p>
      )}
      <VirtualTable
        rows={rows}
        testId="units-table"
        rowTestId="unit-row"
        caption="Units"
        rowKey={(u) => u.name}
        onRow={open}
        columns={[
          {
            title: 'Unit',
            cell: (u) => (
              <button type="button" class="link" onClick={(e) => (e.stopPropagation(), open(u))}>
                {u.principal ? `  ${u.name}` : u.name}
                {leaders.get(u.app) === u.name ? '*' : ''}
              </button>
            ),
          },
          { title: 'Workload', cell: (u) => <Status value={u.workload} /> },
          { title: 'Agent', cell: (u) => u.agent },
          { title: 'Machine', cell: (u) => u.machine },
          { title: 'Address', cell: (u) => u.address },
          { title: 'Ports', cell: (u) => u.ports.join(' ') },
          { title: 'Message', cell: (u) => u.message, class: 'wrap' },
        ]}
      />
    </>
  );
}

function Machines({ machines }: { machines: MachineRow[] }) {
  return (
    <VirtualTable
      rows={machines}
      testId="machines-table"
      rowTestId="machine-row"
      caption="Machines"
      rowKey={(m) => m.id}
      columns={[
        { title: 'Machine', cell: (m) => m.id },
        { title: 'State', cell: (m) => <Status value={m.status} /> },
        { title: 'Address', cell: (m) => m.address },
        { title: 'Instance', cell: (m) => m.instance },
        { title: 'Base', cell: (m) => m.base },
        { title: 'Message', cell: (m) => m.message, class: 'wrap' },
      ]}
    />
  );
}

// Relations is the table of the graph's relations: the same rows, for
// screen readers and for models too large to look at as a picture.
export function Relations({ relations }: { relations: RelationRow[] }) {
  return (
    <VirtualTable
      rows={relations}
      testId="relations-table"
      rowTestId="relation-row"
      caption="Integrations"
      rowKey={(r) => String(r.id)}
      columns={[
        { title: 'ID', cell: (r) => String(r.id), class: 'num' },
        { title: 'Provider', cell: (r) => `${r.ends[0]?.app}:${r.ends[0]?.endpoint}` },
        { title: 'Requirer', cell: (r) => (r.ends[1] ? `${r.ends[1].app}:${r.ends[1].endpoint}` : '(peer)') },
        { title: 'Interface', cell: (r) => r.interface },
        { title: 'Type', cell: (r) => r.type },
        { title: 'Status', cell: (r) => r.status },
      ]}
    />
  );
}

interface RelationInfo {
  'relation-id': number;
  endpoint: string;
  'related-endpoint': string;
  'application-data'?: Record<string, string>;
  'local-unit'?: { 'in-scope': boolean; data?: Record<string, string> };
  'related-units'?: Record<string, { 'in-scope': boolean; data?: Record<string, string> }>;
}

function Bag({ data }: { data?: Record<string, string> }) {
  const keys = Object.keys(data ?? {}).sort();
  if (!keys.length) return <p class="muted">empty</p>;
  return (
    <dl class="bag">
      {keys.map((k) => (
        <>
          <dt>{k}</dt>
          <dd>
            <code>{data![k]}</code>
          </dd>
        </>
      ))}
    </dl>
  );
}

// UnitDrawer shows one unit and its relation data as its hooks see it
// (GET .../relation-info, which needs write access).
function UnitDrawer({ uuid, name, canRead }: { uuid: string; name: string; canRead: boolean }) {
  const u = model.units.get(name);
  const close = () => {
    const p = Object.fromEntries(route.value.query.entries());
    delete p.unit;
    setQuery(p, false);
  };
  const [app, n] = [name.slice(0, name.lastIndexOf('/')), name.slice(name.lastIndexOf('/') + 1)];
  const info = useAsync(
    (s) => (canRead ? get<RelationInfo[]>(`/v1/models/${uuid}/units/${enc(app)}/${enc(n)}/relation-info`, s) : Promise.resolve([])),
    [uuid, name, canRead],
  );
  return (
    <Drawer title={`Unit ${name}`} onClose={close} testId="unit-detail">
      {u ? (
        <dl class="kv">
          <dt>Workload</dt>
          <dd>
            <Status value={u.workload} /> {u.message}
          </dd>
          <dt>Agent</dt>
          <dd>{u.agent}</dd>
          <dt>Machine</dt>
          <dd>{u.machine}</dd>
          {u.principal && (
            <>
              <dt>Principal</dt>
              <dd>{u.principal}</dd>
            </>
          )}
          <dt>Address</dt>
          <dd>{u.address}</dd>
        </dl>
      ) : (
        <p class="muted">This unit is gone.</p>
      )}
      <h3>Relation data</h3>
      {!canRead ? (
        <p class="muted">Relation data needs write access to the model.</p>
      ) : info.error ? (
        <ErrorBox error={info.error} />
      ) : !info.data ? (
        <Loading />
      ) : !info.data.length ? (
        <p class="muted">No relations.</p>
      ) : (
        info.data.map((r) => (
          <section class="relinfo" data-testid="relation-info">
            <h4>
              #{r['relation-id']} {r.endpoint} → {r['related-endpoint']}
            </h4>
            <h5>Application data</h5>
            <Bag data={r['application-data']} />
            <h5>This unit{r['local-unit']?.['in-scope'] ? '' : ' (not in scope)'}</h5>
            <Bag data={r['local-unit']?.data} />
            {Object.keys(r['related-units'] ?? {})
              .sort()
              .map((ru) => (
                <>
                  <h5>{ru}</h5>
                  <Bag data={r['related-units']![ru].data} />
                </>
              ))}
          </section>
        ))
      )}
    </Drawer>
  );
}
