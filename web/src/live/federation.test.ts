import { describe, expect, it } from 'vitest';
import { applyFederationFrame, emptyFederation } from './federation';
import type { FederationFrame } from '../types';

const m = (uuid: string, name = uuid) => ({ uuid, name, owner: 'a@x' });

describe('federation reducer', () => {
  it('reset replaces every row, never adding to the old ones', () => {
    const s = emptyFederation();
    applyFederationFrame(s, { type: 'reset', index: 5, models: [m('a'), m('b')], controllers: [{ uuid: 'u', name: 'east' }] });
    applyFederationFrame(s, { type: 'reset', index: 7, models: [m('b'), m('c')] });
    expect([...s.models.keys()]).toEqual(['b', 'c']);
    expect(s.controllers.size).toBe(0);
    expect(s.index).toBe(7);
    expect(s.loaded).toBe(true);
  });

  it('delta upserts by key and removes named rows', () => {
    const s = emptyFederation();
    applyFederationFrame(s, { type: 'reset', index: 1, models: [m('a'), m('b')], controllers: [{ uuid: 'u', name: 'east' }] });
    applyFederationFrame(s, {
      type: 'delta', index: 2, models: [m('a', 'renamed'), m('d')],
      removed: [{ kind: 'model', id: 'b' }, { kind: 'controller', id: 'east' }],
    });
    expect([...s.models.keys()].sort()).toEqual(['a', 'd']);
    expect(s.models.get('a')!.name).toBe('renamed');
    expect(s.controllers.size).toBe(0);
    expect(s.index).toBe(2);
  });

  it('ignores a delta whose index is not newer', () => {
    const s = emptyFederation();
    applyFederationFrame(s, { type: 'reset', index: 10, models: [m('a')] });
    const stale: FederationFrame = { type: 'delta', index: 10, models: [m('z')] };
    expect(applyFederationFrame(s, stale)).toBe(false);
    expect(applyFederationFrame(s, { ...stale, index: 9 })).toBe(false);
    expect([...s.models.keys()]).toEqual(['a']);
  });

  it('a repeated upsert leaves one row', () => {
    const s = emptyFederation();
    applyFederationFrame(s, { type: 'reset', index: 1, models: [m('a')] });
    applyFederationFrame(s, { type: 'delta', index: 2, models: [m('a')] });
    applyFederationFrame(s, { type: 'delta', index: 3, models: [m('a')] });
    expect(s.models.size).toBe(1);
  });

  it('keepalive changes nothing', () => {
    const s = emptyFederation();
    applyFederationFrame(s, { type: 'reset', index: 1, models: [m('a')] });
    expect(applyFederationFrame(s, { type: 'keepalive', index: 4 })).toBe(false);
    expect(s.index).toBe(1);
  });
});
