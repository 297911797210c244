// LiveSocket keeps one websocket open to a stream of index-numbered frames
// and resumes it after a drop with since=<the last index received>, as the
// Go client's Watcher does: backoff doubling from BACKOFF_MIN to
// BACKOFF_MAX with jitter, reset once a connection has delivered a frame.
// The server answers a resume with the missing deltas or a reset, so the
// consumer sees one stream.

export type ConnState = 'connecting' | 'live' | 'reconnecting' | 'stale';

export const BACKOFF_MIN = 250;
export const BACKOFF_MAX = 10_000;
// STALE_AFTER: a drop not repaired within this long marks the data stale.
export const STALE_AFTER = 5_000;
// SILENCE_LIMIT: servers send a keepalive after 30 s of silence, so a
// stream silent for longer is dead even when the socket has not noticed.
export const SILENCE_LIMIT = 75_000;

export interface Frame {
  type: string;
  index: number;
  mark?: string;
}

type Timer = ReturnType<typeof setTimeout>;

export interface SocketDeps {
  WebSocket: new (url: string) => WebSocket;
  setTimeout: (fn: () => void, ms: number) => Timer;
  clearTimeout: (t: Timer) => void;
  random: () => number;
  now: () => number;
}

export const browserDeps = (): SocketDeps => ({
  WebSocket: globalThis.WebSocket,
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (t) => globalThis.clearTimeout(t),
  random: Math.random,
  now: Date.now,
});

export interface SocketEvents<F extends Frame> {
  // url is the stream's address resuming after since (0: from a reset)
  // and mark (the server's name of that index, model watches only).
  url: (since: number, mark: string) => string;
  frame: (f: F) => void;
  state: (s: ConnState, staleSince: number | null) => void;
}

// nextBackoff is the delay before attempt n (0-based): the doubled base,
// of which a random half is taken away so reconnecting tabs spread out.
export function nextBackoff(attempt: number, random: () => number): number {
  const base = Math.min(BACKOFF_MAX, BACKOFF_MIN * 2 ** Math.min(attempt, 20));
  return Math.round(base / 2 + (random() * base) / 2);
}

export class LiveSocket<F extends Frame> {
  index = 0;
  mark = '';
  state: ConnState = 'connecting';
  staleSince: number | null = null;
  private ws: WebSocket | null = null;
  private attempt = 0;
  private retryTimer: Timer | null = null;
  private staleTimer: Timer | null = null;
  private silenceTimer: Timer | null = null;
  private closed = false;
  private droppedAt: number | null = null;

  constructor(
    private readonly ev: SocketEvents<F>,
    private readonly deps: SocketDeps = browserDeps(),
  ) {}

  start(): void {
    this.connect();
  }

  // drop closes the current connection as a failure would: the socket
  // reconnects (tests and the "reconnect" control use it).
  drop(): void {
    this.ws?.close();
  }

  close(): void {
    this.closed = true;
    for (const t of [this.retryTimer, this.staleTimer, this.silenceTimer]) if (t) this.deps.clearTimeout(t);
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
      ws.close();
    }
  }

  private setState(s: ConnState): void {
    if (s === this.state && s !== 'stale') return;
    this.state = s;
    this.ev.state(s, this.staleSince);
  }

  private connect(): void {
    if (this.closed) return;
    this.retryTimer = null;
    const ws = new this.deps.WebSocket(this.ev.url(this.index, this.mark));
    this.ws = ws;
    ws.onmessage = (m: MessageEvent) => {
      if (this.ws !== ws) return;
      let f: F;
      try {
        f = JSON.parse(String(m.data)) as F;
      } catch {
        ws.close(); // a frame we cannot read: resume from the last good one
        return;
      }
      this.armSilence();
      if (f.type === 'reset' || f.index >= this.index) {
        this.index = f.index;
        if (f.mark !== undefined) this.mark = f.mark;
      }
      if (this.state !== 'live') {
        this.attempt = 0;
        this.droppedAt = null;
        this.staleSince = null;
        if (this.staleTimer) this.deps.clearTimeout(this.staleTimer);
        this.staleTimer = null;
        this.setState('live');
      }
      this.ev.frame(f);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.lost();
    };
    ws.onerror = () => {
      // onclose follows and handles it
    };
    this.armSilence();
  }

  private armSilence(): void {
    if (this.silenceTimer) this.deps.clearTimeout(this.silenceTimer);
    this.silenceTimer = this.deps.setTimeout(() => this.ws?.close(), SILENCE_LIMIT);
  }

  private lost(): void {
    if (this.closed) return;
    if (this.droppedAt === null) {
      this.droppedAt = this.deps.now();
      const wait = STALE_AFTER;
      this.staleTimer = this.deps.setTimeout(() => {
        this.staleTimer = null;
        if (this.state === 'live') return;
        this.staleSince = this.droppedAt;
        this.setState('stale');
      }, wait);
    }
    if (this.state !== 'stale') this.setState('reconnecting');
    const delay = nextBackoff(this.attempt++, this.deps.random);
    this.retryTimer = this.deps.setTimeout(() => this.connect(), delay);
  }
}
