import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { render } from 'preact';
import { App } from './app';
import { boot } from './session';
import { navigate, startRouter } from './router';
import { setScope } from './live';
import { FakeWS } from './testing/fakews';

// The app in happy-dom against a fake server: fetch answers from a table,
// and a fake WebSocket the test drives.


const calls: { method: string; url: string; body?: string; headers: Record<string, string> }[] = [];
const answers: Record<string, unknown> = {
  'GET /config.json': { mode: 'hub', name: 'test hub', version: '0.1' },
  'GET /v1/whoami': { user: 'ann@example.com', access: 'login', can: { superuser: false, 'audit-viewer': true, 'admin-orgs': [], 'add-model': true } },
  'GET /v1/access?object=model%3AM1': { object: 'model:M1', read: true, write: true, admin: false },
  'GET /v1/models/M1/applications/db/config': {
    application: 'db', charm: 'pg',
    settings: { port: { type: 'int', default: 5432, value: 5432, source: 'default' }, name: { type: 'string', default: 'x', source: 'default' } },
  },
  'PATCH /v1/models/M1/applications/db/config': { application: 'db', charm: 'pg', settings: {} },
  'GET /v1/models/M1/charms/abc': { 'actions-yaml': 'backup:\n  description: Back up.\n  params:\n    target: {type: string}\n  required: [target]\n' },
  'POST /v1/models/M1/actions': [{ id: '7', receiver: 'db/0', action: 'backup', status: 'pending' }],
  'GET /v1/models/M1/tasks/7?wait=30s': { id: '7', receiver: 'db/0', action: 'backup', status: 'completed', results: { where: 'tape' } },
};

function fakeFetch(input: string, init: RequestInit = {}) {
  const method = init.method ?? 'GET';
  calls.push({ method, url: input, body: init.body as string | undefined, headers: (init.headers ?? {}) as Record<string, string> });
  const key = `${method} ${input}`;
  if (!(key in answers)) return Promise.resolve(new Response(JSON.stringify({ code: 'not-found', message: key }), { status: 404 }));
  return Promise.resolve(new Response(JSON.stringify(answers[key]), { status: 200 }));
}

const models = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ uuid: `M${i + 1}`, name: `m${i + 1}`, owner: 'ann@example.com', org: i % 2 ? 'acme' : 'beta', controller: 'east', status: 'available' }));

const status = {
  model: { name: 'm1', uuid: 'M1', controller: 'east', cloud: 'localhost', version: '1', 'model-status': { current: 'available' } },
  machines: {},
  applications: {
    db: { charm: 'pg', 'charm-name': 'pg', 'charm-rev': 1, 'charm-sha256': 'abc', exposed: false, 'application-status': { current: 'active' },
      units: { 'db/0': { 'workload-status': { current: 'active' }, 'juju-status': { current: 'idle' } } } },
    web: { charm: 'web', 'charm-name': 'web', 'charm-rev': 1, exposed: false, 'application-status': { current: 'active' } },
  },
  relations: [
    { 'relation-id': 0, provider: 'db:db', requirer: 'web:db', interface: 'pgsql', type: 'regular', status: 'joined' },
    { 'relation-id': 1, provider: 'db:peers', requirer: 'db:peers', interface: 'p', type: 'peer', status: 'joined' },
  ],
  index: 20,
};

const $$ = (id: string) => document.querySelectorAll(`[data-testid="${id}"]`);
const text = (id: string) => document.querySelector(`[data-testid="${id}"]`)?.textContent ?? '';
const input = (id: string, v: string) => {
  const el = document.querySelector(`[data-testid="${id}"]`) as HTMLInputElement;
  el.value = v;
  el.dispatchEvent(new Event(el.tagName === 'SELECT' ? 'change' : 'input', { bubbles: true }));
};
const click = (id: string) => (document.querySelector(`[data-testid="${id}"]`) as HTMLElement).click();

describe('the app', () => {
  beforeAll(async () => {
    vi.stubGlobal('fetch', fakeFetch);
    vi.stubGlobal('WebSocket', FakeWS);
    history.replaceState(null, '', '/models');
    document.body.innerHTML = '<div id="app"></div>';
    startRouter();
    await boot();
    render(<App />, document.getElementById('app')!);
  });
  afterAll(() => {
    setScope('');
    vi.unstubAllGlobals();
  });

  it('lists the federation stream models, live', async () => {
    await vi.waitFor(() => expect(FakeWS.all.length).toBe(1));
    expect(FakeWS.all[0].url).toMatch(/\/v1\/watch\?since=0$/);
    FakeWS.all[0].send({ type: 'reset', index: 3, models: models(5), controllers: [{ uuid: 'C', name: 'east' }] });
    await vi.waitFor(() => expect($$('model-row').length).toBe(5));
    expect(text('conn-state')).toBe('live');
    FakeWS.all[0].send({ type: 'delta', index: 4, models: [models(6)[5]], removed: [{ kind: 'model', id: 'M1' }] });
    await vi.waitFor(() => expect(document.querySelector('[data-key="M6"]')).not.toBeNull());
    expect(text('model-count')).toBe('5');
    await vi.waitFor(() => expect(($$('conn-state')[0] as HTMLElement).dataset.index).toBe('4'));
    expect([...$$('model-row')].map((r) => (r as HTMLElement).dataset.key)).not.toContain('M1');
  });

  it('filters in the URL, on the client', async () => {
    navigate('/models?org=acme');
    await vi.waitFor(() => expect($$('model-row').length).toBe(3));
    navigate('/models');
    await vi.waitFor(() => expect($$('model-row').length).toBe(5));
  });

  it('a dropped stream shows reconnecting, resumes with since, and a reset leaves no duplicates', async () => {
    FakeWS.all[0].close();
    await vi.waitFor(() => expect(text('conn-state')).toBe('reconnecting'));
    await vi.waitFor(() => expect(FakeWS.all.length).toBe(2), { timeout: 2000 });
    expect(FakeWS.all[1].url).toMatch(/since=4$/);
    FakeWS.all[1].send({ type: 'reset', index: 9, models: models(5), controllers: [] });
    await vi.waitFor(() => expect(text('conn-state')).toBe('live'));
    await vi.waitFor(() => expect($$('model-row').length).toBe(5));
  });

  it('a model page switches the one socket to the model watch and draws the graph', async () => {
    navigate('/models/M1?tab=graph');
    await vi.waitFor(() => expect(FakeWS.all.length).toBe(3));
    expect(FakeWS.all[1].closed).toBe(true);
    expect(FakeWS.all[2].url).toMatch(/\/v1\/models\/M1\/watch\?since=0$/);
    FakeWS.all[2].send({ type: 'reset', index: 20, status });
    await vi.waitFor(() => expect($$('graph-node').length).toBe(2));
    expect($$('graph-edge').length).toBe(2);
    expect($$('relation-row').length).toBe(2);
    FakeWS.all[2].send({ type: 'delta', index: 21, deltas: [{ kind: 'unit', key: 'web/0', op: 'upsert', object: { name: 'web/0', application: 'web', 'workload-status': { status: 'active' }, 'agent-status': { status: 'idle' } } }] });
    navigate('/models/M1?tab=units');
    await vi.waitFor(() => expect($$('unit-row').length).toBe(2));
  });

  it('edits config through a diff, sending only the change, with the CSRF header', async () => {
    navigate('/models/M1?tab=operate&app=db');
    await vi.waitFor(() => expect($$('config-port').length).toBe(1));
    input('config-port', 'x');
    await vi.waitFor(() => expect((document.querySelector('[data-testid="edit-config"]') as HTMLButtonElement).disabled).toBe(true));
    input('config-port', '6000');
    await vi.waitFor(() => expect((document.querySelector('[data-testid="edit-config"]') as HTMLButtonElement).disabled).toBe(false));
    click('edit-config');
    await vi.waitFor(() => expect($$('config-diff-row').length).toBe(1));
    click('save-config');
    await vi.waitFor(() => expect($$('config-saved').length).toBe(1));
    const p = calls.find((c) => c.method === 'PATCH')!;
    expect(JSON.parse(p.body!)).toEqual({ set: { port: 6000 } });
    expect(p.headers['X-Drover-CSRF']).toBe('1');
    expect(p.headers['Content-Type']).toBe('application/json');
  });

  it('runs an action from its schema and shows its result', async () => {
    await vi.waitFor(() => expect($$('action-name').length).toBe(1));
    input('action-name', 'backup');
    await vi.waitFor(() => expect($$('action-param-target').length).toBe(1));
    input('action-param-target', '/tmp');
    click('run-action');
    await vi.waitFor(() => expect(text('action-status')).toBe('completed'));
    expect(text('action-output')).toContain('tape');
    const run = calls.find((c) => c.method === 'POST' && c.url.endsWith('/actions'))!;
    expect(JSON.parse(run.body!)).toEqual({ receivers: ['db/0'], action: 'backup', params: { target: '/tmp' } });
  });
});
