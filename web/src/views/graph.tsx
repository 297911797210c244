import { useMemo, useState } from 'preact/hooks';
import { layout, NODE_H, NODE_W } from '../graph/layout';
import type { AppRow, RelationRow, UnitRow } from '../live/model';
import { appStatus } from '../live/model';
import { model } from '../live';
import { Relations, relLabel } from './model';

// The relation graph: applications as nodes (with their unit counts, not
// one node per unit, so a 1,000-unit model stays small), relations as
// edges, peers as self-loops, subordinates drawn dashed. The layout only
// changes when the set of applications or relations does. The table below
// holds the same relations.
export default function Graph({ apps, relations, units }: { apps: AppRow[]; relations: RelationRow[]; units: UnitRow[]; version: number }) {
  const [zoom, setZoom] = useState(1);
  const shape = apps.map((a) => `${a.name}${a.subordinate ? '~' : ''}`).join(',') + '|' + relations.map((r) => `${r.id}:${relLabel(r)}`).join(',');
  const l = useMemo(
    () =>
      layout(
        apps.map((a) => ({ id: a.name, subordinate: a.subordinate })),
        relations.map((r) => ({ id: String(r.id), from: r.ends[0]?.app ?? '', to: (r.ends[1] ?? r.ends[0])?.app ?? '' })),
      ),
    [shape],
  );
  const counts = new Map<string, number>();
  for (const u of units) counts.set(u.app, (counts.get(u.app) ?? 0) + 1);
  const byName = new Map(apps.map((a) => [a.name, a]));
  const relById = new Map(relations.map((r) => [String(r.id), r]));
  return (
    <section aria-label="Relation graph">
      <div class="toolbar">
        <button type="button" onClick={() => setZoom((z) => Math.min(2, z * 1.25))} aria-label="Zoom in">
          +
        </button>
        <button type="button" onClick={() => setZoom((z) => Math.max(0.2, z / 1.25))} aria-label="Zoom out">
          −
        </button>
        <button type="button" onClick={() => setZoom(1)}>
          Reset zoom
        </button>
        <span class="muted legend">
          <span class="sw sw-sub" /> subordinate · <span class="sw sw-peer" /> peer
        </span>
      </div>
      <div class="graph-box">
        <svg
          width={l.width * zoom}
          height={l.height * zoom}
          viewBox={`0 0 ${l.width} ${l.height}`}
          role="group"
          aria-label={`${apps.length} applications and ${relations.length} integrations; the table below lists them`}
          data-testid="graph"
        >
          <g class="edges">
            {l.edges.map((e) => {
              const r = relById.get(e.id)!;
              return (
                <path d={e.path} class={`edge edge-${r.type}`} data-testid="graph-edge" data-relation={e.id} key={e.id}>
                  <title>{`${relLabel(r)} (${r.interface})`}</title>
                </path>
              );
            })}
          </g>
          <g class="nodes">
            {l.nodes.map((n) => {
              const a = byName.get(n.id)!;
              const st = appStatus(model, a);
              return (
                <g transform={`translate(${n.x},${n.y})`} class={`node${a.subordinate ? ' node-sub' : ''} node-${st}`} data-testid="graph-node" data-app={n.id} key={n.id}>
                  <a href={`/models/${model.uuid}?tab=units&app=${encodeURIComponent(n.id)}`} aria-label={`${n.id}: ${counts.get(n.id) ?? 0} units, ${st}`}>
                    <rect width={NODE_W} height={NODE_H} rx={a.subordinate ? 20 : 6} />
                    <text x={10} y={20} class="name">
                      {n.id.length > 18 ? `${n.id.slice(0, 17)}…` : n.id}
                    </text>
                    <text x={10} y={38} class="sub">
                      {`${counts.get(n.id) ?? 0} unit${counts.get(n.id) === 1 ? '' : 's'} · ${st}`}
                    </text>
                    <title>{`${n.id}: ${a.charm} rev ${a.rev}, ${st}`}</title>
                  </a>
                </g>
              );
            })}
          </g>
        </svg>
      </div>
      <h2 class="sr-only">Integrations</h2>
      <Relations relations={relations} />
    </section>
  );
}
