import { describe, expect, it } from 'vitest';
import { health } from './controllers';

describe('a controller\'s health', () => {
  const node = (id: string, unreachable = false) => ({ id, 'api-address': `${id}:1`, voter: true, leader: false, unreachable });

  it('is healthy with every node reachable, the version aside', () => {
    expect(health({ uuid: 'u', name: 'east', status: 'connected', health: { version: '0.1.0', nodes: [node('a'), node('b')] } })).toBe('healthy');
  });

  it('names unreachable nodes and the hub\'s other notes', () => {
    const h = health({
      uuid: 'u', name: 'east', status: 'connected',
      health: { version: '0.1.0', nodes: [node('a'), node('b', true), node('c')], 'models-not-indexed': 2 },
    });
    expect(h).toBe('1 of 3 nodes unreachable; models-not-indexed: 2');
  });

  it('says nothing good of a disconnected controller', () => {
    expect(health({ uuid: 'u', name: 'east', status: 'disconnected', health: { error: 'dial: refused' } })).toBe('dial: refused');
  });
});
