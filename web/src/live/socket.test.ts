import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BACKOFF_MAX, BACKOFF_MIN, LiveSocket, nextBackoff, STALE_AFTER, type ConnState, type Frame } from './socket';
import { FrameBatcher } from './batch';
import { FakeWS } from '../testing/fakews';


function setup() {
  const frames: Frame[] = [];
  const states: [ConnState, number | null][] = [];
  const sock = new LiveSocket<Frame>(
    {
      url: (since, mark) => `wss://h/v1/watch?since=${since}${mark ? `&mark=${mark}` : ''}`,
      frame: (f) => frames.push(f),
      state: (s, since) => states.push([s, since]),
    },
    {
      WebSocket: FakeWS as unknown as new (u: string) => WebSocket,
      setTimeout: (fn, ms) => setTimeout(fn, ms),
      clearTimeout: (t) => clearTimeout(t),
      random: () => 1,
      now: () => Date.now(),
    },
  );
  return { sock, frames, states };
}

describe('LiveSocket', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(0);
    FakeWS.all = [];
  });
  afterEach(() => vi.useRealTimers());

  it('starts from since=0 and goes live on the first frame', () => {
    const { sock, frames, states } = setup();
    sock.start();
    expect(FakeWS.all[0].url).toBe('wss://h/v1/watch?since=0');
    FakeWS.all[0].send({ type: 'reset', index: 4 });
    expect(frames).toHaveLength(1);
    expect(states.at(-1)).toEqual(['live', null]);
    sock.close();
  });

  it('resumes after a drop with since and mark of the last frame, after a backoff', () => {
    const { sock, states } = setup();
    sock.start();
    FakeWS.all[0].send({ type: 'reset', index: 4, mark: 'm4' });
    FakeWS.all[0].send({ type: 'delta', index: 9, mark: 'm9' });
    FakeWS.all[0].close();
    expect(states.at(-1)![0]).toBe('reconnecting');
    expect(FakeWS.all).toHaveLength(1);
    vi.advanceTimersByTime(BACKOFF_MIN - 1);
    expect(FakeWS.all).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(FakeWS.all[1].url).toBe('wss://h/v1/watch?since=9&mark=m9');
    FakeWS.all[1].send({ type: 'delta', index: 10 });
    expect(states.at(-1)![0]).toBe('live');
    sock.close();
  });

  it('keepalives advance since; an older frame does not move it back', () => {
    const { sock } = setup();
    sock.start();
    FakeWS.all[0].send({ type: 'reset', index: 4 });
    FakeWS.all[0].send({ type: 'keepalive', index: 12 });
    FakeWS.all[0].send({ type: 'delta', index: 7 });
    expect(sock.index).toBe(12);
    FakeWS.all[0].send({ type: 'reset', index: 2 });
    expect(sock.index).toBe(2);
    sock.close();
  });

  it('backs off exponentially while the server stays away, capped, then marks the data stale', () => {
    const { sock, states } = setup();
    sock.start();
    FakeWS.all[0].send({ type: 'reset', index: 1 });
    vi.setSystemTime(1000);
    FakeWS.all[0].close();
    const delays: number[] = [];
    for (let i = 0; i < 8; i++) {
      const n = FakeWS.all.length;
      let waited = 0;
      while (FakeWS.all.length === n) {
        vi.advanceTimersByTime(1);
        waited++;
      }
      delays.push(waited);
      FakeWS.all.at(-1)!.close();
    }
    expect(delays.slice(0, 4)).toEqual([BACKOFF_MIN, BACKOFF_MIN * 2, BACKOFF_MIN * 4, BACKOFF_MIN * 8]);
    expect(Math.max(...delays)).toBeLessThanOrEqual(BACKOFF_MAX);
    expect(states.some(([s, since]) => s === 'stale' && since === 1000)).toBe(true);
    // Back: live again, the stale mark cleared.
    const n = FakeWS.all.length;
    while (FakeWS.all.length === n) vi.advanceTimersByTime(1);
    FakeWS.all.at(-1)!.send({ type: 'delta', index: 2 });
    expect(states.at(-1)).toEqual(['live', null]);
    sock.close();
  });

  it('a drop repaired within STALE_AFTER never shows stale', () => {
    const { sock, states } = setup();
    sock.start();
    FakeWS.all[0].send({ type: 'reset', index: 1 });
    FakeWS.all[0].close();
    vi.advanceTimersByTime(BACKOFF_MIN);
    FakeWS.all[1].send({ type: 'delta', index: 2 });
    vi.advanceTimersByTime(STALE_AFTER * 2);
    expect(states.map((s) => s[0])).not.toContain('stale');
    sock.close();
  });

  it('after close nothing reconnects', () => {
    const { sock } = setup();
    sock.start();
    sock.close();
    vi.advanceTimersByTime(60_000);
    expect(FakeWS.all).toHaveLength(1);
  });

  it('jitter takes up to half the delay away', () => {
    expect(nextBackoff(0, () => 0)).toBe(BACKOFF_MIN / 2);
    expect(nextBackoff(0, () => 1)).toBe(BACKOFF_MIN);
    expect(nextBackoff(30, () => 1)).toBe(BACKOFF_MAX);
  });
});

describe('FrameBatcher', () => {
  it('applies a burst of frames once, in order', () => {
    let run: (() => void) | null = null;
    const applied: number[][] = [];
    const b = new FrameBatcher<number>((fs) => applied.push(fs), (fn) => {
      run = fn;
    });
    for (let i = 0; i < 100; i++) b.push(i);
    expect(applied).toHaveLength(0);
    run!();
    expect(applied).toHaveLength(1);
    expect(applied[0]).toHaveLength(100);
    expect(applied[0][99]).toBe(99);
  });
});
