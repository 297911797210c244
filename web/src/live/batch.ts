// FrameBatcher queues frames and applies them together once per animation
// frame, so a burst of deltas costs one render.
export class FrameBatcher<F> {
  private queue: F[] = [];
  private scheduled = false;

  constructor(
    private readonly apply: (frames: F[]) => void,
    private readonly schedule: (fn: () => void) => void = (fn) =>
      typeof requestAnimationFrame === 'function' ? requestAnimationFrame(() => fn()) : setTimeout(fn, 16),
  ) {}

  push(f: F): void {
    this.queue.push(f);
    if (this.scheduled) return;
    this.scheduled = true;
    this.schedule(() => this.flush());
  }

  flush(): void {
    this.scheduled = false;
    const q = this.queue;
    if (!q.length) return;
    this.queue = [];
    this.apply(q);
  }
}
