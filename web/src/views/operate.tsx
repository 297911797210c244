import { useState } from 'preact/hooks';
import { call, del, enc, post } from '../api';
import type { AppRow, RelationRow, UnitRow } from '../live/model';
import { route, setQuery } from '../router';
import { ErrorBox, Field } from '../components';
import type { Task } from '../types';
import { relLabel } from './model';
import { ActionForm, ConfigForm } from './operate-forms';

// Operate: the changes the CLI makes, through the same routes: deploy
// (upload the charm archive, then deploy it), config, actions, scale, and
// integrations. Shown only to those with write access to the model.

interface Props {
  uuid: string;
  apps: AppRow[];
  relations: RelationRow[];
  units: UnitRow[];
  tasks: Map<string, Task>;
  version: number;
}

function useRun() {
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<unknown>(null);
  const [ok, setOk] = useState('');
  const run = async (what: () => Promise<string>) => {
    setBusy(true);
    setErr(null);
    setOk('');
    try {
      setOk(await what());
    } catch (e) {
      setErr(e);
    }
    setBusy(false);
  };
  return { busy, err, ok, run };
}

function Outcome({ err, ok, id }: { err: unknown; ok: string; id: string }) {
  return (
    <>
      <ErrorBox error={err} />
      {ok && (
        <p class="ok" role="status" data-testid={`${id}-done`}>
          {ok}
        </p>
      )}
    </>
  );
}

function Deploy({ uuid }: { uuid: string }) {
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState('');
  const [n, setN] = useState('1');
  const r = useRun();
  const submit = (e: Event) => {
    e.preventDefault();
    if (!file) return;
    void r.run(async () => {
      const charm = await call<{ sha256: string; name: string }>('POST', `/v1/models/${uuid}/charms`, { raw: await file.arrayBuffer(), contentType: 'application/zip' });
      const app = name || charm.name;
      const res = await post<{ units?: string[] }>(`/v1/models/${uuid}/applications`, { application: app, 'charm-sha256': charm.sha256, 'num-units': Number(n) || 0 });
      return `Deployed ${app} (${res.units?.length ?? 0} unit${res.units?.length === 1 ? '' : 's'}).`;
    });
  };
  return (
    <form onSubmit={submit} class="card" data-testid="deploy-form">
      <h3>Deploy a charm</h3>
      <Field label="Charm archive (.charm)" id="dep-file">
        <input id="dep-file" type="file" accept=".charm,.zip,application/zip" onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} data-testid="deploy-file" />
      </Field>
      <Field label="Application name" id="dep-name" hint="Default: the charm's name.">
        <input id="dep-name" value={name} onInput={(e) => setName(e.currentTarget.value)} pattern="[a-z][a-z0-9-]*" data-testid="deploy-name" />
      </Field>
      <Field label="Units" id="dep-n">
        <input id="dep-n" type="number" min="0" max="100" value={n} onInput={(e) => setN(e.currentTarget.value)} />
      </Field>
      <button type="submit" disabled={!file || r.busy} data-testid="deploy">
        Deploy
      </button>
      <Outcome err={r.err} ok={r.ok} id="deploy" />
    </form>
  );
}

function Scale({ uuid, app, units }: { uuid: string; app: AppRow; units: UnitRow[] }) {
  const mine = units.filter((u) => u.app === app.name);
  const [count, setCount] = useState('1');
  const [victim, setVictim] = useState('');
  const r = useRun();
  if (app.subordinate) return <p class="muted">{app.name} is a subordinate: it runs where its principals do.</p>;
  return (
    <div class="card" data-testid="scale-form">
      <h3>Scale {app.name}</h3>
      <p>
        {mine.length} unit{mine.length === 1 ? '' : 's'}.
      </p>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          void r.run(async () => {
            const res = await post<{ units?: string[] }>(`/v1/models/${uuid}/applications/${enc(app.name)}/units`, { 'num-units': Number(count) || 1 });
            return `Added ${(res.units ?? []).join(', ')}.`;
          });
        }}
      >
        <Field label="Units to add" id="scale-n">
          <input id="scale-n" type="number" min="1" max="100" value={count} onInput={(e) => setCount(e.currentTarget.value)} data-testid="scale-count" />
        </Field>
        <button type="submit" disabled={r.busy} data-testid="scale">
          Add units
        </button>
      </form>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (!victim) return;
          const [a, k] = [victim.slice(0, victim.lastIndexOf('/')), victim.slice(victim.lastIndexOf('/') + 1)];
          void r.run(async () => {
            await del(`/v1/models/${uuid}/units/${enc(a)}/${enc(k)}`);
            setVictim('');
            return `Removing ${victim}.`;
          });
        }}
      >
        <Field label="Unit to remove" id="scale-rm">
          <select id="scale-rm" value={victim} onChange={(e) => setVictim(e.currentTarget.value)} data-testid="remove-unit-choice">
            <option value="">choose…</option>
            {mine.map((u) => (
              <option value={u.name}>{u.name}</option>
            ))}
          </select>
        </Field>
        <button type="submit" class="danger" disabled={!victim || r.busy} data-testid="remove-unit">
          Remove unit
        </button>
      </form>
      <Outcome err={r.err} ok={r.ok} id="scale" />
    </div>
  );
}

function Integrate({ uuid, apps, relations }: { uuid: string; apps: AppRow[]; relations: RelationRow[] }) {
  const [a, setA] = useState('');
  const [b, setB] = useState('');
  const r = useRun();
  const endpoints = apps.flatMap((x) => (x.endpoints.length ? x.endpoints.map((e) => `${x.name}:${e.name}`) : [x.name]));
  return (
    <div class="card" data-testid="integrate-form">
      <h3>Integrations</h3>
      <datalist id="endpoints">
        {endpoints.map((e) => (
          <option value={e} />
        ))}
      </datalist>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          void r.run(async () => {
            const rel = await post<{ id: number; key: string }>(`/v1/models/${uuid}/relations`, { endpoints: [a, b] });
            setA('');
            setB('');
            return `Integrated: relation ${rel.id} (${rel.key}).`;
          });
        }}
      >
        <Field label="One end (app or app:endpoint)" id="int-a">
          <input id="int-a" list="endpoints" value={a} onInput={(e) => setA(e.currentTarget.value)} required data-testid="integrate-a" />
        </Field>
        <Field label="Other end" id="int-b">
          <input id="int-b" list="endpoints" value={b} onInput={(e) => setB(e.currentTarget.value)} required data-testid="integrate-b" />
        </Field>
        <button type="submit" disabled={r.busy} data-testid="integrate">
          Integrate
        </button>
      </form>
      <ul class="plain">
        {relations
          .filter((x) => x.type !== 'peer')
          .map((x) => (
            <li data-testid="integration-item">
              {relLabel(x)} <span class="muted">({x.interface})</span>{' '}
              <button
                type="button"
                class="danger small"
                disabled={r.busy}
                onClick={() => {
                  if (!confirm(`Remove the integration ${relLabel(x)}?`)) return;
                  void r.run(async () => {
                    await del(`/v1/models/${uuid}/relations/${x.id}`);
                    return `Removing relation ${x.id}.`;
                  });
                }}
                data-testid="remove-relation"
              >
                Remove
              </button>
            </li>
          ))}
      </ul>
      <Outcome err={r.err} ok={r.ok} id="integrate" />
    </div>
  );
}

export default function Operate({ uuid, apps, relations, units, tasks }: Props) {
  const q = route.value.query;
  const sel = q.get('app') ?? apps[0]?.name ?? '';
  const app = apps.find((a) => a.name === sel);
  return (
    <section aria-label="Operate" class="operate">
      <Deploy uuid={uuid} />
      <Integrate uuid={uuid} apps={apps} relations={relations} />
      {apps.length > 0 && (
        <>
          <label class="pick">
            Application
            <select value={sel} onChange={(e) => setQuery({ ...Object.fromEntries(q.entries()), app: e.currentTarget.value })} data-testid="operate-app">
              {apps.map((a) => (
                <option value={a.name}>{a.name}</option>
              ))}
            </select>
          </label>
          {app && (
            <>
              <Scale uuid={uuid} app={app} units={units} />
              <div class="card">
                <ConfigForm key={app.name} uuid={uuid} app={app.name} />
              </div>
              <div class="card">
                <ActionForm uuid={uuid} app={app.name} sha256={app.sha256} units={units.filter((u) => u.app === app.name).map((u) => u.name)} tasks={tasks} />
              </div>
            </>
          )}
        </>
      )}
    </section>
  );
}
