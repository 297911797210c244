// An action form from the action's parameters, a JSON schema as the charm's
// actions.yaml declares it (`drover actions APP --schema`): one field per
// property, typed by its "type" (string, integer, number, boolean, array,
// object; enum as a choice), required ones marked. Values are edited as
// strings and turned into the params object RunActionRequest carries.

export interface ActionSpec {
  description: string;
  params: Schema;
}

export interface Schema {
  type?: string | string[];
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  additionalProperties?: boolean;
}

export interface ActionField {
  name: string;
  type: string;
  description: string;
  required: boolean;
  choices: string[] | null;
  default: string;
  minimum?: number;
  maximum?: number;
}

// specsFromYAML reads actions.yaml parsed as a value: each action's
// description and params (a JSON schema's properties), as charm.ParseActions
// does.
export function specsFromDoc(doc: unknown): Record<string, ActionSpec> {
  const out: Record<string, ActionSpec> = {};
  if (!doc || typeof doc !== 'object') return out;
  for (const name of Object.keys(doc as object).sort()) {
    const a = (doc as Record<string, any>)[name] ?? {};
    out[name] = {
      description: typeof a.description === 'string' ? a.description : '',
      params: {
        type: 'object',
        properties: a.params ?? {},
        required: Array.isArray(a.required) ? a.required : [],
        additionalProperties: a.additionalProperties,
      },
    };
  }
  return out;
}

export function actionFields(s: Schema): ActionField[] {
  const req = new Set(s.required ?? []);
  return Object.keys(s.properties ?? {})
    .sort()
    .map((name) => {
      const p = s.properties![name] ?? {};
      const type = Array.isArray(p.type) ? p.type[0] : p.type ?? 'string';
      return {
        name,
        type,
        description: p.description ?? '',
        required: req.has(name),
        choices: p.enum ? p.enum.map(String) : null,
        default: p.default === undefined ? '' : typeof p.default === 'object' ? JSON.stringify(p.default) : String(p.default),
        minimum: p.minimum,
        maximum: p.maximum,
      };
    });
}

export interface ActionParams {
  params: Record<string, unknown>;
  errors: Record<string, string>;
}

function parseOne(f: ActionField, v: string): [unknown, string] {
  if (f.choices && !f.choices.includes(v)) return [undefined, `must be one of ${f.choices.join(', ')}`];
  switch (f.type) {
    case 'integer': {
      if (!/^[+-]?\d+$/.test(v.trim())) return [undefined, 'must be a whole number'];
      const n = parseInt(v, 10);
      return rangeCheck(f, n);
    }
    case 'number': {
      const n = Number(v);
      if (v.trim() === '' || !Number.isFinite(n)) return [undefined, 'must be a number'];
      return rangeCheck(f, n);
    }
    case 'boolean':
      if (v !== 'true' && v !== 'false') return [undefined, 'must be true or false'];
      return [v === 'true', ''];
    case 'array':
    case 'object': {
      try {
        const x = JSON.parse(v);
        if (f.type === 'array' ? !Array.isArray(x) : x === null || typeof x !== 'object' || Array.isArray(x)) {
          return [undefined, `must be a JSON ${f.type}`];
        }
        return [x, ''];
      } catch {
        return [undefined, `must be a JSON ${f.type}`];
      }
    }
    default:
      return [v, ''];
  }
}

function rangeCheck(f: ActionField, n: number): [unknown, string] {
  if (f.minimum !== undefined && n < f.minimum) return [undefined, `must be at least ${f.minimum}`];
  if (f.maximum !== undefined && n > f.maximum) return [undefined, `must be at most ${f.maximum}`];
  return [n, ''];
}

// actionParams checks the edited values: a required field left empty is
// an error; an optional one empty is left out (the charm's default
// applies).
export function actionParams(fields: ActionField[], values: Record<string, string>): ActionParams {
  const params: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const f of fields) {
    const v = values[f.name] ?? '';
    if (v === '') {
      if (f.required) errors[f.name] = 'required';
      continue;
    }
    const [x, err] = parseOne(f, v);
    if (err) errors[f.name] = err;
    else params[f.name] = x;
  }
  return { params, errors };
}
