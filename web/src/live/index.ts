import { signal } from '@preact/signals';
import { wsURL } from '../api';
import type { FederationFrame, WatchFrame } from '../types';
import { FrameBatcher } from './batch';
import { applyFederationFrame, emptyFederation, type FederationState } from './federation';
import { applyModelFrame, emptyModel, type ModelState } from './model';
import { LiveSocket, type ConnState } from './socket';

// The tab's one live stream: the hub's federation stream on the
// federation views, a model's watch on that model's pages. Switching scope
// closes the old socket before opening the new one. Frames are applied in
// batches, once per animation frame; a version signal tells views to
// render.

export const conn = signal<{ state: ConnState | 'off'; staleSince: number | null }>({ state: 'off', staleSince: null });
export const fedVersion = signal(0);
export const modelVersion = signal(0);
// appliedIndex is the index of the last frame the current scope applied
// (the header shows it as data-index, for tests and benchmarks).
export const appliedIndex = signal(0);
export let federation: FederationState = emptyFederation();
export let model: ModelState = emptyModel('');

let scope = '';
let socket: LiveSocket<FederationFrame | WatchFrame> | null = null;

// Marks for the browser benchmarks: set once the first rows paint.
function mark(name: string): void {
  if (typeof performance !== 'undefined' && !performance.getEntriesByName(name).length) {
    requestAnimationFrame(() => performance.mark(name));
  }
}
export const markOnce = mark;

export function setScope(next: string): void {
  if (next === scope) return;
  scope = next;
  socket?.close();
  socket = null;
  if (!next) {
    conn.value = { state: 'off', staleSince: null };
    return;
  }
  conn.value = { state: 'connecting', staleSince: null };
  const onState = (state: ConnState, staleSince: number | null) => {
    conn.value = { state, staleSince };
  };
  if (next === 'federation') {
    // Rows already held stay shown while the stream resumes; a reset
    // replaces them.
    const batch = new FrameBatcher<FederationFrame>((fs) => {
      let changed = false;
      for (const f of fs) changed = applyFederationFrame(federation, f) || changed;
      if (changed) fedVersion.value++;
      appliedIndex.value = federation.index;
    });
    const s = new LiveSocket<FederationFrame>({
      url: (since) => wsURL(`/v1/watch?since=${since}`),
      frame: (f) => batch.push(f),
      state: onState,
    });
    s.index = federation.index;
    socket = s as LiveSocket<FederationFrame | WatchFrame>;
  } else {
    const uuid = next.slice('model:'.length);
    if (model.uuid !== uuid) model = emptyModel(uuid);
    modelVersion.value++;
    const batch = new FrameBatcher<WatchFrame>((fs) => {
      let changed = false;
      for (const f of fs) changed = applyModelFrame(model, f) || changed;
      if (changed) modelVersion.value++;
      appliedIndex.value = model.index;
    });
    const s = new LiveSocket<WatchFrame>({
      url: (since, m) => wsURL(`/v1/models/${encodeURIComponent(uuid)}/watch?since=${since}${m ? `&mark=${encodeURIComponent(m)}` : ''}`),
      frame: (f) => batch.push(f),
      state: onState,
    });
    s.index = model.index;
    socket = s as LiveSocket<FederationFrame | WatchFrame>;
  }
  socket.start();
}

// reconnect drops the current socket as a failure would (the header's
// control, and a way to check resume by hand).
export function reconnect(): void {
  socket?.drop();
}
