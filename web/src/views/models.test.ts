import { describe, expect, it } from 'vitest';
import { statusText } from './models';

describe('a model\'s status in the table', () => {
  const m = { uuid: 'M', name: 'prod', owner: 'ann', status: 'available' };
  it('says a migration under way, and nothing of one that ended', () => {
    expect(statusText({ ...m, 'migration-phase': 'QUIESCE' })).toBe('available (migrating: QUIESCE)');
    expect(statusText({ ...m, 'migration-phase': 'DONE' })).toBe('available');
    expect(statusText(m)).toBe('available');
  });
  it('says the controller is lost', () => {
    expect(statusText({ ...m, 'controller-status': 'disconnected' })).toBe('available (controller disconnected)');
  });
});
