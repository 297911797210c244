import { describe, expect, it } from 'vitest';
import { layout, MAX_PER_ROW } from './layout';

const nodes = [
  { id: 'web', subordinate: false },
  { id: 'db', subordinate: false },
  { id: 'cache', subordinate: false },
  { id: 'log', subordinate: true },
];
const edges = [
  { id: 'r0', from: 'db', to: 'web' },
  { id: 'r1', from: 'cache', to: 'web' },
  { id: 'r2', from: 'db', to: 'db' },
  { id: 'r3', from: 'web', to: 'log' },
];

describe('graph layout', () => {
  it('is the same whatever order nodes and edges come in', () => {
    const a = layout(nodes, edges);
    const b = layout([...nodes].reverse(), [...edges].reverse());
    expect(b).toEqual(a);
  });

  it('layers providers above requirers; peers are self-loops', () => {
    const l = layout(nodes, edges);
    const y = (id: string) => l.nodes.find((n) => n.id === id)!.y;
    expect(y('db')).toBeLessThan(y('web'));
    expect(y('cache')).toBe(y('db'));
    expect(y('web')).toBeLessThan(y('log'));
    expect(l.edges.find((e) => e.id === 'r2')!.self).toBe(true);
    expect(l.edges).toHaveLength(4);
  });

  it('survives cycles and drops edges to unknown nodes', () => {
    const l = layout(
      [{ id: 'a', subordinate: false }, { id: 'b', subordinate: false }],
      [{ id: '1', from: 'a', to: 'b' }, { id: '2', from: 'b', to: 'a' }, { id: '3', from: 'a', to: 'zz' }],
    );
    expect(l.nodes).toHaveLength(2);
    expect(l.edges.map((e) => e.id)).toEqual(['1', '2']);
  });

  it('wraps wide layers and places no two nodes at one spot', () => {
    const many = Array.from({ length: 300 }, (_, i) => ({ id: `app${String(i).padStart(3, '0')}`, subordinate: false }));
    const l = layout(many, []);
    expect(new Set(l.nodes.map((n) => `${n.x},${n.y}`)).size).toBe(300);
    expect(new Set(l.nodes.map((n) => n.y)).size).toBe(Math.ceil(300 / MAX_PER_ROW));
  });
});
