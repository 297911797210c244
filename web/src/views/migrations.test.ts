import { describe, expect, it } from 'vitest';
import { reloadKey } from './migrations';

describe('a migration page', () => {
  it('reloads at every phase the model\'s row carries, and when the model moves', () => {
    const row = { uuid: 'M', name: 'prod', owner: 'ann', controller: 'west', status: 'available', 'migration-phase': 'SUCCESS' };
    const keys = new Set([
      reloadKey(row),
      reloadKey({ ...row, 'migration-phase': 'LOGTRANSFER' }),
      reloadKey({ ...row, 'migration-phase': 'DONE' }),
      reloadKey({ ...row, controller: 'east' }),
    ]);
    expect(keys.size).toBe(4);
    expect(reloadKey({ ...row })).toBe(reloadKey(row));
  });
});
