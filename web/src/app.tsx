import { useEffect } from 'preact/hooks';
import { appliedIndex, conn, reconnect, setScope } from './live';
import { match, route } from './router';
import { can, config, logout, me, needLogin, loginURL } from './session';
import { lazy } from './components';
import { Controllers } from './views/controllers';
import { Models } from './views/models';
import { ModelView } from './views/model';
import { Login } from './views/login';

const Audit = lazy(() => import('./views/audit'));
const Compliance = lazy(() => import('./views/compliance'));
const Access = lazy(() => import('./views/access'));
const Migrations = lazy(() => import('./views/migrations'));

function ConnState() {
  const { state, staleSince } = conn.value;
  if (state === 'off') return null;
  const text = state === 'stale' ? 'stale' : state === 'connecting' ? 'reconnecting' : state;
  const since = state === 'stale' && staleSince ? ` since ${new Date(staleSince).toLocaleTimeString()}` : '';
  return (
    <span class={`conn conn-${text}`} role="status" aria-live="polite">
      <span class="dot" aria-hidden="true" />
      <span data-testid="conn-state" data-index={appliedIndex.value}>
        {text}
      </span>
      {since && <span data-testid="conn-stale-since">{since}</span>}
      {state !== 'live' && (
        <button type="button" class="link" onClick={reconnect} data-testid="reconnect">
          retry now
        </button>
      )}
    </span>
  );
}

function Nav() {
  const c = can();
  const hub = config.value.mode === 'hub';
  const path = route.value.path;
  const link = (href: string, label: string, id: string) => (
    <a href={href} aria-current={path === href || path.startsWith(`${href}/`) ? 'page' : undefined} data-testid={`nav-${id}`}>
      {label}
    </a>
  );
  return (
    <nav class="nav" aria-label="Main">
      {hub && link('/controllers', 'Controllers', 'controllers')}
      {link('/models', 'Models', 'models')}
      {hub && (c.superuser || (c['admin-orgs']?.length ?? 0) > 0) && link('/access', 'Access', 'access')}
      {hub && c['audit-viewer'] && link('/audit', 'Audit', 'audit')}
      {hub && c['audit-viewer'] && link('/compliance', 'Compliance', 'compliance')}
      {hub && link('/migrations', 'Migrations', 'migrations')}
    </nav>
  );
}

// scopeOf is the live stream a path needs: a model's watch on its pages,
// the federation stream on the hub's other views.
function scopeOf(path: string): string {
  const m = match('/models/:uuid', path) ?? match('/models/:uuid/:tab', path);
  if (m) return `model:${m.uuid}`;
  if (config.value.mode !== 'hub') return '';
  if (/^\/(controllers|models|compliance|migrations|access)?\/?$/.test(path) || path.startsWith('/migrations/')) return 'federation';
  return '';
}

function Page() {
  const path = route.value.path;
  let m: Record<string, string> | null;
  if (path === '/controllers') return <Controllers />;
  if (path === '/models' || path === '/') return <Models />;
  if ((m = match('/models/:uuid', path))) return <ModelView uuid={m.uuid} />;
  if (path === '/audit') return <Audit />;
  if (path === '/compliance') return <Compliance />;
  if (path === '/access') return <Access />;
  if (path === '/migrations') return <Migrations />;
  if ((m = match('/migrations/:id', path))) return <Migrations id={m.id} />;
  return (
    <section>
      <h1>Not found</h1>
      <p>
        Nothing lives at <code>{path}</code>. <a href="/models">Models</a>
      </p>
    </section>
  );
}

export function App() {
  const path = route.value.path;
  const user = me.value;
  useEffect(() => {
    setScope(user ? scopeOf(path) : '');
  }, [path, user]);
  useEffect(() => {
    document.title = `${config.value.name ?? 'Drover'} — dashboard`;
  }, []);
  if (needLogin.value) return <Login />;
  if (!user) {
    return (
      <main id="main" class="login">
        <h1>{config.value.name ?? 'Drover'}</h1>
        <p>You are not logged in.</p>
        <p>
          <a class="button" href={loginURL()} data-testid="login" data-external>
            Log in
          </a>
        </p>
      </main>
    );
  }
  return (
    <>
      <a class="skip" href="#main" data-external>
        Skip to content
      </a>
      <header class="top">
        <a href="/models" class="brand">
          {config.value.name ?? 'Drover'}
        </a>
        <Nav />
        <ConnState />
        <span class="who">
          <span data-testid="whoami">{user.user}</span>
          <button type="button" class="link" onClick={() => void logout()} data-testid="logout">
            Log out
          </button>
        </span>
      </header>
      <main id="main" tabIndex={-1}>
        <Page />
      </main>
      <footer class="muted">{config.value.version ? `drover ${config.value.version}` : ''}</footer>
    </>
  );
}
