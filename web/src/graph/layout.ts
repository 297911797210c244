// A deterministic layered layout of a model's applications and relations:
// the same applications and relations give the same positions, whatever
// order they arrived in. Relations point from provider to requirer; each
// application's layer is its longest path from a provider-only one (cycles
// broken in name order), a layer's order comes from the barycentres of the
// layer above (ties by name), and a layer wider than MAX_PER_ROW wraps, so
// a model of hundreds of applications stays readable.

export interface GraphNodeIn {
  id: string;
  subordinate: boolean;
}

export interface GraphEdgeIn {
  id: string;
  from: string; // provider
  to: string; // requirer (== from for a peer relation)
}

export interface PlacedNode {
  id: string;
  x: number;
  y: number;
  layer: number;
}

export interface PlacedEdge {
  id: string;
  from: string;
  to: string;
  self: boolean;
  path: string;
}

export interface Layout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

export const NODE_W = 150;
export const NODE_H = 48;
const GAP_X = 40;
const GAP_Y = 70;
export const MAX_PER_ROW = 12;

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function layout(nodesIn: GraphNodeIn[], edgesIn: GraphEdgeIn[]): Layout {
  const ids = nodesIn.map((n) => n.id).sort(byName);
  const known = new Set(ids);
  const edges = edgesIn.filter((e) => known.has(e.from) && known.has(e.to)).sort((a, b) => byName(a.id, b.id));
  const out = new Map<string, string[]>();
  const inc = new Map<string, string[]>();
  for (const id of ids) {
    out.set(id, []);
    inc.set(id, []);
  }
  for (const e of edges) {
    if (e.from === e.to) continue;
    out.get(e.from)!.push(e.to);
    inc.get(e.to)!.push(e.from);
  }
  for (const l of out.values()) l.sort(byName);
  for (const l of inc.values()) l.sort(byName);

  // Longest path layering over an acyclic orientation: a DFS in name
  // order drops back edges.
  const layer = new Map<string, number>();
  const state = new Map<string, 1 | 2>();
  const dropped = new Set<string>();
  const visit = (id: string): void => {
    state.set(id, 1);
    for (const to of out.get(id)!) {
      if (state.get(to) === 1) dropped.add(`${id}\u0000${to}`);
      else if (!state.has(to)) visit(to);
    }
    state.set(id, 2);
  };
  for (const id of ids) if (!state.has(id)) visit(id);
  const depth = (id: string, seen: Set<string>): number => {
    const got = layer.get(id);
    if (got !== undefined) return got;
    seen.add(id);
    let d = 0;
    for (const from of inc.get(id)!) {
      if (dropped.has(`${from}\u0000${id}`) || seen.has(from)) continue;
      d = Math.max(d, depth(from, seen) + 1);
    }
    seen.delete(id);
    layer.set(id, d);
    return d;
  };
  for (const id of ids) depth(id, new Set());

  const layers: string[][] = [];
  for (const id of ids) (layers[layer.get(id)!] ??= []).push(id);
  // Order: barycentre of the neighbours in the layer above, then name.
  const pos = new Map<string, number>();
  layers.forEach((l, li) => {
    if (li > 0) {
      const bc = new Map<string, number>();
      for (const id of l) {
        const ns = inc.get(id)!.filter((n) => pos.has(n) && layer.get(n)! < li);
        bc.set(id, ns.length ? ns.reduce((s, n) => s + pos.get(n)!, 0) / ns.length : Number.MAX_SAFE_INTEGER);
      }
      l.sort((a, b) => bc.get(a)! - bc.get(b)! || byName(a, b));
    }
    l.forEach((id, i) => pos.set(id, i));
  });

  // Rows: each layer takes ceil(n / MAX_PER_ROW) rows.
  const placed: PlacedNode[] = [];
  const at = new Map<string, PlacedNode>();
  let row = 0;
  let widest = 1;
  layers.forEach((l, li) => {
    for (let start = 0; start < l.length; start += MAX_PER_ROW) {
      const chunk = l.slice(start, start + MAX_PER_ROW);
      widest = Math.max(widest, chunk.length);
      chunk.forEach((id, i) => {
        const n = { id, layer: li, x: 0, y: row * (NODE_H + GAP_Y) + 20, col: i, cols: chunk.length } as PlacedNode & { col: number; cols: number };
        placed.push(n);
        at.set(id, n);
      });
      row++;
    }
  });
  const width = widest * (NODE_W + GAP_X) + GAP_X;
  for (const n of placed as (PlacedNode & { col: number; cols: number })[]) {
    const rowW = n.cols * (NODE_W + GAP_X) - GAP_X;
    n.x = Math.round((width - rowW) / 2 + n.col * (NODE_W + GAP_X));
    delete (n as Partial<{ col: number; cols: number }>).col;
    delete (n as Partial<{ col: number; cols: number }>).cols;
  }
  placed.sort((a, b) => byName(a.id, b.id));

  const placedEdges: PlacedEdge[] = edges.map((e) => {
    const a = at.get(e.from)!;
    const b = at.get(e.to)!;
    if (e.from === e.to) {
      // A peer relation: a loop on the node's right side.
      const x = a.x + NODE_W;
      const y = a.y + NODE_H / 2;
      return { id: e.id, from: e.from, to: e.to, self: true, path: `M${x} ${y - 10} C${x + 40} ${y - 30} ${x + 40} ${y + 30} ${x} ${y + 10}` };
    }
    const [top, bot] = a.y <= b.y ? [a, b] : [b, a];
    const x1 = top.x + NODE_W / 2;
    const x2 = bot.x + NODE_W / 2;
    if (top.y === bot.y) {
      const y = top.y;
      return { id: e.id, from: e.from, to: e.to, self: false, path: `M${x1} ${y} C${x1} ${y - 40} ${x2} ${y - 40} ${x2} ${y}` };
    }
    const y1 = top.y + NODE_H;
    const y2 = bot.y;
    const my = (y1 + y2) / 2;
    return { id: e.id, from: e.from, to: e.to, self: false, path: `M${x1} ${y1} C${x1} ${my} ${x2} ${my} ${x2} ${y2}` };
  });
  return { nodes: placed, edges: placedEdges, width, height: row * (NODE_H + GAP_Y) + 40 };
}
