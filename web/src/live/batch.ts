// nextFrame runs fn at the next animation frame, or after 100 ms if no
// frame comes first: a hidden tab gets no animation frames, and its queue
// must not grow for as long as it stays hidden.
export function nextFrame(fn: () => void): void {
  let done = false;
  const once = () => {
    if (done) return;
    done = true;
    fn();
  };
  if (typeof requestAnimationFrame === 'function') requestAnimationFrame(once);
  setTimeout(once, 100);
}

// FrameBatcher queues frames and applies them together once per animation
// frame, so a burst of deltas costs one render.
export class FrameBatcher<F> {
  private queue: F[] = [];
  private scheduled = false;

  constructor(
    private readonly apply: (frames: F[]) => void,
    private readonly schedule: (fn: () => void) => void = nextFrame,
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
