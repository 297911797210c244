import { describe, expect, it } from 'vitest';
import { appStatus, applyModelFrame, emptyModel } from './model';
import type { FullStatus } from '../types';

const status = (): FullStatus => ({
  model: { name: 'prod', uuid: 'M', controller: 'east', cloud: 'localhost', version: '1', 'model-status': { current: 'available' } },
  machines: { '0': { 'juju-status': { current: 'started' }, 'machine-status': { current: 'running' }, 'instance-id': 'i-0', 'dns-name': '10.0.0.1' } },
  applications: {
    db: {
      charm: 'pg', 'charm-name': 'pg', 'charm-rev': 3, exposed: false, 'application-status': { current: 'active' },
      units: {
        'db/0': {
          'workload-status': { current: 'active' }, 'juju-status': { current: 'idle' }, leader: true, machine: '0',
          subordinates: { 'log/0': { 'workload-status': { current: 'active' }, 'juju-status': { current: 'idle' } } },
        },
      },
    },
    log: { charm: 'log', 'charm-name': 'log', 'charm-rev': 1, exposed: false, 'application-status': { current: 'active' }, 'subordinate-to': ['db'] },
    web: { charm: 'web', 'charm-name': 'web', 'charm-rev': 1, exposed: true, 'application-status': { current: 'active' } },
  },
  relations: [
    { 'relation-id': 0, provider: 'db:db', requirer: 'web:db', interface: 'pgsql', type: 'regular', status: 'joined' },
    { 'relation-id': 1, provider: 'db:peers', requirer: 'db:peers', interface: 'pg-peers', type: 'peer', status: 'joined' },
    { 'relation-id': 2, provider: 'db:juju-info', requirer: 'log:juju-info', interface: 'juju-info', type: 'subordinate', status: 'joined' },
  ],
  index: 10,
});

const unit = (name: string, wl = 'active', agent = 'idle') => ({
  name, application: name.split('/')[0], machine: '0', 'model-uuid': 'M',
  'workload-status': { status: wl }, 'agent-status': { status: agent, message: agent === 'error' ? 'hook failed: "install"' : undefined },
});

describe('model reducer', () => {
  it('reset builds rows from the status, subordinates flattened under their principal', () => {
    const s = emptyModel('M');
    expect(applyModelFrame(s, { type: 'reset', index: 10, status: status() })).toBe(true);
    expect([...s.apps.keys()]).toEqual(['db', 'log', 'web']);
    expect([...s.units.keys()].sort()).toEqual(['db/0', 'log/0']);
    expect(s.units.get('log/0')!.principal).toBe('db/0');
    expect(s.units.get('log/0')!.machine).toBe('0');
    expect(s.leaders.get('db')).toBe('db/0');
    expect(s.relations.get(1)!.type).toBe('peer');
    expect(s.relations.get(1)!.ends).toHaveLength(1);
    expect(s.relations.get(2)!.type).toBe('subordinate');
    expect(s.apps.get('log')!.subordinate).toBe(true);
    expect(s.index).toBe(10);
    expect(s.offers).toEqual({});
    applyModelFrame(s, { type: 'reset', index: 11, status: { ...status(), offers: { db: { application: 'db', endpoints: { db: 'pgsql' } } } } });
    expect(Object.keys(s.offers)).toEqual(['db']);
  });

  it('a second reset replaces, never duplicates', () => {
    const s = emptyModel('M');
    applyModelFrame(s, { type: 'reset', index: 10, status: status() });
    applyModelFrame(s, { type: 'delta', index: 11, deltas: [{ kind: 'unit', key: 'web/0', op: 'upsert', object: unit('web/0') }] });
    const again = status();
    again.index = 12;
    applyModelFrame(s, { type: 'reset', index: 12, status: again });
    expect([...s.units.keys()].sort()).toEqual(['db/0', 'log/0']);
  });

  it('deltas upsert and delete entities by key', () => {
    const s = emptyModel('M');
    applyModelFrame(s, { type: 'reset', index: 10, status: status() });
    applyModelFrame(s, {
      type: 'delta', index: 11, deltas: [
        { kind: 'unit', key: 'web/0', op: 'upsert', object: unit('web/0') },
        { kind: 'unit', key: 'web/0', op: 'upsert', object: unit('web/0', 'blocked') },
        { kind: 'relation', key: '0', op: 'delete', object: {} },
        { kind: 'relation', key: '5', op: 'upsert', object: { id: 5, life: 'alive', endpoints: [
          { application: 'web', name: 'db', role: 'requirer', interface: 'pgsql', scope: 'global' },
          { application: 'db', name: 'db', role: 'provider', interface: 'pgsql', scope: 'global' }] } },
        { kind: 'machine', key: '1', op: 'upsert', object: { id: '1', 'agent-status': { status: 'pending' }, addresses: ['10.0.0.2'] } },
        { kind: 'lease', key: 'web', op: 'upsert', object: { application: 'web', holder: 'web/0' } },
      ],
    });
    expect(s.units.get('web/0')!.workload).toBe('blocked');
    expect(s.units.size).toBe(3);
    expect(s.relations.has(0)).toBe(false);
    expect(s.relations.get(5)!.ends.map((e) => e.app)).toEqual(['db', 'web']);
    expect(s.machines.get('1')!.address).toBe('10.0.0.2');
    expect(s.leaders.get('web')).toBe('web/0');
    applyModelFrame(s, { type: 'delta', index: 12, deltas: [{ kind: 'unit', key: 'web/0', op: 'delete', object: unit('web/0') }] });
    expect(s.units.has('web/0')).toBe(false);
  });

  it('a unit whose agent is in error shows a workload error with the agent message', () => {
    const s = emptyModel('M');
    applyModelFrame(s, { type: 'reset', index: 10, status: status() });
    applyModelFrame(s, { type: 'delta', index: 11, deltas: [{ kind: 'unit', key: 'web/0', op: 'upsert', object: unit('web/0', 'active', 'error') }] });
    const u = s.units.get('web/0')!;
    expect([u.workload, u.agent, u.message]).toEqual(['error', 'idle', 'hook failed: "install"']);
    expect(appStatus(s, { ...s.apps.get('web')!, status: '' })).toBe('error');
  });

  it('ignores deltas not newer than the applied index', () => {
    const s = emptyModel('M');
    applyModelFrame(s, { type: 'reset', index: 10, status: status() });
    expect(applyModelFrame(s, { type: 'delta', index: 10, deltas: [{ kind: 'unit', key: 'x/0', op: 'upsert', object: unit('x/0') }] })).toBe(false);
    expect(applyModelFrame(s, { type: 'delta', index: 3, deltas: [{ kind: 'unit', key: 'x/0', op: 'upsert', object: unit('x/0') }] })).toBe(false);
    expect(s.units.has('x/0')).toBe(false);
  });

  it('the model deleted marks it gone; tasks are kept by id', () => {
    const s = emptyModel('M');
    applyModelFrame(s, { type: 'reset', index: 10, status: status() });
    applyModelFrame(s, { type: 'delta', index: 11, deltas: [{ kind: 'task', key: '7', op: 'upsert', object: { id: '7', receiver: 'db/0', action: 'backup', status: 'completed', results: { ok: 'yes' } } }] });
    expect(s.tasks.get('7')!.results).toEqual({ ok: 'yes' });
    applyModelFrame(s, { type: 'delta', index: 12, deltas: [{ kind: 'model', key: 'M', op: 'delete' }] });
    expect(s.gone).toBe(true);
  });
});

describe('model reducer at scale', () => {
  it('applies 100 deltas to a 1,000-unit model well within a frame', () => {
    const big = status();
    const units: Record<string, any> = {};
    for (let i = 0; i < 1000; i++) units[`db/${i}`] = { 'workload-status': { current: 'active' }, 'juju-status': { current: 'idle' }, machine: String(i) };
    big.applications!.db.units = units;
    const s = emptyModel('M');
    applyModelFrame(s, { type: 'reset', index: 10, status: big });
    expect(s.units.size).toBe(1000);
    const deltas = Array.from({ length: 100 }, (_, i) => ({ kind: 'unit', key: `db/${i * 7}`, op: 'upsert' as const, object: unit(`db/${i * 7}`, 'maintenance') }));
    const t0 = performance.now();
    applyModelFrame(s, { type: 'delta', index: 11, deltas });
    const took = performance.now() - t0;
    expect(took).toBeLessThan(16);
    expect(s.units.size).toBe(1000);
    expect(s.units.get('db/7')!.workload).toBe('maintenance');
  });
});
