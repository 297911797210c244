import { describe, expect, it } from 'vitest';
import { configFields, plan, validate } from './config';
import { actionFields, actionParams, specsFromDoc } from './action';

const cfg = {
  application: 'db', charm: 'pg',
  settings: {
    port: { type: 'int', default: 5432, value: 5432, source: 'default' },
    ratio: { type: 'float', default: 0.5, source: 'default' },
    debug: { type: 'boolean', default: false, value: true, source: 'user' },
    name: { type: 'string', default: 'x', value: 'y', source: 'user' },
    password: { type: 'secret', source: 'unset' },
  },
};

describe('config form', () => {
  it('has one field per option, sorted, typed', () => {
    const f = configFields(cfg);
    expect(f.map((x) => x.key)).toEqual(['debug', 'name', 'password', 'port', 'ratio']);
    expect(f.find((x) => x.key === 'port')!.current).toBe('5432');
    expect(f.find((x) => x.key === 'password')!.type).toBe('secret');
  });

  it('validates by type', () => {
    const f = configFields(cfg);
    const by = (k: string) => f.find((x) => x.key === k)!;
    expect(validate(by('port'), '12a')).toMatch(/whole/);
    expect(validate(by('port'), '-3')).toBe('');
    expect(validate(by('ratio'), 'abc')).toMatch(/number/);
    expect(validate(by('ratio'), '1e3')).toBe('');
    expect(validate(by('debug'), 'yes')).toMatch(/true or false/);
  });

  it('the diff holds only changed keys: typed sets and resets of user values', () => {
    const f = configFields(cfg);
    const p = plan(f, { port: '6000', debug: 'true', name: '', ratio: '0.75', password: 's3cret' });
    expect(p.errors).toEqual({});
    expect(p.change).toEqual({ set: { port: 6000, ratio: 0.75, password: 's3cret' }, reset: ['name'] });
    expect(p.rows.map((r) => r.key)).toEqual(['name', 'password', 'port', 'ratio']);
    expect(p.rows.find((r) => r.key === 'name')).toEqual({ key: 'name', from: 'y', to: 'x', reset: true });
  });

  it('an invalid value is an error and is not sent', () => {
    const p = plan(configFields(cfg), { port: 'many' });
    expect(p.errors.port).toBeTruthy();
    expect(p.change).toEqual({});
  });
});

describe('action form', () => {
  const doc = {
    backup: {
      description: 'Back up.',
      params: {
        target: { type: 'string', description: 'where' },
        compress: { type: 'boolean', default: true },
        level: { type: 'integer', minimum: 1, maximum: 9 },
        mode: { type: 'string', enum: ['full', 'incr'] },
        tags: { type: 'array' },
      },
      required: ['target'],
    },
    noop: {},
  };

  it('reads actions and their params schema', () => {
    const specs = specsFromDoc(doc);
    expect(Object.keys(specs)).toEqual(['backup', 'noop']);
    const f = actionFields(specs.backup.params);
    expect(f.map((x) => x.name)).toEqual(['compress', 'level', 'mode', 'tags', 'target']);
    expect(f.find((x) => x.name === 'target')!.required).toBe(true);
    expect(f.find((x) => x.name === 'mode')!.choices).toEqual(['full', 'incr']);
    expect(actionFields(specs.noop.params)).toEqual([]);
  });

  it('validates and types the params', () => {
    const f = actionFields(specsFromDoc(doc).backup.params);
    expect(actionParams(f, {}).errors).toEqual({ target: 'required' });
    const bad = actionParams(f, { target: 't', level: '12', mode: 'other', tags: '{}', compress: 'maybe' });
    expect(Object.keys(bad.errors).sort()).toEqual(['compress', 'level', 'mode', 'tags']);
    const ok = actionParams(f, { target: 't', level: '3', mode: 'full', tags: '["a"]', compress: 'false' });
    expect(ok.errors).toEqual({});
    expect(ok.params).toEqual({ target: 't', level: 3, mode: 'full', tags: ['a'], compress: false });
  });
});
