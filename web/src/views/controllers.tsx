import { get } from '../api';
import { federation, fedVersion } from '../live';
import { config } from '../session';
import { ErrorBox, Loading, Status, useAsync, VirtualTable } from '../components';
import type { ControllerRow } from '../types';

interface ControllerInfo {
  uuid: string;
  name: string;
  version: string;
  cloud?: string;
  region?: string;
  nodes: { id: string; 'api-address': string; voter: boolean; leader: boolean; unreachable?: boolean; lag: number }[];
}

// health says what is wrong with a controller, or "healthy": its error,
// its unreachable nodes, and any other note the hub keeps (the version
// and the nodes have columns of their own).
export function health(c: ControllerRow): string {
  const h = c.health ?? {};
  const parts: string[] = [];
  if (typeof h.error === 'string') parts.push(h.error);
  const ns = (c.nodes ?? (h.nodes as ControllerRow['nodes'])) ?? [];
  const down = ns.filter((n) => n.unreachable).length;
  if (down) parts.push(`${down} of ${ns.length} nodes unreachable`);
  for (const k of Object.keys(h).sort()) if (k !== 'error' && k !== 'nodes' && k !== 'version') parts.push(`${k}: ${JSON.stringify(h[k])}`);
  if (!parts.length && c.status !== 'disconnected') return 'healthy';
  return parts.join('; ');
}

function nodesOf(c: ControllerRow): string {
  const ns = (c.nodes ?? (c.health?.nodes as ControllerRow['nodes'])) ?? [];
  if (!ns.length) return `${c['api-addresses']?.length ?? 0} address(es)`;
  return ns.map((n) => `${n.id}${n.leader ? ' (leader)' : ''}${n.unreachable ? ' unreachable' : ''}`).join(', ');
}

// Controllers: the hub's registered controllers from the federation
// stream (region, version, HA nodes and health, model counts); on a
// standalone controller, the controller itself and its raft nodes.
export function Controllers() {
  if (config.value.mode !== 'hub') return <OwnController />;
  fedVersion.value; // re-render on every applied frame
  const counts = new Map<string, number>();
  for (const m of federation.models.values()) counts.set(m.controller ?? '', (counts.get(m.controller ?? '') ?? 0) + 1);
  const rows = [...federation.controllers.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  return (
    <section>
      <h1>Controllers</h1>
      {!federation.loaded ? (
        <Loading />
      ) : (
        <VirtualTable
          rows={rows}
          testId="controllers-table"
          rowTestId="controller-row"
          caption="Controllers"
          rowKey={(c) => c.name}
          columns={[
            { title: 'Name', cell: (c) => <a href={`/models?controller=${encodeURIComponent(c.name)}`}>{c.name}</a> },
            { title: 'Organization', cell: (c) => c.org || 'shared' },
            { title: 'Region', cell: (c) => [c.cloud, c.region].filter(Boolean).join('/') },
            { title: 'Version', cell: (c) => c.version ?? String(c.health?.version ?? '') },
            { title: 'Status', cell: (c) => <Status value={`${c.status ?? ''}${c.deprecated ? ' deprecated' : ''}`.trim()} /> },
            { title: 'Nodes', cell: nodesOf },
            { title: 'Models', cell: (c) => String(counts.get(c.name) ?? 0), class: 'num' },
            { title: 'Health', cell: health, class: 'wrap' },
          ]}
        />
      )}
    </section>
  );
}

function OwnController() {
  const info = useAsync((s) => get<ControllerInfo>('/v1/controller', s), []);
  if (info.error) return <ErrorBox error={info.error} />;
  if (!info.data) return <Loading />;
  const c = info.data;
  return (
    <section>
      <h1>Controller {c.name}</h1>
      <p>
        Version {c.version}; {[c.cloud, c.region].filter(Boolean).join('/')}
      </p>
      <VirtualTable
        rows={c.nodes}
        testId="nodes-table"
        rowTestId="node-row"
        caption="Controller nodes"
        rowKey={(n) => n.id}
        columns={[
          { title: 'Node', cell: (n) => n.id },
          { title: 'Address', cell: (n) => n['api-address'] },
          { title: 'Role', cell: (n) => (n.leader ? 'leader' : n.voter ? 'voter' : 'non-voter') },
          { title: 'Health', cell: (n) => <Status value={n.unreachable ? 'unreachable' : n.lag > 100 ? `lagging ${n.lag}` : 'ok'} /> },
        ]}
      />
    </section>
  );
}
