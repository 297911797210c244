// Removes what vite build writes into dist, keeping files other helpers own
// there (dist/source.sha256, dist/*.go): the build then leaves no stale
// hashed chunks behind.
import { rmSync, existsSync } from 'node:fs';

const out = process.env.DROVER_WEB_OUT ?? 'dist';
for (const p of [`${out}/assets`, `${out}/index.html`]) {
  if (existsSync(p)) rmSync(p, { recursive: true, force: true });
}
