import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { load as loadYAML } from 'js-yaml';
import { enc, get, patch, post } from '../api';
import { configFields, plan, shown, type ConfigField } from '../forms/config';
import { actionFields, actionParams, specsFromDoc, type ActionField } from '../forms/action';
import { ErrorBox, Field, Loading, useAsync } from '../components';
import type { ApplicationConfig, Task } from '../types';

function input(f: { type: string; choices?: string[] | null }, id: string, value: string, set: (v: string) => void, testid: string) {
  if (f.type === 'boolean') {
    return (
      <select id={id} value={value} onChange={(e) => set(e.currentTarget.value)} data-testid={testid}>
        <option value="">(unset)</option>
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
    );
  }
  if (f.choices) {
    return (
      <select id={id} value={value} onChange={(e) => set(e.currentTarget.value)} data-testid={testid}>
        <option value="">(unset)</option>
        {f.choices.map((c) => (
          <option value={c}>{c}</option>
        ))}
      </select>
    );
  }
  if (f.type === 'secret') {
    return <input id={id} type="password" value={value} onInput={(e) => set(e.currentTarget.value)} data-testid={testid} autocomplete="off" />;
  }
  const mode = f.type === 'int' || f.type === 'integer' ? 'numeric' : f.type === 'float' || f.type === 'number' ? 'decimal' : 'text';
  return <input id={id} type="text" inputMode={mode} value={value} onInput={(e) => set(e.currentTarget.value)} data-testid={testid} autocomplete="off" />;
}

// ConfigForm edits an application's config: a field per option of the
// charm's schema, then a diff of what changes, then the PATCH. Render it
// keyed by the application: another application starts a fresh form.
export function ConfigForm({ uuid, app }: { uuid: string; app: string }) {
  const cfg = useAsync((s) => get<ApplicationConfig>(`/v1/models/${uuid}/applications/${enc(app)}/config`, s), [uuid, app]);
  const fields = useMemo(() => (cfg.data ? configFields(cfg.data) : []), [cfg.data]);
  const [edited, setEdited] = useState<Record<string, string>>({});
  const [review, setReview] = useState(false);
  const [result, setResult] = useState<{ ok?: string; err?: unknown }>({});
  if (cfg.error) return <ErrorBox error={cfg.error} />;
  if (!cfg.data) return <Loading />;
  const p = plan(fields, edited);
  const val = (f: ConfigField) => (f.key in edited ? edited[f.key] : f.current);
  const save = async () => {
    try {
      await patch(`/v1/models/${uuid}/applications/${enc(app)}/config`, p.change);
      setResult({ ok: `Saved ${p.rows.length} change${p.rows.length === 1 ? '' : 's'}.` });
      setEdited({});
      cfg.reload();
    } catch (err) {
      setResult({ err });
    }
    setReview(false);
  };
  return (
    <form class="config-form" onSubmit={(e) => (e.preventDefault(), Object.keys(p.errors).length || !p.rows.length ? undefined : setReview(true))} data-testid="config-form">
      <h3>Configuration of {app}</h3>
      {!fields.length && <p class="muted">The charm has no options.</p>}
      <div class="grid">
        {fields.map((f) => (
          <Field label={`${f.key} (${f.type})`} id={`cfg-${f.key}`} hint={`${f.description}${f.default ? ` Default: ${shown(f, f.default)}.` : ''}`} error={p.errors[f.key]}>
            {input(f, `cfg-${f.key}`, val(f), (v) => setEdited({ ...edited, [f.key]: v }), `config-${f.key}`)}
          </Field>
        ))}
      </div>
      {review ? (
        <div class="diff" data-testid="config-diff" role="region" aria-label="Changes to save">
          <h4>Changes</h4>
          <table>
            <thead>
              <tr>
                <th scope="col">Option</th>
                <th scope="col">Now</th>
                <th scope="col">After</th>
              </tr>
            </thead>
            <tbody>
              {p.rows.map((r) => {
                const f = fields.find((x) => x.key === r.key)!;
                return (
                  <tr data-testid="config-diff-row">
                    <td>{r.key}</td>
                    <td class="del">{shown(f, r.from) || '(unset)'}</td>
                    <td class="add">{r.reset ? `${shown(f, r.to) || '(unset)'} (default)` : shown(f, r.to)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <button type="button" onClick={save} data-testid="save-config">
            Save
          </button>
          <button type="button" class="secondary" onClick={() => setReview(false)}>
            Back
          </button>
        </div>
      ) : (
        <button type="submit" disabled={!p.rows.length || Object.keys(p.errors).length > 0} data-testid="edit-config">
          Review {p.rows.length || ''} change{p.rows.length === 1 ? '' : 's'}
        </button>
      )}
      {result.ok && (
        <p class="ok" role="status" data-testid="config-saved">
          {result.ok}
        </p>
      )}
      <ErrorBox error={result.err} />
    </form>
  );
}

// ActionForm runs one of the charm's actions on chosen units, its fields
// from the action's JSON schema, and follows each task to its result: the
// model's watch streams task changes; a task not seen there is asked for
// with ?wait.
export function ActionForm({ uuid, app, sha256, units, tasks }: { uuid: string; app: string; sha256: string; units: string[]; tasks: Map<string, Task> }) {
  const charm = useAsync(async (s) => {
    let sha = sha256;
    if (!sha) sha = (await get<{ 'charm-sha256': string }>(`/v1/models/${uuid}/applications/${enc(app)}`, s))['charm-sha256'];
    const c = await get<{ 'actions-yaml'?: string }>(`/v1/models/${uuid}/charms/${sha}`, s);
    return specsFromDoc(c['actions-yaml'] ? loadYAML(c['actions-yaml']) : {});
  }, [uuid, app, sha256]);
  const [action, setAction] = useState('');
  const [values, setValuesState] = useState<Record<string, string>>({});
  // latest holds the values as typed, for a submit that comes before the
  // next render.
  const latest = useRef<Record<string, string>>({});
  const setValues = (v: Record<string, string>) => {
    latest.current = v;
    setValuesState(v);
  };
  const [receivers, setReceivers] = useState<string[]>([]);
  const [running, setRunning] = useState<Task[]>([]);
  const [err, setErr] = useState<unknown>(null);
  const [tried, setTried] = useState(false);
  useEffect(() => {
    setAction('');
    setRunning([]);
    setReceivers(units.slice(0, 1));
  }, [app]);
  const spec = charm.data?.[action];
  const fields: ActionField[] = useMemo(() => (spec ? actionFields(spec.params) : []), [spec]);
  const checked = actionParams(fields, values);
  // Poll nothing: wait on each task once with ?wait, while the watch
  // brings its log lines as they come.
  useEffect(() => {
    const ac = new AbortController();
    for (const t of running) {
      if (['completed', 'failed', 'cancelled', 'aborted'].includes(tasks.get(t.id)?.status ?? t.status)) continue;
      get<Task>(`/v1/models/${uuid}/tasks/${enc(t.id)}?wait=30s`, ac.signal).then(
        (done) => setRunning((rs) => rs.map((r) => (r.id === done.id ? done : r))),
        () => undefined,
      );
    }
    return () => ac.abort();
  }, [running.map((t) => t.id).join(',')]);
  if (charm.error) return <ErrorBox error={charm.error} />;
  if (!charm.data) return <Loading />;
  const names = Object.keys(charm.data);
  const run = async (e: Event) => {
    e.preventDefault();
    setTried(true);
    const now = actionParams(fields, latest.current);
    if (Object.keys(now.errors).length || !receivers.length || !action) return;
    setErr(null);
    try {
      setRunning(await post<Task[]>(`/v1/models/${uuid}/actions`, { receivers, action, params: now.params }));
    } catch (x) {
      setErr(x);
    }
  };
  return (
    <form class="action-form" onSubmit={run} data-testid="action-form">
      <h3>Run an action on {app}</h3>
      {!names.length ? (
        <p class="muted">The charm has no actions.</p>
      ) : (
        <>
          <Field label="Action" id="act-name" hint={spec?.description}>
            <select id="act-name" value={action} onChange={(e) => (setAction(e.currentTarget.value), setValues({}), setTried(false))} data-testid="action-name">
              <option value="">choose…</option>
              {names.map((n) => (
                <option value={n}>{n}</option>
              ))}
            </select>
          </Field>
          <fieldset>
            <legend>Units</legend>
            {units.map((u) => (
              <label class="inline">
                <input type="checkbox" checked={receivers.includes(u)} onChange={(e) => setReceivers(e.currentTarget.checked ? [...receivers, u] : receivers.filter((r) => r !== u))} />
                {u}
              </label>
            ))}
          </fieldset>
          {fields.map((f) => (
            <Field label={`${f.name}${f.required ? ' *' : ''} (${f.type})`} id={`act-${f.name}`} hint={`${f.description}${f.default ? ` Default: ${f.default}.` : ''}`} error={tried ? checked.errors[f.name] : undefined}>
              {input(f, `act-${f.name}`, values[f.name] ?? '', (v) => setValues({ ...values, [f.name]: v }), `action-param-${f.name}`)}
            </Field>
          ))}
          <button type="submit" disabled={!action || !receivers.length} data-testid="run-action">
            Run
          </button>
        </>
      )}
      <ErrorBox error={err} />
      {running.map((t0) => {
        const live = tasks.get(t0.id);
        const t = live && (live.log?.length ?? 0) >= (t0.log?.length ?? 0) ? live : t0;
        return (
          <section class="task" data-testid="action-result" data-status={t.status} aria-live="polite">
            <h4>
              Task {t.id} on {t.receiver}: <span data-testid="action-status">{t.status}</span>
            </h4>
            {t.message && <p>{t.message}</p>}
            {(t.log ?? []).map((l) => (
              <div class="log-line">
                <time>{l.time.slice(11, 19)}</time> {l.message}
              </div>
            ))}
            {t.results && <pre data-testid="action-output">{JSON.stringify(t.results, null, 2)}</pre>}
          </section>
        );
      })}
    </form>
  );
}

