import type { ControllerRow, FederationFrame, ModelRow } from '../types';

// The federation store: every controller and model of the hub's index the
// caller may read, keyed by controller name and model UUID, as the
// GET /v1/watch stream delivers them (api.FederationFrame).
export interface FederationState {
  index: number;
  controllers: Map<string, ControllerRow>;
  models: Map<string, ModelRow>;
  loaded: boolean;
}

export function emptyFederation(): FederationState {
  return { index: 0, controllers: new Map(), models: new Map(), loaded: false };
}

// applyFederationFrame applies one frame in place and says whether
// anything changed. A reset replaces everything; a delta whose index is
// not newer than the last one applied is a repeat and is ignored.
export function applyFederationFrame(s: FederationState, f: FederationFrame): boolean {
  switch (f.type) {
    case 'reset':
      s.controllers = new Map();
      s.models = new Map();
      for (const c of f.controllers ?? []) s.controllers.set(c.name, c);
      for (const m of f.models ?? []) s.models.set(m.uuid, m);
      s.index = f.index;
      s.loaded = true;
      return true;
    case 'delta':
      if (f.index <= s.index) return false;
      for (const c of f.controllers ?? []) s.controllers.set(c.name, c);
      for (const m of f.models ?? []) s.models.set(m.uuid, m);
      for (const k of f.removed ?? []) {
        if (k.kind === 'controller') s.controllers.delete(k.id);
        else if (k.kind === 'model') s.models.delete(k.id);
      }
      s.index = f.index;
      return true;
    default:
      return false;
  }
}

export function modelStatus(m: ModelRow): string {
  const st = m.status;
  if (!st) return 'unknown';
  return typeof st === 'string' ? st : st.status;
}
