import { useState } from 'preact/hooks';
import { del, enc, get, post, qs } from '../api';
import { route, setQuery } from '../router';
import { can } from '../session';
import { ErrorBox, Field, Loading, useAsync, VirtualTable } from '../components';
import type { ReviewedGrant } from '../types';

// Access management for those allowed it (hub administrators and the
// administrators of organizations): grants on models, controllers and
// organizations (POST and DELETE /v1/grants, as drover grant and revoke),
// and the organization's members, service accounts and groups.

interface HubUser {
  name: string;
  'display-name'?: string;
  kind: string;
  org: string;
  pending?: boolean;
  disabled?: boolean;
  'last-connection'?: string;
}

interface Group {
  id: string;
  org: string;
  name: string;
  'member-count': number;
}

const LEVELS: Record<string, string[]> = {
  model: ['read', 'write', 'admin', 'audit_viewer'],
  controller: ['login', 'add-model', 'superuser', 'audit_viewer'],
  organization: ['member', 'add-model', 'admin', 'audit_viewer'],
};

// levelOf is the grant level an OpenFGA relation on an object type stands
// for (hub/grants.go), so a reviewed grant can be revoked in drover's words.
export function levelOf(type: string, relation: string): string {
  const m: Record<string, Record<string, string>> = {
    model: { administrator: 'admin', writer: 'write', reader: 'read', audit_viewer: 'audit_viewer' },
    controller: { administrator: 'superuser', can_add_model: 'add-model', reader: 'login', audit_viewer: 'audit_viewer' },
    organization: { administrator: 'admin', can_add_model: 'add-model', member: 'member', audit_viewer: 'audit_viewer' },
  };
  return m[type]?.[relation] ?? relation;
}

// grantBody is the body of POST/DELETE /v1/grants for a reviewed grant.
export function grantBody(g: ReviewedGrant): Record<string, string> | null {
  const [type, id] = [g.object.slice(0, g.object.indexOf(':')), g.object.slice(g.object.indexOf(':') + 1)];
  const body: Record<string, string> = { level: levelOf(type, g.relation) };
  if (g.subject.startsWith('group:')) body.group = g['subject-name'];
  else if (g.subject === 'user:*') body.user = 'everyone';
  else body.user = g['subject-name'] || g.subject.slice('user:'.length);
  if (type === 'model') body.model = id;
  else if (type === 'controller') body.controller = g['object-name'] || id;
  else if (type === 'organization') body.organization = g['object-name'] || id;
  else return null;
  return body;
}

function GrantForm({ onDone }: { onDone: () => void }) {
  const [kind, setKind] = useState<'user' | 'group'>('user');
  const [subject, setSubject] = useState('');
  const [type, setType] = useState('model');
  const [target, setTarget] = useState('');
  const [level, setLevel] = useState('read');
  const [err, setErr] = useState<unknown>(null);
  const [ok, setOk] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    setErr(null);
    setOk('');
    try {
      await post('/v1/grants', { [kind]: subject, level, [type]: target });
      setOk(`Granted ${level} on ${type} ${target} to ${subject}.`);
      onDone();
    } catch (x) {
      setErr(x);
    }
  };
  return (
    <form class="card row wrap" onSubmit={submit} data-testid="grant-form">
      <h3>Grant access</h3>
      <Field label="Subject" id="g-kind">
        <select id="g-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as 'user' | 'group')}>
          <option value="user">user (email, id or everyone)</option>
          <option value="group">group (ORG/NAME)</option>
        </select>
      </Field>
      <Field label="Who" id="g-subject">
        <input id="g-subject" value={subject} onInput={(e) => setSubject(e.currentTarget.value)} required data-testid="grant-subject" />
      </Field>
      <Field label="On" id="g-type">
        <select id="g-type" value={type} onChange={(e) => (setType(e.currentTarget.value), setLevel(LEVELS[e.currentTarget.value][0]))} data-testid="grant-type">
          <option value="model">model (UUID)</option>
          <option value="controller">controller (name)</option>
          <option value="organization">organization</option>
        </select>
      </Field>
      <Field label="Target" id="g-target">
        <input id="g-target" value={target} onInput={(e) => setTarget(e.currentTarget.value)} required data-testid="grant-target" />
      </Field>
      <Field label="Level" id="g-level">
        <select id="g-level" value={level} onChange={(e) => setLevel(e.currentTarget.value)} data-testid="grant-level">
          {LEVELS[type].map((l) => (
            <option value={l}>{l}</option>
          ))}
        </select>
      </Field>
      <button type="submit" data-testid="grant">
        Grant
      </button>
      <ErrorBox error={err} />
      {ok && (
        <p class="ok" role="status">
          {ok}
        </p>
      )}
    </form>
  );
}

export default function Access() {
  const c = can();
  const orgs = c['admin-orgs'] ?? [];
  const q = route.value.query;
  const org = q.get('org') ?? (c.superuser ? '' : orgs[0] ?? '');
  const grants = useAsync((s) => get<{ grants: ReviewedGrant[] }>(`/v1/compliance/access${qs({ org })}`, s), [org]);
  const users = useAsync((s) => get<HubUser[] | { users: HubUser[] }>(`/v1/users${qs({ org })}`, s), [org]);
  const groups = useAsync((s) => get<Group[] | { groups: Group[] }>(`/v1/groups${qs({ org })}`, s), [org]);
  const [err, setErr] = useState<unknown>(null);
  if (!c.superuser && !orgs.length) return <p>You administer no organization.</p>;
  const list = <T,>(x: T[] | Record<string, T[]> | undefined, k: string): T[] => (Array.isArray(x) ? x : ((x as Record<string, T[]> | undefined)?.[k] ?? []));
  const revoke = async (g: ReviewedGrant) => {
    const body = grantBody(g);
    if (!body || !confirm(`Revoke ${body.level} of ${g['subject-name'] || g.subject} on ${g['object-name'] || g.object}?`)) return;
    setErr(null);
    try {
      await del('/v1/grants', body);
      grants.reload();
    } catch (x) {
      setErr(x);
    }
  };
  const people = list<HubUser>(users.data, 'users');
  return (
    <section>
      <h1>Access</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Organization
          <select value={org} onChange={(e) => setQuery({ org: e.currentTarget.value })} data-testid="access-org">
            {c.superuser && <option value="">all (hub administrator)</option>}
            {orgs.map((o) => (
              <option value={o}>{o}</option>
            ))}
          </select>
        </label>
      </form>
      <GrantForm onDone={grants.reload} />
      <ErrorBox error={err} />
      <h2>Grants</h2>
      {grants.error ? (
        <ErrorBox error={grants.error} />
      ) : !grants.data ? (
        <Loading />
      ) : (
        <VirtualTable
          rows={grants.data.grants}
          testId="grants-table"
          rowTestId="grant-row"
          caption="Grants"
          rowKey={(g) => `${g.subject} ${g.relation} ${g.object}`}
          columns={[
            { title: 'Subject', cell: (g) => g['subject-name'] || g.subject },
            { title: 'Level', cell: (g) => levelOf(g.object.split(':')[0], g.relation) },
            { title: 'On', cell: (g) => `${g.object.split(':')[0]} ${g['object-name'] || g.object.split(':')[1]}` },
            { title: 'Organization', cell: (g) => g.org },
            {
              title: '',
              cell: (g) => (
                <button type="button" class="danger small" onClick={() => void revoke(g)} data-testid="revoke">
                  Revoke
                </button>
              ),
            },
          ]}
        />
      )}
      <h2>Members and service accounts</h2>
      {users.error ? (
        <ErrorBox error={users.error} />
      ) : !users.data ? (
        <Loading />
      ) : (
        <VirtualTable
          rows={people}
          testId="members-table"
          rowTestId="member-row"
          caption="Members and service accounts"
          rowKey={(u) => u.name}
          columns={[
            { title: 'Name', cell: (u) => u.name },
            { title: 'Kind', cell: (u) => u.kind },
            { title: 'Organization', cell: (u) => u.org },
            { title: 'State', cell: (u) => (u.disabled ? 'disabled' : u.pending ? 'pending' : 'active') },
            { title: 'Last connection', cell: (u) => u['last-connection']?.slice(0, 16).replace('T', ' ') ?? '' },
          ]}
        />
      )}
      <h2>Groups</h2>
      {groups.error ? (
        <ErrorBox error={groups.error} />
      ) : !groups.data ? (
        <Loading />
      ) : (
        <Groups groups={list<Group>(groups.data, 'groups')} reload={groups.reload} />
      )}
    </section>
  );
}

function Groups({ groups, reload }: { groups: Group[]; reload: () => void }) {
  const [open, setOpen] = useState('');
  const [member, setMember] = useState('');
  const [err, setErr] = useState<unknown>(null);
  const detail = useAsync((s) => (open ? get<{ members: { name: string; kind: string }[] }>(`/v1/groups/${enc(open)}`, s) : Promise.resolve(null)), [open]);
  const act = async (f: () => Promise<unknown>) => {
    setErr(null);
    try {
      await f();
      detail.reload();
      reload();
    } catch (x) {
      setErr(x);
    }
  };
  return (
    <>
      <VirtualTable
        rows={groups}
        testId="groups-table"
        rowTestId="group-row"
        caption="Groups"
        rowKey={(g) => g.id}
        columns={[
          { title: 'Group', cell: (g) => <button type="button" class="link" onClick={() => setOpen(`${g.org}/${g.name}`)}>{`${g.org}/${g.name}`}</button> },
          { title: 'Members', cell: (g) => String(g['member-count']), class: 'num' },
        ]}
      />
      <ErrorBox error={err} />
      {open && detail.data && (
        <div class="card" data-testid="group-detail">
          <h3>{open}</h3>
          <ul class="plain">
            {detail.data.members.map((m) => (
              <li>
                {m.name} <span class="muted">({m.kind})</span>{' '}
                <button type="button" class="danger small" onClick={() => void act(() => del(`/v1/groups/${enc(open)}/members/${enc(m.name)}`))} data-testid="remove-member">
                  Remove
                </button>
              </li>
            ))}
          </ul>
          <form class="row" onSubmit={(e) => (e.preventDefault(), void act(() => post(`/v1/groups/${enc(open)}/members`, { user: member })))}>
            <Field label="Add member" id="grp-add">
              <input id="grp-add" value={member} onInput={(e) => setMember(e.currentTarget.value)} required data-testid="add-member-name" />
            </Field>
            <button type="submit" data-testid="add-member">
              Add
            </button>
          </form>
        </div>
      )}
    </>
  );
}
