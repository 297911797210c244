import { useMemo } from 'preact/hooks';
import { get, qs } from '../api';
import { route, setQuery } from '../router';
import { ErrorBox, Loading, useAsync, VirtualTable } from '../components';
import type { ActivityBucket, CharmPlacement, ReviewedGrant } from '../types';

// The compliance overview: which charms (name, revision, hash) run where
// across every controller, who holds what on which object (the access
// review, exportable), and audited activity over time by operation
// family. All three read the hub's index and audit log, never a
// controller.

const DAY = 86_400_000;

export interface ActivitySeries {
  starts: string[];
  families: string[];
  counts: Map<string, Map<string, number>>; // start → family → count
  max: number;
}

// activitySeries groups the buckets by start and operation family, keeping
// the MAX_FAMILIES busiest families and folding the rest into "other".
export const MAX_FAMILIES = 7;
export function activitySeries(series: ActivityBucket[]): ActivitySeries {
  const totals = new Map<string, number>();
  for (const b of series) totals.set(b.operation, (totals.get(b.operation) ?? 0) + b.count);
  const ranked = [...totals.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([f]) => f);
  const keep = new Set(ranked.slice(0, MAX_FAMILIES));
  const families = ranked.slice(0, MAX_FAMILIES);
  if (ranked.length > MAX_FAMILIES) families.push('other');
  const counts = new Map<string, Map<string, number>>();
  for (const b of series) {
    const fam = keep.has(b.operation) ? b.operation : 'other';
    const m = counts.get(b.start) ?? new Map<string, number>();
    m.set(fam, (m.get(fam) ?? 0) + b.count);
    counts.set(b.start, m);
  }
  const starts = [...counts.keys()].sort();
  let max = 0;
  for (const m of counts.values()) max = Math.max(max, [...m.values()].reduce((s, n) => s + n, 0));
  return { starts, families, counts, max };
}

function Chart({ data }: { data: ActivitySeries }) {
  const W = 720;
  const H = 200;
  const bw = data.starts.length ? Math.max(2, Math.floor((W - 40) / data.starts.length) - 2) : 0;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H + 30}`} role="img" aria-label="Audited operations per day by operation family; the table below holds the figures" data-testid="activity-chart">
        {data.starts.map((s, i) => {
          let y = H;
          const m = data.counts.get(s)!;
          return (
            <g key={s} data-testid="activity-bar">
              {data.families.map((f, fi) => {
                const n = m.get(f) ?? 0;
                if (!n) return null;
                const h = (n / data.max) * (H - 10);
                y -= h;
                return (
                  <rect x={30 + i * (bw + 2)} y={y} width={bw} height={h} class={`fam fam-${fi}`}>
                    <title>{`${s.slice(0, 10)} ${f}: ${n}`}</title>
                  </rect>
                );
              })}
              {i % Math.ceil(data.starts.length / 8) === 0 && (
                <text x={30 + i * (bw + 2)} y={H + 16} class="axis">
                  {s.slice(5, 10)}
                </text>
              )}
            </g>
          );
        })}
        <text x={0} y={12} class="axis">
          {data.max}
        </text>
      </svg>
      <figcaption>
        {data.families.map((f, i) => (
          <span class="legend-item">
            <span class={`sw fam-${i}`} aria-hidden="true" /> {f}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

export default function Compliance() {
  const q = route.value.query;
  const org = q.get('org') ?? '';
  const days = Number(q.get('days') ?? '30') || 30;
  const charms = useAsync((s) => get<{ charms: CharmPlacement[] }>(`/v1/compliance/charms${qs({ org })}`, s), [org]);
  const review = useAsync((s) => get<{ grants: ReviewedGrant[] }>(`/v1/compliance/access${qs({ org })}`, s), [org]);
  const activity = useAsync(
    (s) => {
      const until = new Date(Math.ceil(Date.now() / DAY) * DAY);
      const since = new Date(until.getTime() - days * DAY);
      return get<{ series: ActivityBucket[] }>(`/v1/audit/activity${qs({ since: since.toISOString(), until: until.toISOString(), bucket: 'day', org })}`, s);
    },
    [org, days],
  );
  const series = useMemo(() => activitySeries(activity.data?.series ?? []), [activity.data]);
  const placements = useMemo(
    () =>
      [...(charms.data?.charms ?? [])].sort((a, b) =>
        `${a.org}\u0000${a.charm}\u0000${a.revision}\u0000${a.controller}\u0000${a.model}\u0000${a.application}` <
        `${b.org}\u0000${b.charm}\u0000${b.revision}\u0000${b.controller}\u0000${b.model}\u0000${b.application}`
          ? -1
          : 1,
      ),
    [charms.data],
  );
  const orgs = useMemo(() => [...new Set((charms.data?.charms ?? []).map((c) => c.org))].sort(), [charms.data]);
  return (
    <section>
      <h1>Compliance</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Organization
          <select value={org} onChange={(e) => setQuery({ org: e.currentTarget.value, days: q.get('days') ?? undefined })} data-testid="compliance-org">
            <option value="">all I may review</option>
            {orgs.map((o) => (
              <option value={o}>{o}</option>
            ))}
          </select>
        </label>
      </form>
      <h2>Charms in use</h2>
      {charms.error ? (
        <ErrorBox error={charms.error} />
      ) : !charms.data ? (
        <Loading />
      ) : (
        <VirtualTable
          rows={placements}
          testId="charms-table"
          rowTestId="charm-row"
          caption="Charms by organization and where they run"
          rowKey={(c) => `${c['model-uuid']}/${c.application}`}
          columns={[
            { title: 'Organization', cell: (c) => c.org },
            { title: 'Charm', cell: (c) => c.charm },
            { title: 'Revision', cell: (c) => String(c.revision), class: 'num' },
            { title: 'SHA-256', cell: (c) => <code title={c.sha256}>{c.sha256.slice(0, 12)}</code> },
            { title: 'Controller', cell: (c) => c.controller },
            { title: 'Region', cell: (c) => c.region },
            { title: 'Model', cell: (c) => <a href={`/models/${c['model-uuid']}`}>{c.model}</a> },
            { title: 'Application', cell: (c) => c.application },
            { title: 'Units', cell: (c) => String(c.units), class: 'num' },
          ]}
        />
      )}
      <h2>Access review</h2>
      <p class="exports">
        Export:{' '}
        <a href={`/v1/compliance/access${qs({ org, format: 'csv' })}`} download data-testid="access-export-csv">
          CSV
        </a>{' '}
        ·{' '}
        <a href={`/v1/compliance/access${qs({ org, format: 'json' })}`} download data-testid="access-export-json">
          JSON
        </a>
      </p>
      {review.error ? (
        <ErrorBox error={review.error} />
      ) : !review.data ? (
        <Loading />
      ) : (
        <VirtualTable
          rows={review.data.grants}
          testId="access-review-table"
          rowTestId="access-review-row"
          caption="Who holds what"
          rowKey={(g) => `${g.subject} ${g.relation} ${g.object}`}
          columns={[
            { title: 'Subject', cell: (g) => g['subject-name'] || g.subject },
            { title: 'Relation', cell: (g) => g.relation },
            { title: 'Object', cell: (g) => g['object-name'] || g.object },
            { title: 'Organization', cell: (g) => g.org },
            { title: 'Since', cell: (g) => (g.since ? g.since.slice(0, 10) : '') },
          ]}
        />
      )}
      <h2>Activity</h2>
      <p>
        {[7, 30, 90].map((d) => (
          <>
            <a href={`/compliance${qs({ org, days: d === 30 ? undefined : d })}`} aria-current={d === days ? 'true' : undefined}>
              {d} days
            </a>{' '}
          </>
        ))}
      </p>
      {activity.error ? (
        <ErrorBox error={activity.error} />
      ) : !activity.data ? (
        <Loading />
      ) : (
        <>
          <Chart data={series} />
          <details>
            <summary>Figures</summary>
            <table data-testid="activity-table">
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  {series.families.map((f) => (
                    <th scope="col">{f}</th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {series.starts.map((s) => (
                  <tr>
                    <td>{s.slice(0, 10)}</td>
                    {series.families.map((f) => (
                      <td class="num">{series.counts.get(s)!.get(f) ?? 0}</td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </details>
        </>
      )}
    </section>
  );
}
