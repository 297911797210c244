import { render } from 'preact';
import { App } from './app';
import { boot } from './session';
import { startRouter } from './router';
import './styles.css';

startRouter();
const root = document.getElementById('app')!;
boot().then(
  () => {
    root.textContent = ''; // the static "Loading…" of index.html
    render(<App />, root);
  },
  (e) => {
    root.textContent = `The dashboard could not start: ${e instanceof Error ? e.message : String(e)}`;
  },
);
