import type { Endpoint, FullStatus, Task, UnitStatus, WatchDelta, WatchFrame } from '../types';

// The model store: a model's applications, units, machines and relations
// keyed by their ids. A reset frame carries the model's FullStatus (the
// `juju status` shape) and replaces everything; a delta frame carries the
// controller's stored entities (api.Application, api.Unit, ...), applied
// one by one. Both are turned into the same rows here.

export interface AppRow {
  name: string;
  charm: string;
  rev: number;
  sha256: string;
  subordinate: boolean;
  exposed: boolean;
  scale: number;
  status: string;
  message: string;
  endpoints: Endpoint[];
}

export interface UnitRow {
  name: string;
  app: string;
  machine: string;
  principal: string;
  workload: string;
  message: string;
  agent: string;
  address: string;
  ports: string[];
}

export interface MachineRow {
  id: string;
  status: string;
  instance: string;
  address: string;
  base: string;
  message: string;
}

export interface RelEnd {
  app: string;
  endpoint: string;
  role: string;
}

export interface RelationRow {
  id: number;
  ends: RelEnd[];
  interface: string;
  type: 'regular' | 'peer' | 'subordinate';
  status: string;
}

export interface ModelState {
  uuid: string;
  index: number;
  loaded: boolean;
  gone: boolean;
  name: string;
  controller: string;
  region: string;
  status: string;
  apps: Map<string, AppRow>;
  units: Map<string, UnitRow>;
  machines: Map<string, MachineRow>;
  relations: Map<number, RelationRow>;
  leaders: Map<string, string>; // application → leader unit
  tasks: Map<string, Task>;
  // offers are the model's offers as its status lists them (cross-model
  // relations), when the controller reports any.
  offers: Record<string, Record<string, unknown>>;
}

export function emptyModel(uuid: string): ModelState {
  return {
    uuid, index: 0, loaded: false, gone: false, name: '', controller: '', region: '', status: '',
    apps: new Map(), units: new Map(), machines: new Map(), relations: new Map(), leaders: new Map(), tasks: new Map(), offers: {},
  };
}

function splitEnd(s: string): RelEnd {
  const i = s.indexOf(':');
  return i < 0 ? { app: s, endpoint: '', role: '' } : { app: s.slice(0, i), endpoint: s.slice(i + 1), role: '' };
}

function unitFromStatus(name: string, u: UnitStatus, principal: string, machine: string): UnitRow {
  return {
    name,
    app: name.slice(0, name.lastIndexOf('/')),
    machine: u.machine ?? machine,
    principal,
    workload: u['workload-status']?.current ?? '',
    message: u['workload-status']?.message ?? '',
    agent: u['juju-status']?.current ?? '',
    address: u['public-address'] ?? '',
    ports: u['open-ports'] ?? [],
  };
}

function resetFrom(s: ModelState, fs: FullStatus, index: number): void {
  s.apps = new Map();
  s.units = new Map();
  s.machines = new Map();
  s.relations = new Map();
  s.leaders = new Map();
  s.name = fs.model?.name ?? s.name;
  s.controller = fs.model?.controller ?? '';
  s.region = fs.model?.region ?? '';
  s.status = fs.model?.['model-status']?.current ?? '';
  s.offers = (fs.offers ?? {}) as Record<string, Record<string, unknown>>;
  for (const [name, a] of Object.entries(fs.applications ?? {})) {
    s.apps.set(name, {
      name,
      charm: a['charm-name'] || a.charm,
      rev: a['charm-rev'],
      sha256: a['charm-sha256'] ?? '',
      subordinate: (a['subordinate-to']?.length ?? 0) > 0,
      exposed: a.exposed,
      scale: a.scale ?? Object.keys(a.units ?? {}).length,
      status: a['application-status']?.current ?? '',
      message: a['application-status']?.message ?? '',
      endpoints: Object.entries(a.relations ?? {}).map(([ep, rs]) => ({
        name: ep, role: '', interface: rs[0]?.interface ?? '', scope: rs[0]?.scope ?? 'global',
      })),
    });
    for (const [un, u] of Object.entries(a.units ?? {})) {
      s.units.set(un, unitFromStatus(un, u, '', ''));
      if (u.leader) s.leaders.set(name, un);
      for (const [sn, su] of Object.entries(u.subordinates ?? {})) {
        s.units.set(sn, unitFromStatus(sn, su, un, u.machine ?? ''));
        if (su.leader) s.leaders.set(sn.slice(0, sn.lastIndexOf('/')), sn);
      }
    }
  }
  for (const [id, m] of Object.entries(fs.machines ?? {})) {
    s.machines.set(id, {
      id,
      status: m['juju-status']?.current ?? '',
      instance: m['instance-id'] ?? '',
      address: m['dns-name'] ?? m['ip-addresses']?.[0] ?? '',
      base: m.base ? `${m.base.name}@${m.base.channel}` : '',
      message: m['machine-status']?.message ?? '',
    });
  }
  for (const r of fs.relations ?? []) {
    const ends = r.type === 'peer' ? [splitEnd(r.provider || r.requirer)] : [splitEnd(r.provider), splitEnd(r.requirer)];
    if (ends[0]) ends[0].role = r.type === 'peer' ? 'peer' : 'provider';
    if (ends[1]) ends[1].role = 'requirer';
    s.relations.set(r['relation-id'], {
      id: r['relation-id'], ends, interface: r.interface,
      type: (r.type === 'peer' || r.type === 'subordinate' ? r.type : 'regular'), status: r.status,
    });
  }
  s.index = index;
  s.loaded = true;
  s.gone = false;
}

// Juju shows a unit whose agent is in error as a workload error with the
// agent's message, and the agent idle (the status route does the same).
function unitFromEntity(o: any, prev: UnitRow | undefined): UnitRow {
  let workload = o['workload-status']?.status ?? '';
  let message = o['workload-status']?.message ?? '';
  let agent = o['agent-status']?.status ?? '';
  if (agent === 'error') {
    workload = 'error';
    message = o['agent-status']?.message ?? message;
    agent = 'idle';
  }
  return {
    name: o.name,
    app: o.application,
    machine: o.machine ?? '',
    principal: o.principal ?? '',
    workload,
    message,
    agent,
    address: prev?.address ?? '',
    ports: (o['open-ports'] ?? []).map((p: any) => (typeof p === 'string' ? p : `${p['from-port'] ?? p.from}${p['to-port'] && p['to-port'] !== p['from-port'] ? `-${p['to-port']}` : ''}/${p.protocol}`)),
  };
}

function relationFromEntity(o: any): RelationRow {
  const eps: any[] = o.endpoints ?? [];
  const ends = eps.map((e) => ({ app: e.application, endpoint: e.name, role: e.role }));
  // Providers first, as the status route lists them.
  ends.sort((a, b) => (a.role === 'requirer' ? 1 : 0) - (b.role === 'requirer' ? 1 : 0));
  const type = eps.length === 1 || eps.some((e) => e.role === 'peer') ? 'peer'
    : eps.some((e) => e.scope === 'container') ? 'subordinate' : 'regular';
  return { id: o.id, ends, interface: eps[0]?.interface ?? '', type, status: o.life === 'alive' || !o.life ? 'joined' : o.life };
}

function applyDelta(s: ModelState, d: WatchDelta): void {
  const o = d.object ?? {};
  const del = d.op === 'delete';
  switch (d.kind) {
    case 'model':
      if (d.key !== s.uuid) return;
      if (del) s.gone = true;
      else {
        s.name = o.name ?? s.name;
        s.status = o.status?.status ?? s.status;
      }
      return;
    case 'application': {
      if (del) {
        s.apps.delete(d.key);
        s.leaders.delete(d.key);
        return;
      }
      const prev = s.apps.get(d.key);
      s.apps.set(d.key, {
        name: o.name,
        charm: o['charm-name'] ?? prev?.charm ?? '',
        rev: o['charm-revision'] ?? prev?.rev ?? 0,
        sha256: o['charm-sha256'] ?? prev?.sha256 ?? '',
        subordinate: !!o.subordinate,
        exposed: !!o.exposed,
        scale: o.scale ?? prev?.scale ?? 0,
        status: o.status?.status || prev?.status || '',
        message: o.status?.message ?? prev?.message ?? '',
        endpoints: o.endpoints ?? prev?.endpoints ?? [],
      });
      return;
    }
    case 'unit':
      if (del) s.units.delete(d.key);
      else s.units.set(d.key, unitFromEntity(o, s.units.get(d.key)));
      return;
    case 'machine':
      if (del) s.machines.delete(d.key);
      else
        s.machines.set(d.key, {
          id: o.id,
          status: o['agent-status']?.status ?? '',
          instance: o['provider-id'] ?? '',
          address: o.addresses?.[0] ?? '',
          base: o.base ?? '',
          message: o['instance-status']?.message ?? '',
        });
      return;
    case 'relation':
      if (del) s.relations.delete(Number(d.key));
      else s.relations.set(Number(d.key), relationFromEntity(o));
      return;
    case 'lease':
      if (del || !o.holder) s.leaders.delete(d.key);
      else s.leaders.set(d.key, o.holder);
      return;
    case 'task':
      if (del) s.tasks.delete(d.key);
      else s.tasks.set(d.key, o as Task);
      return;
  }
}

// applyModelFrame applies one watch frame in place and says whether
// anything changed. A reset replaces the whole model; a delta whose index
// is not newer than the last applied is a repeat and is ignored.
export function applyModelFrame(s: ModelState, f: WatchFrame): boolean {
  if (f.type === 'reset') {
    if (!f.status) return false;
    resetFrom(s, f.status, f.index);
    return true;
  }
  if (f.type !== 'delta' || f.index <= s.index) return false;
  for (const d of f.deltas ?? []) applyDelta(s, d);
  s.index = f.index;
  return true;
}

// appStatus is the application's status as the status route derives it
// when the charm set none: the worst of its units'.
const severity = ['error', 'blocked', 'maintenance', 'waiting', 'active', 'unknown'];
export function appStatus(s: ModelState, app: AppRow): string {
  if (app.status && app.status !== 'unknown') return app.status;
  let best = app.status || 'unknown';
  for (const u of s.units.values()) {
    if (u.app !== app.name) continue;
    if (severity.indexOf(u.workload) >= 0 && severity.indexOf(u.workload) < severity.indexOf(best)) best = u.workload;
  }
  return best;
}
