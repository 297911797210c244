import { useState } from 'preact/hooks';
import { controllerLogin, config } from '../session';
import { Field } from '../components';

// A standalone controller's login: its local user and password, posted to
// POST /auth/login, which sets the session cookie.
export function Login() {
  const [user, setUser] = useState('admin');
  const [password, setPassword] = useState('');
  const [err, setErr] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setErr(await controllerLogin(user, password));
    setBusy(false);
  };
  return (
    <main id="main" class="login">
      <h1>{config.value.name ?? 'Drover controller'}</h1>
      <form onSubmit={submit} data-testid="login-form" aria-describedby={err ? 'login-error' : undefined}>
        <Field label="User" id="login-user">
          <input id="login-user" name="user" autocomplete="username" value={user} onInput={(e) => setUser(e.currentTarget.value)} required />
        </Field>
        <Field label="Password" id="login-password">
          <input id="login-password" name="password" type="password" autocomplete="current-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} required />
        </Field>
        {err && (
          <p class="error" role="alert" id="login-error">
            {err}
          </p>
        )}
        <button type="submit" disabled={busy} data-testid="login-submit">
          Log in
        </button>
      </form>
    </main>
  );
}
