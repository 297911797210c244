import type { ComponentChildren, ComponentType } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { errorText } from './api';

// Shared pieces of the views.

export function Status({ value }: { value: string }) {
  const v = value || 'unknown';
  return <span class={`status status-${v.replace(/[^a-z-]/g, '')}`}>{v}</span>;
}

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="error" role="alert" data-testid="error">
      {errorText(error)}
    </p>
  );
}

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p class="muted" role="status" aria-live="polite">
      {what}…
    </p>
  );
}

// useAsync runs load when deps change and keeps its result; reload runs it
// again (after a change the view made).
export function useAsync<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [gen, setGen] = useState(0);
  useEffect(() => {
    const ac = new AbortController();
    setState((s) => ({ ...s, loading: true, error: undefined }));
    load(ac.signal).then(
      (data) => !ac.signal.aborted && setState({ data, loading: false }),
      (error) => !ac.signal.aborted && setState({ error, loading: false }),
    );
    return () => ac.abort();
  }, [...deps, gen]);
  return { ...state, reload: () => setGen((g) => g + 1) };
}

// lazy loads a view's module on first use, so heavy views are their own
// chunks.
export function lazy<P extends object>(load: () => Promise<{ default: ComponentType<P> }>): ComponentType<P> {
  let cached: ComponentType<P> | null = null;
  return function Lazy(props: P) {
    const [C, setC] = useState<ComponentType<P> | null>(() => cached);
    const [err, setErr] = useState<unknown>(null);
    useEffect(() => {
      if (C) return;
      load().then(
        (m) => {
          cached = m.default;
          setC(() => m.default);
        },
        setErr,
      );
    }, []);
    if (err) return <ErrorBox error={err} />;
    return C ? <C {...props} /> : <Loading />;
  };
}

// VirtualTable renders only the rows in view (plus a margin) once a table
// has more than VIRTUAL_AFTER rows; smaller tables render every row. Rows
// have a fixed height. The table says how many rows it has in data-rows.
export const VIRTUAL_AFTER = 200;
const ROW_H = 34;
const OVERSCAN = 10;

export interface Column<T> {
  title: string;
  cell: (row: T) => ComponentChildren;
  class?: string;
}

export function VirtualTable<T>(props: {
  rows: T[];
  columns: Column<T>[];
  rowKey: (row: T) => string;
  rowTestId: string;
  testId: string;
  caption: string;
  onRow?: (row: T) => void;
  rowAttrs?: (row: T) => Record<string, string>;
  onPaint?: () => void;
}) {
  const { rows, columns } = props;
  const box = useRef<HTMLDivElement>(null);
  const [range, setRange] = useState<[number, number]>([0, 60]);
  const virtual = rows.length > VIRTUAL_AFTER;
  const measure = () => {
    const el = box.current;
    if (!el) return;
    const first = Math.max(0, Math.floor(el.scrollTop / ROW_H) - OVERSCAN);
    const count = Math.ceil((el.clientHeight || 600) / ROW_H) + 2 * OVERSCAN;
    setRange((r) => (r[0] === first && r[1] === first + count ? r : [first, first + count]));
  };
  useLayoutEffect(measure, [rows.length]);
  useEffect(() => {
    if (rows.length) props.onPaint?.();
  }, [rows.length > 0]);
  const [a, b] = virtual ? [Math.min(range[0], rows.length), Math.min(range[1], rows.length)] : [0, rows.length];
  const shown = rows.slice(a, b);
  return (
    <div class={virtual ? 'table-box virtual' : 'table-box'} ref={box} onScroll={virtual ? measure : undefined}>
      <table data-testid={props.testId} data-rows={String(rows.length)}>
        <caption class="sr-only">{props.caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" class={c.class}>
                {c.title}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {virtual && a > 0 && <tr aria-hidden="true" style={{ height: `${a * ROW_H}px` }} />}
          {shown.map((r) => (
            <tr
              key={props.rowKey(r)}
              data-testid={props.rowTestId}
              data-key={props.rowKey(r)}
              class={props.onRow ? 'clickable' : undefined}
              onClick={props.onRow ? () => props.onRow!(r) : undefined}
              {...(props.rowAttrs?.(r) ?? {})}
            >
              {columns.map((c) => (
                <td class={c.class}>{c.cell(r)}</td>
              ))}
            </tr>
          ))}
          {virtual && b < rows.length && <tr aria-hidden="true" style={{ height: `${(rows.length - b) * ROW_H}px` }} />}
        </tbody>
      </table>
      {!rows.length && <p class="muted">Nothing to show.</p>}
    </div>
  );
}

// Drawer is a side panel that takes focus when it opens, keeps Tab inside,
// closes on Escape and gives focus back to what opened it.
export function Drawer(props: { title: string; onClose: () => void; children: ComponentChildren; testId?: string }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    ref.current?.focus();
    return () => before?.focus?.();
  }, []);
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      props.onClose();
      return;
    }
    if (e.key !== 'Tab' || !ref.current) return;
    const f = ref.current.querySelectorAll<HTMLElement>('a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])');
    if (!f.length) return;
    const first = f[0];
    const last = f[f.length - 1];
    if (e.shiftKey && document.activeElement === first) {
      e.preventDefault();
      last.focus();
    } else if (!e.shiftKey && document.activeElement === last) {
      e.preventDefault();
      first.focus();
    }
  };
  return (
    <div class="drawer-backdrop" onClick={(e) => e.target === e.currentTarget && props.onClose()}>
      <div class="drawer" role="dialog" aria-modal="true" aria-label={props.title} tabIndex={-1} ref={ref} onKeyDown={onKey} data-testid={props.testId ?? 'drawer'}>
        <header class="drawer-head">
          <h2>{props.title}</h2>
          <button type="button" onClick={props.onClose} data-testid="drawer-close" aria-label="Close">
            ×
          </button>
        </header>
        <div class="drawer-body">{props.children}</div>
      </div>
    </div>
  );
}

export function Field(props: { label: string; id: string; hint?: string; error?: string; children: ComponentChildren }) {
  return (
    <div class={props.error ? 'field invalid' : 'field'}>
      <label for={props.id}>{props.label}</label>
      {props.children}
      {props.hint && <small class="muted">{props.hint}</small>}
      {props.error && (
        <small class="error" role="alert">
          {props.error}
        </small>
      )}
    </div>
  );
}

export function Tabs(props: { tabs: [string, string][]; current: string; href: (id: string) => string }) {
  return (
    <nav class="tabs" aria-label="Sections">
      {props.tabs.map(([id, label]) => (
        <a href={props.href(id)} aria-current={id === props.current ? 'page' : undefined} data-testid={`tab-${id}`}>
          {label}
        </a>
      ))}
    </nav>
  );
}
