import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ErrorBox } from '../components';
import { nextFrame } from '../live/batch';

// DebugLog tails a model's debug-log (GET /v1/models/{m}/logs?since=N&
// follow=true: newline-delimited api.LogRecord values), keeping the last
// KEEP records, with the filters of `drover debug-log` applied here:
// entity, lowest level, module and text. A dropped stream resumes after
// the last sequence number read.

interface LogRecord {
  seq: number;
  entity: string;
  time: string;
  level: string;
  module: string;
  message: string;
}

const KEEP = 2000;
const LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'];

export function levelAtLeast(level: string, min: string): boolean {
  if (!min) return true;
  const i = LEVELS.indexOf(level.toUpperCase());
  return i < 0 || i >= LEVELS.indexOf(min);
}

export function DebugLog({ uuid }: { uuid: string }) {
  const [recs, setRecs] = useState<LogRecord[]>([]);
  const [err, setErr] = useState<unknown>(null);
  const [entity, setEntity] = useState('');
  const [level, setLevel] = useState('');
  const [text, setText] = useState('');
  const [paused, setPaused] = useState(false);
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const ac = new AbortController();
    let since = 0;
    let backoff = 250;
    let pending: LogRecord[] = [];
    let flush = false;
    const push = (r: LogRecord) => {
      pending.push(r);
      if (flush) return;
      flush = true;
      nextFrame(() => {
        flush = false;
        if (ac.signal.aborted) return;
        const add = pending;
        pending = [];
        setRecs((old) => {
          const next = old.concat(add);
          return next.length > KEEP ? next.slice(next.length - KEEP) : next;
        });
      });
    };
    const run = async () => {
      while (!ac.signal.aborted) {
        try {
          const resp = await fetch(`/v1/models/${uuid}/logs?since=${since}&follow=true`, { credentials: 'same-origin', signal: ac.signal });
          if (!resp.ok || !resp.body) {
            const body = await resp.json().catch(() => ({}));
            throw new Error(body.message ?? `HTTP ${resp.status}`);
          }
          setErr(null);
          backoff = 250;
          const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
          let buf = '';
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += value;
            let nl: number;
            while ((nl = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              if (!line) continue;
              const r = JSON.parse(line) as LogRecord;
              since = Math.max(since, r.seq);
              push(r);
            }
          }
        } catch (e) {
          if (ac.signal.aborted) return;
          setErr(e);
        }
        await new Promise((res) => setTimeout(res, backoff));
        backoff = Math.min(backoff * 2, 10_000);
      }
    };
    void run();
    return () => ac.abort();
  }, [uuid]);
  const shown = useMemo(
    () =>
      recs.filter(
        (r) =>
          (!entity || r.entity.includes(entity)) &&
          levelAtLeast(r.level, level) &&
          (!text || `${r.module} ${r.message}`.toLowerCase().includes(text.toLowerCase())),
      ),
    [recs, entity, level, text],
  );
  const [frozen, setFrozen] = useState<LogRecord[]>([]);
  useEffect(() => {
    if (!paused) setFrozen(shown);
  }, [shown, paused]);
  useEffect(() => {
    if (!paused && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [frozen]);
  const view = frozen.slice(-500);
  return (
    <section aria-label="Debug log">
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Entity
          <input value={entity} placeholder="unit-web-0" onInput={(e) => setEntity(e.currentTarget.value)} data-testid="log-entity" />
        </label>
        <label>
          Level
          <select value={level} onChange={(e) => setLevel(e.currentTarget.value)} data-testid="log-level">
            <option value="">all</option>
            {LEVELS.map((l) => (
              <option value={l}>{l}</option>
            ))}
          </select>
        </label>
        <label>
          Text
          <input type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} data-testid="log-text" />
        </label>
        <button type="button" onClick={() => setPaused(!paused)} aria-pressed={paused} data-testid="log-pause">
          {paused ? 'Resume' : 'Pause'}
        </button>
      </form>
      <ErrorBox error={err} />
      <div class="log" ref={box} role="log" aria-live="off" tabIndex={0} data-testid="debug-log">
        {view.map((r) => (
          <div class={`log-line level-${r.level.toLowerCase()}`} data-testid="log-line" key={r.seq}>
            <time>{r.time.slice(11, 23)}</time> <span class="ent">{r.entity}</span> <span class="lvl">{r.level}</span> <span class="mod">{r.module}</span>{' '}
            {r.message}
          </div>
        ))}
        {!view.length && <p class="muted">No log records yet.</p>}
      </div>
    </section>
  );
}
