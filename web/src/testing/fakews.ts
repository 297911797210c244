// FakeWS stands in for the browser's WebSocket in the tests: every socket
// opened is kept in FakeWS.all, send delivers a frame to the page, and
// close drops the connection as a server would.
export class FakeWS {
  static all: FakeWS[] = [];
  onopen: ((e: unknown) => void) | null = null;
  onmessage: ((e: { data: string }) => void) | null = null;
  onclose: ((e: unknown) => void) | null = null;
  onerror: ((e: unknown) => void) | null = null;
  closed = false;
  constructor(readonly url: string) {
    FakeWS.all.push(this);
  }
  send(f: unknown) {
    this.onmessage?.({ data: JSON.stringify(f) });
  }
  close() {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.({});
  }
}
