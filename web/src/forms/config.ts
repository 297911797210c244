import type { ApplicationConfig } from '../types';

// A config form built from an application's options (GET
// .../applications/{app}/config): one field per option, typed by the
// charm's config schema (string, int, float, boolean, secret). Values are
// edited as strings and checked here; the diff against the current values
// is what the save sends (api.ConfigChange).

export type OptionType = 'string' | 'int' | 'float' | 'boolean' | 'secret';

export interface ConfigField {
  key: string;
  type: OptionType;
  description: string;
  default: string;
  current: string; // the value now, as a string ("" when unset)
  source: string;
}

export function configFields(cfg: ApplicationConfig): ConfigField[] {
  return Object.keys(cfg.settings)
    .sort()
    .map((key) => {
      const o = cfg.settings[key];
      const type = (['string', 'int', 'float', 'boolean', 'secret'].includes(o.type) ? o.type : 'string') as OptionType;
      return {
        key,
        type,
        description: o.description ?? '',
        default: o.default === undefined || o.default === null ? '' : String(o.default),
        current: o.value === undefined || o.value === null ? '' : String(o.value),
        source: o.source,
      };
    });
}

// validate returns the error of a value for a field, or "".
export function validate(f: ConfigField, v: string): string {
  if (v === '') return '';
  switch (f.type) {
    case 'int':
      return /^[+-]?\d+$/.test(v.trim()) ? '' : 'must be a whole number';
    case 'float':
      return v.trim() !== '' && Number.isFinite(Number(v)) ? '' : 'must be a number';
    case 'boolean':
      return v === 'true' || v === 'false' ? '' : 'must be true or false';
    default:
      return '';
  }
}

export function typed(f: ConfigField, v: string): unknown {
  switch (f.type) {
    case 'int':
      return parseInt(v, 10);
    case 'float':
      return Number(v);
    case 'boolean':
      return v === 'true';
    default:
      return v;
  }
}

export interface ConfigDiffRow {
  key: string;
  from: string;
  to: string; // "" with reset: back to the default
  reset: boolean;
}

export interface ConfigPlan {
  rows: ConfigDiffRow[];
  errors: Record<string, string>;
  change: { set?: Record<string, unknown>; reset?: string[] };
}

// plan compares edited values with the current ones: a changed value is
// set (typed), a value emptied is reset to its default. Unchanged keys are
// left out, so a save touches only what the user changed.
export function plan(fields: ConfigField[], edited: Record<string, string>): ConfigPlan {
  const rows: ConfigDiffRow[] = [];
  const errors: Record<string, string> = {};
  const set: Record<string, unknown> = {};
  const reset: string[] = [];
  for (const f of fields) {
    if (!(f.key in edited)) continue;
    const v = edited[f.key];
    if (v === f.current) continue;
    const err = validate(f, v);
    if (err) {
      errors[f.key] = err;
      continue;
    }
    if (v === '') {
      if (f.source !== 'user') continue;
      reset.push(f.key);
      rows.push({ key: f.key, from: f.current, to: f.default, reset: true });
    } else {
      set[f.key] = typed(f, v);
      rows.push({ key: f.key, from: f.current, to: v, reset: false });
    }
  }
  const change: ConfigPlan['change'] = {};
  if (Object.keys(set).length) change.set = set;
  if (reset.length) change.reset = reset;
  return { rows, errors, change };
}

// shown is a value as the form shows it (secrets masked).
export function shown(f: ConfigField, v: string): string {
  return f.type === 'secret' && v ? '••••••' : v;
}
